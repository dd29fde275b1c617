/* alloc.h: the slow halves of the malloc family (alloc.c), and the sized free's size rule. */
#ifndef SM_ALLOC_H
#define SM_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

/* form (enum form): the call's, for SLUBMALLOC_DEBUG's M; FORM_C for the C calls */
void *sm_alloc_slow(size_t size, unsigned form);
void *sm_alloc_swap(struct stack *b, size_t size, unsigned form); /* malloc's stack b is empty */
void *sm_alloc_swap_zero(struct stack *b, size_t size, bool *zero); /* calloc's; *zero: no memset */
void sm_free_slow(void *p, unsigned form);
void *sm_calloc(size_t n, size_t size);
void *sm_realloc(void *p, size_t size);
void *sm_memalign(size_t align, size_t size);
size_t sm_usable_size(const void *p);
void sm_free_sized(void *p, size_t size, bool lower, unsigned form);
int sm_posix_memalign(void **out, size_t align, size_t size);
void *sm_valloc(size_t size);
void *sm_pvalloc(size_t size);
void *sm_reallocarray(void *p, size_t n, size_t size);
SM_COLD void *sm_new_failed(size_t n, size_t align, bool nothrow,
			    unsigned form); /* new-handler, bad_alloc */

/* Whether a sized free of size bytes fits a block of have bytes from below: malloc puts a size
 * in the smallest class that holds it, classes are at most twice apart, and realloc keeps a
 * block it shrinks to more than half. So a size of at most half the block, less MIN_ALIGN, is
 * a wrong one. */
static inline bool lower_ok(size_t size, size_t have)
{
	return 2 * size + MIN_ALIGN >= have;
}

#pragma GCC visibility pop

#endif
