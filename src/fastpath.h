/* fastpath.h: the two fastpaths, and nothing else. Call tree:
 *   malloc(n)  -> sm_alloc_fast: bin = the thread's tcache + sm_bin_at[(n-1)/16]; pop it (the
 *                 allocation stack)
 *                 -> empty: sm_alloc_swap: the free stack's objects become the bin
 *                    (class_swap: in classes below a cache line, objects of slabs another
 *                    thread owns go to the rbin first: reusing one here would make two
 *                    threads write one line, passive false sharing; the rbin is never
 *                    allocated from, only sent back)
 *                 -> both empty (or n 0 or > MAX_SMALL, or thread not set up): sm_alloc_slow
 *                    (alloc.c)
 *                      -> sm_refill (cache.c): the free stack (swap) / spill / take-all /
 *                         carve / partial / new slab
 *   free(p)    -> sm_free_fast: region byte, page descriptor, object check, the free key
 *                 (internal.h); push p on the thread's fbin (free stack) of the slab's class
 *                 (thread pointer + slab->fbtp), whichever thread's slab it is from
 *                 -> not ours, key set, fbin full, thread not set up: sm_free_slow
 *   free_sized(p, n), sized delete -> sm_free_sized_fast: the same, and n <= the slab's
 *                 object size in the same test; else sm_free_sized (alloc.c)
 *                      -> sm_flush: swap with an empty bin, grow (once), or sm_free_array ->
 *                         sm_push_chain (one cas16 per slab)
 * Neither fastpath takes a lock or uses an atomic instruction; each touches one word of the
 * object, the free key (word 1).
 * A thread's struct tcache starts zeroed (no slots, no room), so its first malloc and first
 * free take the slow path, which sets the thread up: no "initialised?" branch here. */
#ifndef SM_FASTPATH_H
#define SM_FASTPATH_H

#include "internal.h"

static inline void *sm_alloc_fast(size_t size)
{
	if (likely(size - 1 < MAX_SMALL)) {
		struct bin *b = bin_for(size);
		void **t = b->top;
		if (likely(t != b->slots)) {
			b->top = --t;
			return free_key_clear(*t);
		}
		return sm_alloc_swap(b, size);
	}
	return sm_alloc_slow(size);
}

/* free's fastpath for a block of at least size bytes (0: any); sized frees pass their size,
 * checked against the slab's object size beside the object check. */
static inline bool free_push(void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p;
	if (likely(region_is_ours(a))) {
		struct slab *s = page_desc(a);
		if (likely(is_object(s, a)) && likely(size <= s->size) &&
		    likely(!free_key_is_set(p))) {
			struct bin *b = fbin_of(s);
			void **t = b->top, **lim = b->lim;
			if (likely(t < lim)) { /* (the key covers bin_push's top check) */
				*t++ = p;
				b->top = t;
				free_key_set(p);
				return true;
			}
		}
	}
	return false;
}

static inline void sm_free_fast(void *p)
{
	if (likely(free_push(p, 0)))
		return;
	sm_free_slow(p);
}

/* free_sized, free_aligned_sized, sized operator delete: free's fastpath; a size larger than
 * the block, a large block, a full stack: the slow path, which reports a wrong size. */
static inline void sm_free_sized_fast(void *p, size_t size)
{
	if (likely(free_push(p, size)))
		return;
	sm_free_sized(p, size);
}

#endif
