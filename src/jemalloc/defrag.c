/* defrag.c: what a program that moves its objects (active defragmentation, as Valkey's) needs.
 * A slab's memory goes back only when its last object goes. So a heap whose objects were freed
 * at random keeps every slab partly used. A mover asks, per object, whether its slab is one to
 * empty, and if so allocates a new block in a fuller slab, copies, and frees the old one.
 *   The hint (slub_defrag_hint, jemalloc's "experimental.utilization" figures in mallctl.c):
 *   a small block whose slab is on its cache's partial list (no thread's active slab, not full)
 *   and at most 9/8 as used as the cache's non-full slabs are on average, as Valkey decides.
 *   The average is from the statistics' snapshot (mallctl.c), at most DEFRAG_SNAP_NS old.
 *   The new block (sm_alloc_fullest, mallocx with MALLOCX_TCACHE_NONE): taken from the
 *   fullest of the first slabs on the partial list (sm_slab_freeze_fullest), not from the
 *   thread's cache, whose objects may be of the slabs being emptied. The slab is frozen for the
 *   one take, and its other free objects go back to it at once.
 * Debug caches and typed caches have no hint, and their blocks are never moved. */
#include <string.h>

#include "slubmalloc.h"

#include "alloc.h"
#include "config.h"
#include "defrag.h"
#include "engine.h"
#include "fastpath.h"
#include "freelist.h"
#include "harden.h"
#include "large.h"
#include "mallctl.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "sizeclass.h"
#include "slab.h"
#include "types.h"

/* s, a size class's slab (not a debug one), or NULL for any other pointer. */
static struct slab *movable_slab(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (!p || !region_is_ours(a))
		return NULL;
	struct slab *s = slab_of(a);
	if (!s || slab_index(s, a) == UINT32_MAX || s->cache->cls >= NCLASS || s->cache->debug)
		return NULL;
	return s;
}

void sm_util_of(const void *p, struct sm_util *u)
{
	memset(u, 0, sizeof *u);
	struct slab *s = movable_slab(p);
	if (s) {
		uint64_t hi = __atomic_load_n(&s->word.hi, __ATOMIC_RELAXED);
		u->nregs = s->objects;
		u->nfree = s->objects - SLAB_INUSE(hi);
		u->size = (size_t)s->cache->pages * SPAGE_SIZE;
		u->frozen = hi & SLAB_FROZEN;
		u->cls = s->cache->cls;
		u->slab = s;
		return;
	}
	size_t n = p && !region_is_ours((uintptr_t)p) ? sm_large_usable(p) : 0;
	if (n) /* a large block: one region of its size, as jemalloc answers */
		u->nregs = 1, u->size = n, u->cls = NCLASS;
}

SM_EXPORT int slub_defrag_hint(const void *p)
{
	struct sm_util u;
	sm_util_of(p, &u);
	if (!u.slab || u.frozen || !u.nfree)
		return 0;
	uint64_t curregs, curslabs, nonfull;
	sm_ctl_bin(u.cls, &curregs, &curslabs, &nonfull);
	if (nonfull < 2)
		return 0;
	uint64_t full = curslabs - nonfull;
	uint64_t in_nonfull = curregs > full * u.nregs ? curregs - full * u.nregs : 0;
	uint64_t used = u.nregs - u.nfree;
	return 8 * used * nonfull <= 9 * in_nonfull;
}

/* A block of size bytes (a size class's) from the fullest partial slab; NULL when there is
 * none to take from (the caller takes a block as malloc does). */
void *sm_alloc_fullest(size_t size)
{
	if (!size || size > MAX_SMALL || !__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE))
		return NULL;
	unsigned cls = sm_class_for_align(size, MIN_ALIGN);
	struct cache *c = &sm_g.caches[cls];
	if (cls >= NCLASS || c->debug || sm_opt.prof)
		return NULL; /* (the profiler samples on its own paths) */
	void *head;
	uint32_t n;
	struct slab *s = sm_slab_freeze_fullest(c, &head, &n);
	if (!s)
		return NULL;
	void *obj = head;
	if (n > 1) {
		void *rest = checked_next(s, obj, c->fpoff), *tail = rest;
		for (uint32_t i = 2; i < n; i++)
			tail = checked_next(s, tail, c->fpoff);
		sm_push_chain(s, rest, tail, n - 1);
	}
	sm_slab_unfreeze(s);
	return free_key_clear(obj);
}

SM_EXPORT void *slub_defrag_move(void *p)
{
	if (!slub_defrag_hint(p))
		return p;
	size_t n = sm_usable_size(p);
	void *q = sm_alloc_fullest(n);
	if (!q)
		return p;
	memcpy(q, p, n);
	sm_free_fast(p);
	return q;
}
