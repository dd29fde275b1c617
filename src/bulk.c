/* bulk.c: malloc_bulk and free_bulk, after the kernel's kmem_cache_alloc_bulk/free_bulk.
 * Allocation takes whole runs of objects from the thread's bin (one copy), then straight
 * from the slab sources (spill chain, take-all, carving) into the caller's array: never n trips
 * through malloc. Free walks the array keeping the slab of the previous pointer (objects of
 * one slab usually sit together, so most lookups are two compares), checks each pointer as
 * free() does and pushes it onto the thread's bin; a full bin sends its older half back
 * grouped by slab, one cmpxchg16b per slab. All or nothing: when memory runs out, everything
 * taken is given back and malloc_bulk returns 0 with errno ENOMEM. */
#include <errno.h>
#include <string.h>

#include "fastpath.h"
#include "internal.h"
#include "slubmalloc.h"

static size_t bulk_fail(size_t got, void **ptrs)
{
	free_bulk(got, ptrs);
	errno = ENOMEM;
	return 0;
}

/* One at a time, for large sizes and for threads without a cache of their own. */
static size_t alloc_each(size_t size, size_t n, void **ptrs)
{
	for (size_t i = 0; i < n; i++)
		if (!(ptrs[i] = sm_alloc_slow(size)))
			return bulk_fail(i, ptrs);
	return n;
}

SM_EXPORT size_t malloc_bulk(size_t size, size_t n, void **ptrs)
{
	if (!n)
		return 0;
	if (!ptrs)
		return errno = EINVAL, 0;
	if (n == 1) /* a call's own cost is more than one object's: the fastpath does it */
		return (ptrs[0] = sm_alloc_fast(size)) ? 1 : 0;
	if (unlikely(!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE)))
		sm_init();
	if (size > MAX_SMALL)
		return alloc_each(size, n, ptrs);
	unsigned cls = sm_size_to_class(size);
	if (unlikely(sm_g.caches[cls].debug)) /* SLUBMALLOC_DEBUG: one checked object at a time */
		return alloc_each(size, n, ptrs);
	struct tcache *tc = &sm_tc;
	if (tc->state == T_NEW)
		sm_thread_start(tc);
	if (tc->state != T_LIVE)
		return alloc_each(size, n, ptrs);
	size_t got = sm_take_n(&sm_g.caches[cls], tc->id, &tc->bin[cls], &tc->src[cls],
			       ptrs, n);
	return got == n ? n : bulk_fail(got, ptrs);
}

SM_EXPORT void free_bulk(size_t n, void **ptrs)
{
	if (!ptrs)
		return;
	if (n == 1) {
		sm_free_fast(ptrs[0]);
		return;
	}
	struct tcache *tc = &sm_tc;
	struct slab *s = NULL;
	struct bin *b = &tc->bin[NCLASS]; /* the bin of s's class; NCLASS: none (cap 0) */
	uint32_t c = b->count, cap = b->cap;
	uintptr_t lo = 0, span = 0; /* the last slab's objects: [lo, lo + span) */
	for (size_t i = 0; i < n; i++) {
		void *p = ptrs[i];
		uintptr_t a = (uintptr_t)p;
		if (unlikely(a - lo >= span)) {
			if (!p)
				continue;
			b->count = c;
			if (!region_is_ours(a) || !(s = slab_of(a))) {
				lo = span = 0;
				sm_free_slow(p); /* large, or not ours: reported there */
				continue;
			}
			lo = (uintptr_t)s->start;
			span = (uintptr_t)s->objects * s->size;
			b = &tc->bin[s->cls];
			c = b->count;
			cap = b->cap;
		}
		if (likely(c < cap && __atomic_load_n(&s->owner, __ATOMIC_RELAXED) == b->key &&
			   (b->slots + c)[-1] != p && slab_index(s, a) != UINT32_MAX)) {
			b->slots[c++] = p;
		} else {
			b->count = c;
			sm_free_slow(p); /* flush, report, or a thread without a cache */
			c = b->count;
			cap = b->cap;
		}
	}
	b->count = c;
}
