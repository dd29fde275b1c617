/* typed.c: typed object caches, after the kernel's kmem_cache_create/alloc/free/destroy.
 * A typed cache is a struct cache of its own (its own slabs, so a constructor's work survives
 * free and reuse: the free pointer of a ctor cache lives past the object's body) with an id
 * in 0..MAX_TYPED-1. Each thread keeps, per id, two stacks like the size classes' ones
 * (typed_alloc for allocation, typed_free for frees), a spill chain and an active slab
 * (typed_source). They are touched only inside the slub_cache_* calls. free() of a typed
 * object is accepted too: its slab says cls NCLASS, whose thread stack is always empty, so it
 * goes straight back to its slab.
 * Each object carries the free key (harden.h) while it is free: at koff, word 1, or the word
 * after a ctor cache's free pointer. Every free checks and sets it, every allocation clears
 * it, so a double free is found as free() finds one.
 *
 * DESTROY WITH OTHER THREADS ALIVE (the kernel flushes every CPU's cache; so must we):
 *   caller of a slub_cache_* call on c:  sm_typed_in = c (TLS; tcache.typed_in points to it);
 *                                        compiler barrier; load c->dead; use its typed stacks
 *                                        and source; sm_typed_in = NULL (release)
 *   slub_cache_destroy(c):               c->dead = 3; membarrier(PRIVATE_EXPEDITED); then for
 *                                        every registered thread: wait while its typed_in is c;
 *                                        drain its state for c; then c->dead = 1 (freeable).
 *   membarrier runs a full barrier on every running thread of the process (a descheduled one
 *   has passed a context switch), so each thread's call either began after that barrier (and
 *   its load of c->dead sees it set: it leaves c's state alone) or its typed_in = c is visible to the
 *   destroyer, which waits for the call to end. Without membarrier (old kernels) each call
 *   issues a full fence instead, chosen once. A call that sees c dead clears typed_in within a
 *   few instructions, so the wait ends even while a thread keeps calling on c. typed_in is
 *   stored, never read, by its thread: calls are not chained through a counter in memory.
 *   Registry changes (thread start/exit) and drains hold registry_lock; a thread drains its
 *   own typed state under it, at exit and when a malloc_trim or a poke asks (outside its
 *   slub_cache_* calls). malloc_trim shrinks the typed caches under it too, and destroy marks
 *   a cache freeable (dead = 1) only under it: so no cache is freed while a trim shrinks it.
 * NESTED CALLS: a typed call made inside another (a ctor's slub_cache_alloc or free, on any
 *   cache) leaves the outer call's mark in sm_typed_in, and takes the orphan cache's way
 *   (thread.c: locked, re-entered by its holder). So the outer call's state is never touched by
 *   the inner one, and a destroy or a drain still sees the outer call in progress.
 * Invariants: an id is reused only after the destroyed cache that held it has lost its last
 * slab (sm_typed_gone), and its state was drained in every thread before that; the ctor runs
 * once per object, when it is carved; SLUB_ZERO caches clear each object on allocation.
 * Destroying a cache with objects still allocated reports them on stderr; the cache then lives
 * on (dead) until they are freed. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "bulk.h"
#include "config.h"
#include "engine.h"
#include "fastpath.h"
#include "freelist.h"
#include "harden.h"
#include "lock.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "slab.h"
#include "stack.h"
#include "stats.h"
#include "tcache.h"
#include "thread.h"
#include "trim.h"
#include "typed.h"
#include "types.h"
#include "slubmalloc.h"

#define KNOWN_FLAGS (SLUB_HWCACHE_ALIGN | SLUB_ZERO)

static struct cache *table[MAX_TYPED];
static sm_lock_t typed_lock;       /* table[], ids, dead flags */
static sm_lock_t registry_lock;    /* the registry, every drain of a thread's typed state, the
				    * typed caches' shrink (malloc_trim) */
static struct tcache *registry;
static int use_membarrier = -1;    /* chosen once, by the first slub_cache_create */

static inline struct cache *cache_from(struct slub_cache *sc)
{
	return (struct cache *)sc;
}

static void choose_barrier(void)
{
	if (__atomic_load_n(&use_membarrier, __ATOMIC_ACQUIRE) >= 0)
		return;
	int ok = sm_os_barrier_register();
	__atomic_store_n(&use_membarrier, ok, __ATOMIC_RELEASE);
}

static inline bool enter(struct cache *c)
{
	if (unlikely(__atomic_load_n(&sm_typed_in, __ATOMIC_RELAXED)))
		return false; /* nested: see NESTED CALLS above */
	__atomic_store_n(&sm_typed_in, c, __ATOMIC_RELAXED);
	if (use_membarrier)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return true;
}

static inline void leave(void)
{
	__atomic_store_n(&sm_typed_in, NULL, __ATOMIC_RELEASE);
}

void sm_typed_register(struct tcache *tc)
{
	tc->typed_in = &sm_typed_in;
	sm_lock(&registry_lock);
	tc->rprev = NULL;
	tc->rnext = registry;
	if (registry)
		registry->rprev = tc;
	registry = tc;
	sm_unlock(&registry_lock);
}

/* Drain tc's state for id (registry lock held, tc quiet or the caller). */
static void drain(struct tcache *tc, unsigned id)
{
	struct cache *c = tc->typed_for[id];
	if (!c)
		return;
	sm_drop(&tc->typed_alloc[id], &tc->typed_free[id], &tc->typed_source[id], c);
	tc->typed_for[id] = NULL;
}

/* A drain a malloc_trim or a poke asked for (sm_trim_self): tc's typed state back to the
 * slabs, as at thread exit. Only tc's own thread drains it, and never inside a slub_cache_*
 * call (a ctor's malloc), whose state is in use: that waits for the next drain. */
void sm_typed_drain_self(struct tcache *tc)
{
	if (tc != sm_tcp || __atomic_load_n(&sm_typed_in, __ATOMIC_RELAXED))
		return;
	sm_lock(&registry_lock);
	for (unsigned id = 0; id < MAX_TYPED; id++) {
		drain(tc, id);
		stack_set_floor(&tc->typed_alloc[id], tc->typed_alloc[id].slots); /* unpoked */
	}
	sm_unlock(&registry_lock);
}

/* malloc_trim: every typed cache not being destroyed frees its empty slabs, the reserve too.
 * The registry lock keeps each one alive meanwhile: slub_cache_destroy marks a cache freeable
 * (dead = 1) only under it. */
void sm_typed_shrink(void)
{
	struct cache *live[MAX_TYPED];
	unsigned n = 0;
	sm_lock(&registry_lock);
	sm_lock(&typed_lock);
	for (unsigned id = 0; id < MAX_TYPED; id++)
		if (table[id] && !table[id]->dead)
			live[n++] = table[id];
	sm_unlock(&typed_lock); /* (a last slab's release takes it: sm_typed_gone, dead 0 or 3) */
	for (unsigned i = 0; i < n; i++)
		sm_cache_shrink(live[i]);
	sm_unlock(&registry_lock);
}

void sm_typed_thread_exit(struct tcache *tc)
{
	sm_lock(&registry_lock);
	for (unsigned id = 0; id < MAX_TYPED; id++) {
		drain(tc, id);
		if (tc->typed_mem[id]) {
			sm_free_fast(tc->typed_mem[id]);
			tc->typed_mem[id] = NULL;
			stack_init(&tc->typed_alloc[id], NULL, 0);
			stack_init(&tc->typed_free[id], NULL, 0);
		}
	}
	if (tc->rprev)
		tc->rprev->rnext = tc->rnext;
	else if (registry == tc)
		registry = tc->rnext;
	if (tc->rnext)
		tc->rnext->rprev = tc->rprev;
	tc->rnext = tc->rprev = NULL;
	sm_unlock(&registry_lock);
}

SM_EXPORT struct slub_cache *slub_cache_create(const char *name, size_t size, size_t align,
					       unsigned flags, void (*ctor)(void *))
{
	if (!name || !size || size > TYPED_MAX || (align & (align - 1)) || align > TYPED_MAX ||
	    (flags & ~KNOWN_FLAGS) || ((flags & SLUB_ZERO) && ctor))
		return errno = EINVAL, NULL;
	sm_init();
	choose_barrier();
	if (align < 8)
		align = 8;
	if (flags & SLUB_HWCACHE_ALIGN) { /* the kernel's rule: a line, or half for small objects */
		size_t line = 64;
		while (size <= line / 2 && line > 8)
			line /= 2;
		if (line > align)
			align = line;
	}
	size_t body = (size + align - 1) & ~(align - 1);
	size_t fpoff = ctor ? ((body + 7) & ~(size_t)7) : 0; /* keep the ctor's work intact */
	size_t slot = ctor ? ((fpoff + 16 + align - 1) & ~(align - 1)) : body; /* link, key */
	if (slot < 16)
		slot = 16;
	if (slot > MAX_SMALL || body > TYPED_MAX)
		return errno = EINVAL, NULL;
	struct cache *c = sm_memalign(64, sizeof *c);
	if (!c)
		return NULL;
	sm_lock(&typed_lock);
	unsigned id = 0;
	while (id < MAX_TYPED && table[id])
		id++;
	if (id == MAX_TYPED) {
		sm_unlock(&typed_lock);
		sm_free_fast(c);
		return errno = ENOMEM, NULL;
	}
	sm_cache_setup(c, name, (uint32_t)slot, NCLASS);
	c->id = (uint16_t)id;
	c->fpoff = (uint32_t)fpoff;
	c->koff = (uint32_t)(ctor ? fpoff + 8 : 8);
	c->ctor = ctor;
	c->flags = flags;
	table[id] = c;
	sm_unlock(&typed_lock);
	return (struct slub_cache *)c;
}

/* Make tc's state for c's id serve c (first use of c in this thread), or fail (ENOMEM). */
static bool own_bin(struct tcache *tc, struct cache *c)
{
	unsigned id = c->id;
	struct stack *b = &tc->typed_alloc[id], *f = &tc->typed_free[id];
	if (tc->typed_for[id] == c)
		return true;
	if (tc->typed_mem[id] && stack_cap(b) != c->cap) {
		sm_free_fast(tc->typed_mem[id]);
		tc->typed_mem[id] = NULL;
	}
	if (!tc->typed_mem[id]) { /* both stacks, each after a NULL guard */
		void **v = sm_alloc_fast(2 * (c->cap + 1) * sizeof(void *));
		if (!v)
			return false;
		v[0] = v[c->cap + 1] = NULL;
		tc->typed_mem[id] = v;
	}
	stack_init(b, tc->typed_mem[id] + 1, c->cap);
	stack_init(f, tc->typed_mem[id] + c->cap + 2, c->cap);
	tc->typed_for[id] = c;
	return true;
}

static void used_after_destroy(const struct cache *c)
{
	sm_write(2, "slubmalloc: slub_cache_alloc of destroyed cache ");
	sm_fatal(c->name, c, "");
}

/* Whether p, an object of c with its key set, is free: on tc's stacks or spill chain for c (tc
 * entered, or the orphan locked), or on its slab's freelist (sm_free_listed). */
static bool typed_listed(struct tcache *tc, struct cache *c, void *p)
{
	unsigned id = c->id;
	struct slab *s = slab_of((uintptr_t)p);
	if (tc->typed_for[id] == c && !c->dead) {
		struct source *source = &tc->typed_source[id];
		if (sm_in_stack(&tc->typed_alloc[id], p) || sm_in_stack(&tc->typed_free[id], p) ||
		    (source->spill && source->active == s &&
		     sm_in_chain(s, source->spill, c->fpoff, source->nspill, p)))
			return true;
	}
	return sm_free_listed(tc, s, p);
}

/* free() of an object of a typed cache with its key set: whether it is free (double free).
 * In a thread without a cache: its slab only. Inside a typed call (a ctor's free()), the
 * thread's state is read as it is: the outer call's mark keeps drains away. */
bool sm_typed_listed(struct cache *c, void *p)
{
	struct tcache *tc = sm_tcp;
	if (tc->state != T_LIVE)
		return sm_free_listed(tc, slab_of((uintptr_t)p), p);
	bool entered = enter(c);
	bool listed = typed_listed(tc, c, p);
	if (entered)
		leave();
	return listed;
}

static inline void *zeroed(const struct cache *c, void *p)
{
	if (p && (c->flags & SLUB_ZERO))
		memset(p, 0, c->size);
	return p;
}

/* Up to n objects of c into out[] from tc's state for it (tc entered, or the orphan locked):
 * all n, or 0 when memory runs out (then nothing is taken). */
static size_t take(struct tcache *tc, struct cache *c, size_t n, void **out)
{
	if (c->dead)
		used_after_destroy(c);
	if (!own_bin(tc, c))
		return 0;
	unsigned id = c->id;
	size_t got = sm_take_n(c, 0, &tc->typed_alloc[id], &tc->typed_free[id], &tc->typed_source[id],
			       out, n);
	if (got == n)
		return free_keys_clear(out, n, c->koff);
	/* out of memory: give back what was taken */
	for (size_t i = 0; i < got; i++)
		sm_free_to_slab(slab_of((uintptr_t)out[i]), out[i]);
	return 0;
}

/* Put n objects of c on tc's free stack for it (tc entered, or the orphan locked). Each gets
 * its free key, one after another: one that has it already and is free here (a pointer twice in
 * ptrs too) is a double free. */
static void put(struct tcache *tc, struct cache *c, size_t n, void **ptrs)
{
	unsigned id = c->id;
	struct stack *b = &tc->typed_free[id];
	bool here = !c->dead && tc->typed_for[id] == c; /* else straight to the slabs */
	for (size_t i = 0; i < n; i++) {
		void *p = ptrs[i];
		if (!p)
			continue;
		if (free_key_is_set_at(p, c->koff) && typed_listed(tc, c, p))
			sm_fatal_in("double free", p, c);
		free_key_set_at(p, c->koff);
		if (!here) {
			sm_free_to_slab(slab_of((uintptr_t)p), p);
			continue;
		}
		if (b->top == b->lim && tc->typed_alloc[id].top == tc->typed_alloc[id].slots) {
			stack_swap(&tc->typed_alloc[id], b); /* these become the allocation stack */
		} else if (b->top == b->lim) { /* the older half goes back, grouped by slab */
			uint32_t cap = stack_cap(b), half = cap / 2 ? cap / 2 : cap;
			sm_free_array(b->slots, half);
			memmove(b->slots, b->slots + half, (cap - half) * sizeof(void *));
			b->top -= half;
		}
		*b->top++ = p;
	}
}

/* A typed call's slow path drains the thread's caches when a poke or a malloc_trim asked
 * (trim.c), as malloc's does: before it enters, and not inside another slub_cache_* call (a
 * ctor's), whose state is in use. sm_poke pokes the typed allocation stacks too, so that
 * slub_cache_alloc's fastpath stops at the poke; frees drain at their next flush. */
static void drain_if_asked(struct tcache *tc, unsigned id)
{
	if (tc->state == T_LIVE && !__atomic_load_n(&sm_typed_in, __ATOMIC_RELAXED) &&
	    (stack_poked(&tc->typed_alloc[id]) ||
	     tc->trim_gen != __atomic_load_n(&sm_trim_gen, __ATOMIC_RELAXED)))
		sm_trim_self(tc);
}

static size_t alloc_n(struct cache *c, size_t n, void **out)
{
	struct tcache *tc = sm_tcp;
	if (unlikely(tc->state == T_NEW))
		tc = sm_thread_start();
	drain_if_asked(tc, c->id);
	size_t got;
	if (likely(tc->state == T_LIVE) && likely(enter(c))) {
		got = take(tc, c, n, out);
		leave();
	} else {
		got = take(sm_orphan_enter(), c, n, out);
		sm_orphan_leave();
	}
	if (got != n)
		errno = ENOMEM;
	if (c->flags & SLUB_ZERO)
		for (size_t i = 0; i < got; i++)
			zeroed(c, out[i]);
	return got;
}

/* p (not NULL) must be an object of c: reported (and abort) otherwise. */
static void check_object(struct cache *c, void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct slab *s = region_is_ours(a) ? page_desc(a) : NULL;
	if (!s || slab_index(s, a) == UINT32_MAX)
		sm_fatal("invalid free", p, "(not an object of slubmalloc)");
	if (s->cache != c) {
		sm_write(2, "slubmalloc: slub_cache_free to ");
		sm_write(2, c->name);
		sm_fatal_in("slub_cache_free_bulk of an object of another cache", p, s->cache);
	}
}

/* The general way: every pointer checked, then into tc's stack for c (or the orphan's). */
static SM_COLD void free_n(struct cache *c, size_t n, void **ptrs)
{
	for (size_t i = 0; i < n; i++)
		if (ptrs[i])
			check_object(c, ptrs[i]);
	struct tcache *tc = sm_tcp;
	drain_if_asked(tc, c->id);
	if (likely(tc->state == T_LIVE) && likely(enter(c))) {
		put(tc, c, n, ptrs);
		leave();
	} else {
		if (tc->state == T_LIVE) /* nested: the thread's stacks may hold one already */
			for (size_t i = 0; i < n; i++)
				if (ptrs[i] && free_key_is_set_at(ptrs[i], c->koff) &&
				    typed_listed(tc, c, ptrs[i]))
					sm_fatal_in("double free", ptrs[i], c);
		put(sm_orphan_enter(), c, n, ptrs);
		sm_orphan_leave();
	}
}

static SM_COLD void free_one_slow(struct cache *c, void *p)
{
	free_n(c, 1, &p);
}

/* Whether tc (entered) has a stack serving c, whose id is id (read before enter: the fence
 * would make the compiler load it again). */
static inline bool serves(const struct tcache *tc, const struct cache *c, unsigned id)
{
	return tc->typed_for[id] == c && !c->dead;
}

static SM_COLD void *alloc_one_slow(struct cache *c)
{
	void *p;
	return alloc_n(c, 1, &p) ? p : NULL;
}

/* One object: slub_cache_alloc's body, inlined into the bulk calls for short arrays. */
static inline __attribute__((always_inline)) void *alloc_one(struct cache *c)
{
	struct tcache *tc = sm_tcp;
	unsigned id = c->id;
	struct stack *b = &tc->typed_alloc[id];
	if (likely(enter(c))) {
		void **t = b->top;
		if (likely(serves(tc, c, id) && t > stack_floor_raw(b))) { /* (a poke stops it) */
			b->top = --t;
			void *p = *t;
			leave();
			free_key_clear_at(p, c->koff);
			return zeroed(c, p);
		}
		leave();
	}
	return alloc_one_slow(c);
}

/* slub_cache_free's body: free()'s checks and that p is c's; then a push onto the stack. */
static inline __attribute__((always_inline)) void free_one(struct cache *c, void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct slab *d;
	if (unlikely(!p))
		return;
	if (likely(region_is_ours(a) && is_object(d = page_desc(a), a) &&
		   d->cache == c && !free_key_maybe_set_at(p, c->koff))) {
		struct tcache *tc = sm_tcp;
		unsigned id = c->id;
		struct stack *b = &tc->typed_free[id];
		if (likely(enter(c))) {
			if (likely(serves(tc, c, id) && stack_push(b, p))) {
				leave();
				free_key_set_at(p, c->koff);
				return;
			}
			leave();
		}
	}
	free_one_slow(c, p); /* report, key search, flush, or a thread without a stack for c */
}

SM_EXPORT SM_HOT void *slub_cache_alloc(struct slub_cache *sc)
{
	return alloc_one(cache_from(sc));
}

SM_EXPORT SM_HOT void slub_cache_free(struct slub_cache *sc, void *p)
{
	free_one(cache_from(sc), p);
}

static SM_COLD size_t bad_bulk_args(size_t n)
{
	if (n)
		errno = EINVAL;
	return 0;
}

static SM_COLD size_t copy_zeroed(struct cache *c, void **ptrs, void *const *from, size_t n)
{
	sm_copy_ptrs(ptrs, from, n);
	for (size_t i = 0; i < n; i++)
		memset(ptrs[i], 0, c->size);
	return n;
}

static __attribute__((noinline)) size_t alloc_bulk(struct cache *c, size_t n, void **ptrs)
{
	if (unlikely(!n || !ptrs))
		return bad_bulk_args(n);
	struct tcache *tc = sm_tcp;
	unsigned id = c->id;
	struct stack *b = &tc->typed_alloc[id];
	if (unlikely(!enter(c)))
		return alloc_n(c, n, ptrs);
	void **t = b->top;
	if (likely(serves(tc, c, id) && (size_t)(t - b->slots) >= n &&
		   t > stack_floor_raw(b))) { /* one copy from the top (not at a poke) */
		b->top = t -= n;
		leave(); /* t[0, n) are no longer the stack's: the copy needs no guard */
		free_keys_clear(t, n, c->koff);
		if (unlikely(c->flags & SLUB_ZERO))
			return copy_zeroed(c, ptrs, t, n);
		if (n < SHORT_BULK) { /* inline, as malloc_bulk's (bulk.c) */
			copy_ptrs(ptrs, t, n);
			return n;
		}
		return sm_copy_ptrs(ptrs, t, n); /* a tail call */
	}
	leave();
	return alloc_n(c, n, ptrs);
}

SM_EXPORT SM_HOT size_t slub_cache_alloc_bulk(struct slub_cache *sc, size_t n, void **ptrs)
{
	struct cache *c = cache_from(sc);
	if (likely(n == 1 && ptrs)) { /* slub_cache_alloc's fastpath; else alloc_bulk */
		struct tcache *tc = sm_tcp;
		unsigned id = c->id;
		struct stack *b = &tc->typed_alloc[id];
		if (likely(enter(c))) {
			void **t = b->top;
			if (likely(serves(tc, c, id) && t > stack_floor_raw(b) &&
				   !(c->flags & SLUB_ZERO))) {
				b->top = --t;
				void *p = *t;
				leave();
				free_key_clear_at(p, c->koff);
				ptrs[0] = p;
				return 1;
			}
			leave();
		}
	}
	return alloc_bulk(c, n, ptrs);
}

static __attribute__((noinline)) void free_bulk_n(struct cache *c, size_t n, void **ptrs)
{
	struct tcache *tc = sm_tcp;
	/* runs of c's objects checked and pushed as free_bulk does (bulk.c); a pointer that
	 * stops a run takes the general way, alone. (Only a live thread's stacks serve a cache.) */
	unsigned id = c->id;
	if (unlikely(!enter(c))) {
		free_n(c, n, ptrs);
		return;
	}
	if (unlikely(!serves(tc, c, id))) {
		leave();
		free_n(c, n, ptrs);
		return;
	}
	void **at = sm_bulk_runs(tc, ptrs, ptrs + n, c);
	while (unlikely(at != ptrs + n)) {
		if (*at) {
			check_object(c, *at);
			put(tc, c, 1, at); /* a full stack's flush, or the double-free report */
		}
		at = sm_bulk_runs(tc, at + 1, ptrs + n, c);
	}
	leave();
}

/* Two or three pointers (SHORT_BULK, config.h) in one call's time: the first passes free()'s
 * checks and is c's, then one enter, and one push of them all when the stack serves c, has room
 * and short_run_ok (the others in the first one's page, no pointer twice in a row). Returns
 * false, nothing freed, when that is not so (a NULL among them too): the caller frees them
 * one by one. */
static inline bool free_short(struct cache *c, size_t n, void **ptrs)
{
	uintptr_t first = (uintptr_t)ptrs[0];
	struct slab *d;
	if (unlikely(!region_is_ours(first) || !is_object(d = page_desc(first), first) ||
		     d->cache != c))
		return false;
	struct tcache *tc = sm_tcp;
	unsigned id = c->id;
	struct stack *b = &tc->typed_free[id];
	if (unlikely(!enter(c)))
		return false;
	void **t = b->top;
	bool ok = serves(tc, c, id) && b->lim - t >= (ptrdiff_t)n &&
		  short_run_ok(d, ptrs, n, t[-1]);
	for (size_t i = 0; ok && i < n; i++) /* no key there yet, and none twice (ptrs[0] == ptrs[2]) */
		ok = !free_key_maybe_set_at(ptrs[i], c->koff) && (i < 2 || ptrs[i] != ptrs[0]);
	if (likely(ok)) {
		for (size_t i = 0; i < n; i++)
			free_key_set_at(ptrs[i], c->koff);
		copy_ptrs(t, ptrs, n); /* one push */
		b->top = t + n;
	}
	leave();
	return ok;
}

/* free_short's way out: one by one, each reported or flushed as the single call would. */
static SM_COLD void free_each(struct cache *c, size_t n, void **ptrs)
{
	for (size_t i = 0; i < n; i++)
		free_one(c, ptrs[i]);
}

SM_EXPORT SM_HOT void slub_cache_free_bulk(struct slub_cache *sc, size_t n, void **ptrs)
{
	struct cache *c = cache_from(sc);
	if (!ptrs)
		return;
	if (likely(n == 1)) {
		free_one(c, ptrs[0]);
		return;
	}
	if (n < SHORT_BULK) {
		if (unlikely(!free_short(c, n, ptrs)))
			free_each(c, n, ptrs);
		return;
	}
	free_bulk_n(c, n, ptrs);
}

/* A dead cache's last slab is gone: its id can serve a new cache. */
void sm_typed_gone(struct cache *c)
{
	sm_lock(&typed_lock);
	bool gone = c->dead == 1 && table[c->id] == c &&
		    !__atomic_load_n(&c->nr_slabs, __ATOMIC_ACQUIRE);
	if (gone) {
		c->dead = 2;
		table[c->id] = NULL;
	}
	sm_unlock(&typed_lock);
	if (gone)
		sm_free_fast(c);
}

SM_EXPORT void slub_cache_destroy(struct slub_cache *sc)
{
	struct cache *c = cache_from(sc);
	if (!c)
		return;
	sm_lock(&typed_lock);
	c->dead = 3; /* dead to every call, but not freed while this one still uses it */
	sm_unlock(&typed_lock);
	if (use_membarrier > 0)
		sm_os_barrier_all();
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	sm_lock(&registry_lock);
	for (struct tcache *tc = registry; tc; tc = tc->rnext) {
		if (tc != sm_tcp)
			while (__atomic_load_n(tc->typed_in, __ATOMIC_ACQUIRE) == c)
				sm_os_yield();
		if (tc->typed_for[c->id] == c)
			drain(tc, c->id);
	}
	sm_unlock(&registry_lock);
	struct tcache *o = sm_orphan_enter();
	if (o->typed_for[c->id] == c)
		drain(o, c->id);
	sm_orphan_leave();
	sm_cache_shrink(c);
	uint64_t inuse, frozen;
	sm_slabs_census(c, &inuse, &frozen);
	if (inuse || frozen) {
		sm_write(2, "slubmalloc: slub_cache_destroy(");
		sm_write(2, c->name);
		sm_write(2, "): ");
		sm_write_num(2, inuse, 10);
		sm_write(2, " objects still allocated; the cache stays until they are freed\n");
	}
	sm_lock(&registry_lock); /* not while a malloc_trim shrinks it (sm_typed_shrink) */
	sm_lock(&typed_lock);
	c->dead = 1; /* from here the last slab to go frees c */
	sm_unlock(&typed_lock);
	sm_unlock(&registry_lock);
	if (!__atomic_load_n(&c->nr_slabs, __ATOMIC_ACQUIRE))
		sm_typed_gone(c);
}

void sm_typed_registry_walk(void (*fn)(struct tcache *tc, void *arg), void *arg)
{
	sm_lock(&registry_lock);
	for (struct tcache *tc = registry; tc; tc = tc->rnext)
		fn(tc, arg);
	sm_unlock(&registry_lock);
}

bool sm_typed_copy(unsigned id, struct cache *out)
{
	sm_lock(&typed_lock);
	struct cache *c = id < MAX_TYPED ? table[id] : NULL;
	if (c)
		*out = *c;
	sm_unlock(&typed_lock);
	return c != NULL;
}

void sm_typed_lock_all(void)
{
	sm_lock(&registry_lock);
	sm_lock(&typed_lock);
	for (unsigned i = 0; i < MAX_TYPED; i++)
		if (table[i])
			sm_lock(&table[i]->lock);
}

void sm_typed_unlock_all(bool reinit)
{
	for (unsigned i = 0; i < MAX_TYPED; i++)
		if (table[i])
			sm_unlock(&table[i]->lock);
	if (reinit) { /* the child has one thread: the registry holds it alone */
		registry = NULL;
		if (sm_tcp->state == T_LIVE) {
			sm_tcp->rnext = sm_tcp->rprev = NULL;
			registry = sm_tcp;
		}
	}
	sm_unlock(&typed_lock);
	sm_unlock(&registry_lock);
}
