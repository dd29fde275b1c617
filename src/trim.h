/* trim.h: giving memory back on request, and the thread caches' drain (trim.c). */
#ifndef SM_TRIM_H
#define SM_TRIM_H

#include <stdbool.h>
#include <stddef.h>

#include "types.h"

#pragma GCC visibility push(hidden)

int sm_trim(bool unmap);                       /* malloc_trim(0): 1 when memory went back;
						* unmap: the cached and retained large ranges
						* too (out of memory) */
int sm_malloc_trim(size_t pad);                /* the same; up to pad bytes of freed slab
						* pages stay in memory */
void sm_trim_self(struct tcache *tc);          /* drain tc's caches (its thread, slow path) */
void sm_poke(struct tcache *tc);               /* another thread's: tc drains at its next malloc */

#pragma GCC visibility pop

#endif
