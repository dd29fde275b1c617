/* fastpath.h: the two fastpaths, and nothing else. Call tree:
 *   malloc(n)  -> sm_alloc_fast: class = sm_class_of[(n+15)/16]; pop the thread's freelist
 *                 -> empty (or n > MAX_SMALL, or thread not set up): sm_alloc_slow (alloc.c)
 *                      -> sm_refill (cache.c) -> take_all / carve / partial / new slab
 *   free(p)    -> sm_free_fast: region bit, page -> slab, object index check; push on the
 *                 thread's freelist of the slab's class
 *                 -> not ours, full freelist, head == p, thread not set up: sm_free_slow
 *                      -> sm_flush -> sm_free_chain -> sm_push_chain (one cas16 per slab)
 * Neither fastpath takes a lock or uses an atomic instruction. A thread's struct tcache starts
 * zeroed (empty lists, limit 0), so its first malloc and first free take the slow path, which
 * sets the thread up: no "initialised?" branch here. */
#ifndef SM_FASTPATH_H
#define SM_FASTPATH_H

#include "internal.h"

static inline void *sm_alloc_fast(size_t size)
{
	if (likely(size <= MAX_SMALL)) {
		struct tfree *t = &sm_tc.cls[sm_class_of[(size + 15) >> 4]];
		void *p = t->head;
		if (likely(p)) {
			t->head = fp_get(p);
			t->count--;
			return p;
		}
	}
	return sm_alloc_slow(size);
}

static inline void sm_free_fast(void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (likely(region_is_ours(a))) {
		struct slab *s = slab_of(a);
		if (likely(s && slab_index(s, a) != UINT32_MAX)) {
			struct tfree *t = &sm_tc.cls[s->cls];
			if (likely(t->count < t->limit && t->head != p)) {
				fp_set(p, t->head);
				t->head = p;
				t->count++;
				return;
			}
		}
	}
	sm_free_slow(p);
}

#endif
