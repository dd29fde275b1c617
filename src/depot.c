/* depot.c: the depot, the kernel's "barn" for sheaves and Bonwick's magazine depot.
 * Each size class of a cache line or more has one: an array of free objects that threads' full
 * stacks sent away. Other threads' empty stacks take them as pointer arrays.
 * So objects freed by a thread that does not allocate them (a consumer) reach the thread that
 * does (a producer) without a chain of links written into the objects and followed one cache
 * miss after another.
 * They go back to their slabs only when the depot is full, or at malloc_trim.
 * Classes below a cache line keep their objects apart per thread (fastpath.h) and never use it.
 * Invariants: objects in a depot count as in use for their slabs, as objects in stacks do;
 * depots[c].n <= depot_cap(c); everything is under the depot's lock, which is taken before a
 * cache lock, never after. */
#include <string.h>

#include "config.h"
#include "depot.h"
#include "engine.h"
#include "lock.h"
#include "tcache.h"
#include "types.h"

/* A depot's lock and count, a cache line each. They are apart from the objects' arrays, so
 * that fork's handlers (sm_depot_lock_all) write two pages, not one per class: after a fork
 * each page written faults (copy on write). */
struct depot {
	sm_lock_t lock;
	uint32_t n;
} __attribute__((aligned(64)));

static struct depot depots[NCLASS];
static void *depot_objs[NCLASS][DEPOT_MAX]; /* .bss: a class's pages are touched when it is used */

static uint32_t depot_cap(unsigned cls)
{
	uint32_t cap = 2 * sm_g.caches[cls].cap;
	return cap < DEPOT_MAX ? cap : DEPOT_MAX;
}

bool sm_depot_put(unsigned cls, void **v, uint32_t n)
{
	struct depot *d = &depots[cls];
	if (sm_g.caches[cls].size < SUBLINE || __atomic_load_n(&d->n, __ATOMIC_RELAXED) + n > depot_cap(cls))
		return false;
	sm_lock(&d->lock);
	bool ok = d->n + n <= depot_cap(cls);
	if (ok) {
		memcpy(depot_objs[cls] + d->n, v, n * sizeof *v);
		__atomic_store_n(&d->n, d->n + n, __ATOMIC_RELAXED);
	}
	sm_unlock(&d->lock);
	return ok;
}

uint32_t sm_depot_take(unsigned cls, void **out, uint32_t want)
{
	struct depot *d = &depots[cls];
	if (!__atomic_load_n(&d->n, __ATOMIC_RELAXED))
		return 0;
	sm_lock(&d->lock);
	uint32_t k = d->n < want ? d->n : want;
	memcpy(out, depot_objs[cls] + d->n - k, k * sizeof *out);
	__atomic_store_n(&d->n, d->n - k, __ATOMIC_RELAXED);
	sm_unlock(&d->lock);
	return k;
}

uint32_t sm_depot_held(unsigned cls)
{
	return __atomic_load_n(&depots[cls].n, __ATOMIC_RELAXED);
}

/* malloc_trim: every depot's objects back to their slabs. */
void sm_depot_drain(void)
{
	for (unsigned i = 0; i < NCLASS; i++) {
		struct depot *d = &depots[i];
		if (!__atomic_load_n(&d->n, __ATOMIC_RELAXED))
			continue;
		sm_lock(&d->lock);
		sm_free_array(depot_objs[i], d->n);
		__atomic_store_n(&d->n, 0, __ATOMIC_RELAXED);
		sm_unlock(&d->lock);
	}
}

void sm_depot_lock_all(void)
{
	for (unsigned i = 0; i < NCLASS; i++)
		sm_lock(&depots[i].lock);
}

void sm_depot_unlock_all(void)
{
	for (unsigned i = 0; i < NCLASS; i++)
		sm_unlock(&depots[i].lock);
}
