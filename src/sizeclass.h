/* sizeclass.h: size <-> class (sizeclass.c), and the table that malloc's fastpath reads to
 * find a size's stack: sm_stack_at[(size - 1) >> 4], the offset of the class's allocation
 * stack in struct tcache (0 until init). */
#ifndef SM_SIZECLASS_H
#define SM_SIZECLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "types.h"

#pragma GCC visibility push(hidden)

void sm_sizeclass_init(bool counted);          /* counted: SLUBMALLOC_STATS=1 */
unsigned sm_size_to_class(size_t size);       /* computed, no table: any time */
unsigned sm_class_size(unsigned cls);
unsigned sm_class_for_align(size_t size, size_t align); /* NCLASS when none fits */

/* (size-1)>>4 -> offsetof(tcache, alloc_stack[class]) */
extern uint16_t sm_stack_at[CLASS_INDEX_MAX];
_Static_assert(offsetof(struct tcache, alloc_stack) + (NCLASS + 1) * sizeof(struct stack) <=
		       UINT16_MAX,
	       "sm_stack_at[] holds 16-bit offsets");

/* The calling thread's malloc stack for size bytes, 1 <= size <= MAX_SMALL (size - 1 <
 * MAX_SMALL: one compare rules out 0 and the large sizes). */
static inline struct stack *alloc_stack_for(size_t size)
{
	return (struct stack *)(void *)((char *)sm_tcp + sm_stack_at[(size - 1) >> 4]);
}

#pragma GCC visibility pop

#endif
