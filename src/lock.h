/* lock.h: the engine's lock (sm_lock_t, types.h), for slow paths only; its slow half,
 * sm_lock_slow, is in freelist.c. The lock order is written at the top of freelist.c. */
#ifndef SM_LOCK_H
#define SM_LOCK_H

#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

void sm_lock_slow(sm_lock_t *l);
static inline void sm_lock(sm_lock_t *l)
{
	if (likely(!__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE)))
		return;
	sm_lock_slow(l);
}
static inline void sm_unlock(sm_lock_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

#pragma GCC visibility pop

#endif
