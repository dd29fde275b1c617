/* thread.h: the life cycle of thread caches and the orphan cache (thread.c).
 * Invariant: sm_tc_new and sm_tc_dead are never written: every call on them takes a slow path. */
#ifndef SM_THREAD_H
#define SM_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "types.h"

#pragma GCC visibility push(hidden)

void sm_thread_init(void);                /* once, at init: the thread-exit key */
struct tcache *sm_thread_start(void);    /* the calling thread's own cache, set up, and its
					  * teardown at exit: the new sm_tcp (still sm_tc_new
					  * without memory) */
void sm_thread_setup(struct tcache *tc);  /* T_LIVE, or still T_NEW without memory */
void sm_thread_teardown(struct tcache *tc);
struct tcache *sm_orphan_enter(void);     /* the orphan cache, locked (again, by its holder) */
void sm_orphan_leave(void);
void *sm_orphan_alloc(unsigned cls);      /* NULL: no memory */
/* Every thread cache (the registry, then the orphan), under their locks. */
void sm_tcache_walk(void (*fn)(struct tcache *tc, void *arg), void *arg);
uint64_t sm_thread_resident(void); /* the threads' blocks in memory (mincore) */
void sm_orphan_lock_all(void);
void sm_orphan_unlock_all(bool child);
void sm_block_lock_all(void);
void sm_block_unlock_all(void);

extern const struct tcache sm_tc_new, sm_tc_dead;

#pragma GCC visibility pop

#endif
