/* harden.h: the free key, which catches a double free in the default mode, and its search
 * (harden.c). Always on: malloc's and free's fastpaths clear and set the key. */
#ifndef SM_HARDEN_H
#define SM_HARDEN_H

#include <stdbool.h>
#include <stdint.h>

#include "types.h"

#pragma GCC visibility push(hidden)

bool sm_free_listed(struct tcache *tc, struct slab *d, void *p); /* p (key set) free here? */

/* ---- the free key: double frees caught in the default mode ----
 * free() stores FREE_KEY in word 1 of each object it pushes on a thread stack (and a refill
 * in each object it carves). free_bulk's runs get it late, in sm_zone_settle (bulk.c). Every
 * path that hands an object out clears it (malloc, the slow paths, malloc_bulk). A free that
 * finds the key already there takes the slow path, which looks for the object on the
 * thread's stacks and its slab's freelist and reports a double free when it is there; else
 * (the program wrote the key itself) the free goes on. Word 0 stays the freelist link.
 * Word 1, not 0: a program's small store to its block's first bytes just before free would
 * stall free's 8-byte load of the key (no store forwarding): +29% on st_churn loop. */
/* A constant: a 32-bit immediate, sign-extended, in the compare and the store. Top bit set: no
 * pointer, no small number. A secret key would buy nothing: a program that forges it only sends
 * its free to the search, and one that overwrites it defeats any key. */
#define FREE_KEY ((uint64_t)(int64_t)(int32_t)0x9e3779b9u)
static inline bool free_key_is_set(const void *p)
{
	return ((const uint64_t *)p)[1] == FREE_KEY;
}
static inline void free_key_set(void *p)
{
	((uint64_t *)p)[1] = FREE_KEY;
}
static inline void *free_key_clear(void *p)
{
	((uint64_t *)p)[1] = 0;
	return p;
}

#pragma GCC visibility pop

#endif
