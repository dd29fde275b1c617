/* typed.h: typed object caches (typed.c). */
#ifndef SM_TYPED_H
#define SM_TYPED_H

#include <stdbool.h>

#include "types.h"

#pragma GCC visibility push(hidden)

void sm_typed_gone(struct cache *c);          /* a dead typed cache lost its last slab */
void sm_typed_register(struct tcache *tc);    /* a new live thread cache */
void sm_typed_thread_exit(struct tcache *tc); /* its typed stacks back; unregistered */
void sm_typed_drain_self(struct tcache *tc);  /* its typed stacks back (malloc_trim, pokes) */
void sm_typed_shrink(void);                   /* malloc_trim: typed caches' empty slabs go */
void sm_typed_lock_all(void);
void sm_typed_unlock_all(bool reinit);
void sm_typed_registry_walk(void (*fn)(struct tcache *tc, void *arg), void *arg); /* its lock */
bool sm_typed_copy(unsigned id, struct cache *out);  /* typed cache id, if alive */
bool sm_typed_listed(struct cache *c, void *p);      /* free() of c's object p, key set: free? */

#pragma GCC visibility pop

#endif
