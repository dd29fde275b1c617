/* fastpath.h: the two fastpaths, malloc's and free's, and the thin wrappers built on them.
 * Call tree:
 *   malloc(n)  -> sm_alloc_fast: pop the free stack of n's class, so that the object freed
 *                 last, whose lines are the likeliest to be in the cache, comes back first.
 *                 Not while the free stack is held for sampling (its floor is lim).
 *                 Else pop the allocation stack: the thread's tcache + sm_stack_at[(n-1)/16].
 *                 -> the allocation stack empty, the free stack empty or held:
 *                    sm_alloc_swap. A free stack's objects become the allocation stack
 *                    (stack_swap).
 *                 -> both empty, n 0 or above MAX_SMALL, thread not set up: sm_alloc_slow
 *                    (alloc.c)
 *                      -> sm_refill (tcache.c): spill chain, take-all, carve, partial slab,
 *                         new slab.
 *   malloc(n) with SLUBMALLOC_PROF=1 (patched) -> sm_alloc_prof_form: the same pops, each
 *                 counted down to the class's next sample -> sm_prof_direct_due (sample.c)
 *   free(p)    -> sm_free_fast: region byte, page descriptor (region.h), object check
 *                 (slab.h), free key (harden.h). Then push p on the free stack of the slab's
 *                 class. The stack is the thread pointer + slab->free_stack_off, less
 *                 REMOTE_OFF where the slab's subline_owner is this thread (a conditional
 *                 move): below a cache line, a slab another thread froze last sends p to the
 *                 remote stack (free_stack_in, tcache.h).
 *                 -> not ours, key set, stack full, thread not set up: sm_free_slow
 *                      -> sm_flush (tcache.c): swap with an empty stack, grow, or send the
 *                         older half back (sm_free_array, one cas16 per slab; plain
 *                         stores while the process has one thread); a full
 *                         remote stack goes back whole (sm_flush_remote).
 *   free_sized(p, n), sized delete -> sm_free_sized_fast: the same, with n <= the slab's
 *                 object size and n above half of it in the same test. Else sm_free_sized
 *                 (alloc.c). The aligned forms check n <= the object size only.
 * Neither fastpath takes a lock or uses an atomic instruction.
 * Each touches one word of the object: the free key (word 1).
 * A thread's struct tcache starts zeroed: no slots, no room. So its first malloc and first
 * free take the slow path, which sets the thread up. There is no "initialised?" branch here. */
#ifndef SM_FASTPATH_H
#define SM_FASTPATH_H

#include "alloc.h"
#include "config.h"
#include "diag/diag.h"
#include "harden.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "sizeclass.h"
#include "slab.h"
#include "stack.h"
#include "tcache.h"
#include "types.h"

/* malloc's pop from the stacks of b (alloc_stack_for), the free stack first: NULL when neither
 * has an object above its floor (malloc_bulk's one object uses it alone). */
static inline void *stacks_pop(struct stack *b, bool *zero)
{
	struct stack *f = free_stack_beside(b);
	void **t = f->top;
	if (t > stack_floor_raw(f)) { /* the object freed last first (not when held) */
		f->top = --t;
		return free_key_clear(*t);
	}
	t = b->top;
	if (likely(t > stack_floor_raw(b))) {
		b->top = --t;
		if (zero)
			*zero = free_key_zero(*t);
		return free_key_clear(*t);
	}
	return NULL;
}

/* malloc's fastpath for a call of form (enum form; sm_alloc_fast: FORM_C). calloc's passes
 * zero: *zero becomes true when the object still reads as zero (harden.h's ZERO_KEY: carved,
 * never handed out; only allocation stacks hold those). */
static inline void *alloc_pop(size_t size, unsigned form, bool *zero)
{
	if (likely(size - 1 < MAX_SMALL)) {
		struct stack *b = alloc_stack_for(size);
		void *p = stacks_pop(b, zero);
		if (likely(p))
			return p;
		return zero ? sm_alloc_swap_zero(b, size, zero) : sm_alloc_swap(b, size, form);
	}
	return sm_alloc_slow(size, form);
}

static inline void *sm_alloc_fast_form(size_t size, unsigned form)
{
	return alloc_pop(size, form, NULL);
}

static inline void *sm_alloc_fast(size_t size)
{
	return sm_alloc_fast_form(size, FORM_C);
}

/* free's fastpath for a block of at least size bytes (0: any). Sized frees pass their size,
 * checked against the slab's object size beside the object check. With lower, the size must
 * also be one that malloc or realloc could have put in this block: above half the object size,
 * less MIN_ALIGN (lower_ok). */
static inline bool free_push(void *p, size_t size, bool lower)
{
	uintptr_t a = (uintptr_t)p;
	if (likely(region_is_ours(a))) {
		struct slab *s = page_desc(a);
		if (likely(is_object(s, a)) && likely(size <= s->size) &&
		    (!lower || likely(lower_ok(size, s->size))) && likely(!free_key_maybe_set(p))) {
			struct stack *b = free_stack_of(s);
			void **t = b->top, **lim = b->lim;
			if (likely(t < lim)) { /* (the key covers stack_push's top check) */
				*t++ = p;
				b->top = t;
				free_key_set(p);
				return true;
			}
		}
	}
	return false;
}

static inline void sm_free_fast_form(void *p, unsigned form)
{
	if (likely(free_push(p, 0, false)))
		return;
	sm_free_slow(p, form);
}

static inline void sm_free_fast(void *p)
{
	sm_free_fast_form(p, FORM_C);
}

/* free_sized, sized operator delete: free's fastpath; a size that cannot be the block's, a
 * large block, a full stack: the slow path, which reports a wrong size. */
static inline void sm_free_sized_fast(void *p, size_t size, unsigned form)
{
	if (likely(free_push(p, size, true)))
		return;
	sm_free_sized(p, size, true, form);
}

/* free_aligned_sized, aligned sized delete: the same, with no lower bound (an aligned block
 * may be of a class far larger than its size). */
static inline void sm_free_aligned_sized_fast(void *p, size_t size)
{
	if (likely(free_push(p, size, false)))
		return;
	sm_free_sized(p, size, false, FORM_C);
}

/* malloc's fastpath in the profiler's patched mode (sample.c, sm_prof_entries): each pop,
 * free stack or allocation stack, counts its bytes down to its class's next sample. Thread
 * not set up: both stacks are empty, and sm_prof_direct_swap counts. The countdown run out, or
 * not drawn yet: sm_prof_direct_due. */
static inline void *sm_alloc_prof_form(size_t size, unsigned form)
{
	if (likely(size - 1 < MAX_SMALL)) {
		struct stack *b = alloc_stack_for(size), *f = free_stack_beside(b);
		struct pf_count *pc = pf_count_beside(b);
		void **t = f->top;
		if (likely(t > stack_floor_raw(f))) { /* (so the thread is set up: its cache is writable) */
			if (unlikely((pc->left -= (int64_t)size) < 0))
				return sm_prof_direct_due(size, form);
			f->top = --t;
			return free_key_clear(*t);
		}
		t = b->top;
		if (likely(t > stack_floor_raw(b))) {
			if (unlikely((pc->left -= (int64_t)size) < 0))
				return sm_prof_direct_due(size, form);
			b->top = --t;
			return free_key_clear(*t);
		}
		return sm_prof_direct_swap(b, size, form);
	}
	return sm_alloc_slow(size, form);
}

/* The small allocations of the entries that are not patched (calloc, realloc, memalign):
 * counted in patched mode, behind a flag. zero: calloc's (alloc_pop). */
static inline void *sm_alloc_counted_zero(size_t size, bool *zero)
{
	if (unlikely(sm_prof_direct))
		return sm_alloc_prof_form(size, FORM_C);
	return alloc_pop(size, FORM_C, zero);
}

static inline void *sm_alloc_counted(size_t size)
{
	return sm_alloc_counted_zero(size, NULL);
}

/* operator new: malloc's fastpath, then the new-handler protocol (alloc.c). */
static inline void *sm_new(size_t n, bool nothrow, unsigned form)
{
	void *p = sm_alloc_fast_form(n, form);
	return likely(p) ? p : sm_new_failed(n, 0, nothrow, form);
}

/* operator new's counting form (sm_alloc_prof_form). */
static inline void *sm_new_prof(size_t n, bool nothrow, unsigned form)
{
	void *p = sm_alloc_prof_form(n, form);
	return likely(p) ? p : sm_new_failed(n, 0, nothrow, form);
}

static inline void *sm_new_aligned(size_t n, size_t align, bool nothrow)
{
	void *p = sm_memalign(align, n);
	return likely(p) ? p : sm_new_failed(n, align, nothrow, FORM_C);
}

#endif
