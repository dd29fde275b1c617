/* trim.c: giving memory back on request (malloc_trim), and the thread caches' drain.
 * The calling thread drains its own caches at once. Every other thread drains its own at its
 * next malloc, malloc_bulk or slub_cache_alloc, or its next flush: a poke (sm_poke) stops their
 * fastpaths, and sm_trim_gen moved on. A thread cache is written by its thread alone, so no
 * thread empties another's. The background thread pokes threads that have gone quiet
 * (background.c).
 * A drain covers the thread's typed caches too, but not inside a slub_cache_* call (typed.c).
 * With SLUBMALLOC_DEBUG's red zones or poison, every debug block is checked first (debug.c).
 * Then the depots go back to the slabs, and every cache, typed ones too, frees its empty slabs,
 * the min_partial reserve too. Every dirty slab page is purged, but up to malloc_trim's pad
 * bytes of them.
 * The cached large ranges are purged and retained, mapped, for the next large blocks
 * (malloc_trim); out of memory, they and the retained ones are unmapped.
 * A class, a cache or a large cache with nothing to give back costs a few loads: programs
 * trim often (stress-ng: one operation in eight).
 * Invariants: sm_trim_gen only grows; a thread's trim_gen is the last value it drained for.
 * A drain leaves every floor of the thread unpoked. */
#include "bulk.h"
#include "config.h"
#include "depot.h"
#include "diag/diag.h"
#include "engine.h"
#include "freelist.h"
#include "large.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "stack.h"
#include "stats.h"
#include "tcache.h"
#include "trim.h"
#include "typed.h"
#include "types.h"

/* tc's stacks, other threads' objects, spill chains and active slabs back to the slabs; its
 * typed caches' too, outside a slub_cache_* call (typed.c). */
void sm_trim_self(struct tcache *tc)
{
	if (tc->state != T_LIVE) /* (sm_tc_new and sm_tc_dead are never written) */
		return;
	tc->trim_gen = __atomic_load_n(&sm_trim_gen, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < NCLASS; i++) { /* (a class with nothing held costs a few loads) */
		struct stack *r = &tc->remote_stack[i], *f = &tc->free_stack[i];
		if (stack_count(&tc->alloc_stack[i]) || stack_count(f) || tc->source[i].spill ||
		    tc->source[i].active)
			sm_drop(&tc->alloc_stack[i], f, &tc->source[i], &sm_g.caches[i]);
		if (stack_count(r)) {
			sm_free_array(r->slots, stack_count(r));
			r->top = r->slots;
		}
		if (stack_cap(f) > sm_g.caches[i].cap) { /* grown (sm_flush, sm_refill): back to the
							  * first size */
			sm_stacks_resize(tc, i, sm_g.caches[i].cap);
			if (tc->burst[i]) /* empty now: their pages go back (zero again: the guards).
					   * Not grown since, they used their first cap slots only */
				sm_os_purge(tc->burst[i], burst_bytes(i));
		}
		tc->source[i].refills = 0;
		stack_set_floor(&tc->alloc_stack[i], tc->alloc_stack[i].slots);
		sm_free_stack_floor(tc, i);
	}
	stack_set_floor(&tc->alloc_stack[NCLASS], tc->alloc_stack[NCLASS].slots);
	stack_set_floor(&tc->free_stack[NCLASS], tc->free_stack[NCLASS].slots);
	sm_typed_drain_self(tc);
}

/* Another thread's request: tc (in the registry, so alive) drains at its next malloc or
 * slub_cache_alloc. Its frees do not stop: a thread that only frees drains at its next flush. */
void sm_poke(struct tcache *tc)
{
	for (unsigned i = 0; i <= NCLASS; i++) { /* (NCLASS: every size's, SLUBMALLOC_STATS=1) */
		stack_poke(&tc->alloc_stack[i]);
		stack_poke(&tc->free_stack[i]);
	}
	for (unsigned id = 0; id < MAX_TYPED; id++) /* slub_cache_alloc's (typed.c): those with
						     * an array (a stack set up later starts
						     * unpoked, with nothing to drain) */
		if (floor_load(&tc->typed_alloc[id]))
			stack_poke(&tc->typed_alloc[id]);
}

static void poke_other(struct tcache *tc, void *self)
{
	if (tc != self)
		sm_poke(tc);
}

/* pad: the bytes of freed slab pages that may stay in memory (glibc's pad: the free bytes a
 * trim leaves at the heap's top, for the next allocations). */
static int trim(bool unmap, size_t pad)
{
	if (!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE))
		return 0;
	if (sm_opt.debug & (DBG_Z | DBG_P))
		sm_debug_scan("by malloc_trim");
	__atomic_fetch_add(&sm_trim_gen, 1, __ATOMIC_RELAXED);
	sm_trim_self(sm_tcp);
	sm_typed_registry_walk(poke_other, sm_tcp);
	sm_depot_drain();
	sm_typed_shrink();
	for (unsigned i = 0; i < NCLASS; i++) {
		struct cache *c = &sm_g.caches[i];
		if (c->debug) { /* its own source goes back too */
			sm_lock(&c->dlock);
			struct stack none = {.top = NULL, .lim = NULL, .slots = NULL};
			sm_drop(&none, NULL, &c->debug_source, c);
			sm_unlock(&c->dlock);
		}
		sm_cache_shrink(c);
	}
	size_t released = sm_pages_purge_all(pad);
	released += unmap ? sm_large_release(true, NULL) : sm_large_purge();
	return released > 0;
}

int sm_trim(bool unmap)
{
	return trim(unmap, 0);
}

int sm_malloc_trim(size_t pad)
{
	return trim(false, pad);
}
