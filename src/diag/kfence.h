/* kfence.h: what sample.c and fault.c need of KFENCE's pool (kfence.c). */
#ifndef SM_DIAG_KFENCE_H
#define SM_DIAG_KFENCE_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

extern uint32_t sm_kfence_every;           /* N, or 0: off */
void *sm_kfence_alloc(size_t size);        /* a sampled object, or NULL (too soon) */
void sm_kfence_fault(void *addr);          /* in the pool: a report, and abort */

#pragma GCC visibility pop

#endif
