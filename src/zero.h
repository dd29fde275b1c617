/* zero.h: the blocks of malloc(0) under SLUBMALLOC_DEBUG's Z, each an address of its own where
 * every access faults (zero.c). */
#ifndef SM_ZERO_H
#define SM_ZERO_H

#include <stdbool.h>

#pragma GCC visibility push(hidden)

void sm_zero_init(void);                   /* reserve their range (at init, Z only) */
void *sm_zero_alloc(void);                 /* NULL: none left (or no range) */
bool sm_zero_has(const void *p);           /* p is in their range */
void sm_zero_free(void *p);                /* p in the range: reports a double or bad free */

#pragma GCC visibility pop

#endif
