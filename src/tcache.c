/* tcache.c: the thread caches' slow paths: refill, flush, and the stacks' growth.
 *
 *   thread (TLS, struct tcache)         cache (one per size class)     slab
 *   alloc_stack[c]: slots[0..top)       lock                           start, size, objects
 *   free_stack[c] (frees)               partial <-> slab <-> slab      carved (owner only)
 *   remote_stack[c] (others' sub-line objects)
 *   source[c].spill -> o -> o (an encoded chain of source[c].nspill objects)
 *   source[c].active ---------------------------------------------> word = {freelist, counters}
 *
 * A thread keeps two stacks of objects per size class c.
 * free pushes the free stack free_stack[c]. malloc pops it, or, when it is empty or held for
 * sampling, the allocation stack alloc_stack[c].
 * Each holds objects of any slabs of c, at most cap of them.
 * The stacks grow to cap_grown once free_stack[c] has overflowed or c has refilled twice.
 * They grow to cap_burst, in arrays of their own (tc->burst[c]), once free_stack[c] overflows
 * again with only objects of the thread's own slabs, in runs of a page.
 * They stay grown until malloc_trim.
 * When the allocation stack runs dry while the free stack is held, the two swap (stack_swap).
 * When free_stack[c] fills, they swap if alloc_stack[c] is empty. Else they grow. Else the
 * older half of free_stack[c] goes back to its slabs, grouped by slab (sm_flush).
 * In classes below a cache line, free pushes the objects of slabs another thread froze last on
 * remote_stack[c] (free_stack_in, tcache.h). They go back to their slabs when it fills. So a
 * thread never reuses a small object next to ones another thread writes (no passive false
 * sharing).
 * Objects in a stack or a spill chain count as in use for their slabs.
 * When both stacks are empty, alloc_stack[c] is refilled from the active slab: its spill
 * chain, its shared freelist (take-all), then its untouched objects (carve).
 * A slab whose freelist holds every object it handed out starts over: the chain is dropped
 * unread and the objects are carved again, in address order. A take-all of a large share of
 * a slab's objects sweeps the slab instead of walking the chain (sweep): the objects come out
 * in address order, the first stack's worth straight into the stack, unlinked.
 * The rules for the shared words these paths change are at the top of freelist.c.
 */
#include <string.h>

#include "background.h"
#include "bulk.h"
#include "config.h"
#include "depot.h"
#include "diag/diag.h"
#include "engine.h"
#include "freelist.h"
#include "harden.h"
#include "platform.h"
#include "region.h"
#include "slab.h"
#include "stack.h"
#include "stats.h"
#include "tcache.h"
#include "trim.h"
#include "types.h"

/* Move up to n objects of a spill chain (objects of the active slab) to out[]; returns how
 * many. checked_next's checks, with the slab's fields in registers: each step's chain of
 * dependent work is the load of the link and one xor (the key, secret ^ swab(slot), comes
 * from the object's address alone). */
static uint32_t take_spill(struct cache *c, struct source *source, void **out, uint32_t n)
{
	const struct slab *s = source->active;
	uintptr_t o = (uintptr_t)source->spill, start = (uintptr_t)s->start, secret = sm_g.secret;
	uint64_t span = (uint64_t)s->objects * s->size, inverse = s->inverse, bad_q_bits = s->bad_q_bits;
	uint32_t fpoff = c->fpoff, k = 0;
	while (o && k < n) {
		out[k++] = (void *)o;
		uintptr_t slot = o + fpoff, key = secret ^ __builtin_bswap64(slot);
		uintptr_t next = *(const uintptr_t *)slot ^ key;
		if (unlikely(link_bad(next, start, span, inverse, bad_q_bits)))
			sm_bad_link(s, o);
		o = next;
	}
	source->spill = (void *)o;
	source->nspill -= k;
	return k;
}

/* The owner has just taken s's whole freelist into source's spill (take-all or freeze). When
 * that is every object s has handed out since it was made (none is in a stack or in use), s
 * starts over as a new slab: the chain is dropped unread and the objects are carved again, in
 * address order, with no link to load (a burst of frees and mallocs larger than the thread
 * stacks otherwise walks the chain at the latency of a cache miss per object). Not for caches
 * with a ctor (an object is constructed once, when first carved) or debug caches (every link
 * they follow is checked). */
static void restart_if_all_free(const struct cache *c, struct slab *s, struct source *source)
{
	if (source->nspill != s->carved || c->ctor || c->debug)
		return;
	source->spill = NULL;
	source->nspill = 0;
	s->carved = 0;
	s->zero = 0; /* its objects have been used */
}

/* The chain that source's spill just took from s (take-all or freeze), in address order:
 * the first want objects straight into out[] (no link written or read for them), the rest
 * linked. Returns how many went into out[] (0: the chain stays as it was).
 * A list freed in random order costs its walk a cache miss a link; the sweep reads s's carved
 * objects one after another instead, and keeps those with SLAB_KEY (harden.h). Others may
 * carry that key too (an object in use, by its bytes; one another thread is about to push),
 * and a chain's object may lack it. So the chain is replaced only when the keyed objects are
 * provably the chain: as many as it holds, its head among them, and each one's link NULL or
 * another of them. Then the chain, walked from its head, never leaves them, and at n objects
 * long it is all of them. Else the chain stays, and the walk checks its links as before.
 * It reads words 0 and 1 of each object in use too, which another thread may be writing: a
 * race by design, whose values only decide the proof. So they are volatile loads, inline, and
 * ThreadSanitizer is told not to watch them (it would see an atomic load all the same). */
__attribute__((no_sanitize("thread"))) static uint32_t sweep(const struct slab *s,
							      struct source *source, void **out,
							      uint32_t want)
{
	uint32_t n = source->nspill, carved = s->carved;
	if (n < SWEEP_MIN || (uint64_t)n * SWEEP_SHARE < carved || carved > SWEEP_MAX ||
	    !slab_keyed(s))
		return 0;
	uint64_t keyed[SWEEP_MAX / 64], linked[SWEEP_MAX / 64];
	uint32_t words = (carved + 63) / 64, k = 0, ends = 0;
	memset(keyed, 0, words * sizeof keyed[0]);
	memset(linked, 0, words * sizeof linked[0]);
	uintptr_t start = (uintptr_t)s->start, size = s->size, o = start, secret = sm_g.secret;
	for (uint32_t i = 0; i < carved; i++, o += size) {
		const volatile uint64_t *word = (const volatile uint64_t *)o;
		if (word[1] != SLAB_KEY)
			continue;
		uintptr_t next = word[0] ^ secret ^ __builtin_bswap64(o); /* fp_get at offset 0 */
		uint32_t j = next ? slab_index(s, next) : 0;
		if (j >= carved)
			return 0; /* not a link to an object of the chain */
		keyed[i / 64] |= 1ull << (i % 64);
		k++;
		if (next)
			linked[j / 64] |= 1ull << (j % 64);
		else
			ends++;
	}
	uint32_t h = slab_index(s, (uintptr_t)source->spill);
	if (k != n || ends != 1 || h >= carved || !(keyed[h / 64] >> (h % 64) & 1))
		return 0;
	for (uint32_t w = 0; w < words; w++)
		if (linked[w] & ~keyed[w])
			return 0;
	uintptr_t head = 0, prev = 0;
	uint32_t got = 0;
	for (uint32_t w = 0; w < words; w++)
		for (uint64_t m = keyed[w]; m; m &= m - 1) {
			uintptr_t a = start + ((uintptr_t)w * 64 + (uintptr_t)__builtin_ctzll(m)) * size;
			if (got < want) {
				out[got++] = (void *)a;
				continue;
			}
			if (prev)
				fp_set((void *)prev, (void *)a, 0);
			else
				head = a;
			prev = a;
		}
	if (prev)
		fp_set((void *)prev, NULL, 0);
	source->spill = (void *)head;
	source->nspill = n - got;
	return got;
}

/* source's spill has just taken s's whole freelist: s starts over, or the chain may go into
 * address order, its first want objects into out[]. Returns how many went there. */
static uint32_t spill_taken(const struct cache *c, struct slab *s, struct source *source,
			    void **out, uint32_t want)
{
	restart_if_all_free(c, s, source);
	return source->spill ? sweep(s, source, out, want) : 0;
}

/* Put between 1 and want objects of c into out[], from one source, in this order: the spill
 * chain, the active slab's shared freelist (take-all; or, when that is every object the slab
 * handed out, the slab starts over), its untouched objects (carve, running the ctor on them),
 * a partial slab (which may start over too), a new slab. Returns how many; 0 only when memory is
 * exhausted (ENOMEM). source is the calling thread's for c, owner its id: a slab it
 * freezes records it (for objects smaller than a cache line; see free_stack_in). */
uint32_t sm_fill(struct cache *c, uint16_t owner, struct source *source, void **out, uint32_t want)
{
	uint32_t n;
	for (;;) {
		if (source->spill)
			return take_spill(c, source, out, want);
		struct slab *s = source->active;
		if (s) {
			if ((source->spill = sm_slab_take_all(s, &n))) {
				source->nspill = n;
				sm_count(c, EV_REFILL_TAKEALL, 1);
				if ((n = spill_taken(c, s, source, out, want)))
					return n;
				continue;
			}
			if ((n = sm_slab_carve(s, out, want))) {
				if (c->ctor)
					for (uint32_t i = 0; i < n; i++)
						c->ctor(out[i]);
				if (!c->debug) { /* keyed as freed ones are: a free of one is caught;
						  * those that read as zero say so, for calloc */
					uint64_t key = s->zero && c->cls < NCLASS ? ZERO_KEY : FREE_KEY;
					for (uint32_t i = 0; i < n; i++)
						free_key_put_at(out[i], c->koff, key);
				}
				return n;
			}
			if (!sm_slab_unfreeze_full(s))
				continue;
			source->active = NULL;
		}
		s = sm_slab_freeze_partial(c, &source->spill, &n);
		source->nspill = s ? n : 0;
		if (!s && !(s = sm_slab_new(c)))
			return 0;
		for (unsigned i = 0; i < s->pages; i++)
			__atomic_store_n(&s[i].subline_owner, (uint16_t)(c->size < SUBLINE ? owner : 0), __ATOMIC_RELAXED);
		__atomic_store_n(&s->frozen_by, owner, __ATOMIC_RELAXED);
		source->active = s;
		if (source->spill && (n = spill_taken(c, s, source, out, want)))
			return n;
	}
}

/* A slow path's first step for class cls (a refill, a flush, malloc_bulk's): a sign of life
 * for the background thread, and the drain a malloc_trim or a poke asked for. malloc's
 * fastpath stops at a poke and drains before its refill; malloc_bulk's pop (bulk.c) and the
 * frees only stop. Returns whether it drained. */
bool sm_slow_begin(struct tcache *tc, unsigned cls)
{
	__atomic_store_n(&tc->slow_n, tc->slow_n + 1, __ATOMIC_RELAXED);
	if (likely(tc->trim_gen == __atomic_load_n(&sm_trim_gen, __ATOMIC_RELAXED) &&
		   !stack_poked(&tc->alloc_stack[cls]) && !stack_poked(&tc->free_stack[cls])))
		return false;
	sm_trim_self(tc);
	return true;
}

/* The thread's stack for cls and its free stack are empty (the caller tried stack_swap; the
 * orphan's frees never reach its free stack): fill half of the stack. One object for the
 * caller, or NULL. */
void *sm_refill(struct tcache *tc, unsigned cls)
{
	sm_slow_begin(tc, cls);
	struct stack *b = &tc->alloc_stack[cls];
	struct cache *c = &sm_g.caches[cls];
	/* The first refill takes first_want objects. The one after the first full one (half a
	 * stack) grows the stacks: a producer; larger refills. */
	uint32_t r = ++tc->source[cls].refills;
	if (r == (c->first_want < c->cap / 2 ? 3 : 2) && stack_cap(b) == c->cap)
		sm_stacks_resize(tc, cls, c->cap_grown);
	uint32_t want = r == 1 ? c->first_want : stack_cap(b) / 2 ? stack_cap(b) / 2 : 1, got = 0;
	if (unlikely(tc->smp_armed)) { /* SAMPLE_BATCH at first, doubling with each refill (a
					* producer): a malloc/free loop swaps, and refills no more */
		uint32_t batch = SAMPLE_BATCH << (r < 6 ? r - 1 : 5);
		want = want < batch ? want : batch;
	}
	if (!tc->source[cls].spill) /* another thread's full stack first: no links to follow */
		got = sm_depot_take(cls, b->slots, want);
	if (!got)
		got = sm_fill(c, tc->id, &tc->source[cls], b->slots, want);
	b->top = b->slots + got;
	if (!got)
		return NULL;
	sm_count(c, EV_ALLOC_SLOW, 1);
	return *--b->top;
}

/* n objects of c into out[]: runs from the top of the stack b, then refills (straight into out[]
 * when more than a stack's worth is left). Returns how many it got: n, or fewer when memory ran
 * out (the caller gives those back). source is the thread's for c, as b is. */
size_t sm_take_n(struct cache *c, uint16_t owner, struct stack *b, struct stack *f,
		 struct source *source,
		 void **out, size_t n)
{
	size_t got = 0;
	for (;;) {
		uint32_t have = stack_count(b), k = have < n - got ? have : (uint32_t)(n - got);
		b->top -= k;
		sm_copy_ptrs(out + got, b->top, k);
		if ((got += k) == n)
			return n;
		/* the free stack's objects next */
		if (f && stack_swap(b, f))
			continue;
		uint32_t cap = stack_cap(b);
		if (n - got < cap) { /* refill the stack by half and go round */
			b->top = b->slots + sm_fill(c, owner, source, b->slots, cap / 2 ? cap / 2 : 1);
			if (b->top == b->slots)
				return got;
			continue;
		}
		size_t want = n - got < UINT32_MAX ? n - got : UINT32_MAX;
		uint32_t f = sm_fill(c, owner, source, out + got, (uint32_t)want);
		if (!f)
			return got;
		if ((got += f) == n)
			return n;
	}
}

/* A group of objects of one slab, chained, on its way back (the detached freelist). */
struct group {
	struct slab *s;
	void *head, *tail;
	uint32_t n;
};

/* Open groups while objects are sorted by slab (the kernel's detached freelist): FLUSH_GROUPS
 * groups, direct-mapped by slab, so frees in any order gather each slab's objects into one
 * push; a slab that finds its place taken pushes the group there first. used: the open
 * groups, one bit each. */
struct detached {
	struct group g[FLUSH_GROUPS];
	uint64_t used;
};
_Static_assert(FLUSH_GROUPS <= 64 && !(FLUSH_GROUPS & (FLUSH_GROUPS - 1)),
	       "one bit of used per group, a mask for the index");

static void detached_push(struct detached *d)
{
	for (uint64_t m = d->used; m; m &= m - 1) {
		struct group *g = &d->g[__builtin_ctzll(m)];
		sm_push_chain(g->s, g->head, g->tail, g->n);
	}
	d->used = 0;
}

/* The group of slab s (a descriptor, 128-byte aligned: page and region bits mixed). */
static inline struct group *detached_group(struct detached *d, struct slab *s)
{
	uintptr_t a = (uintptr_t)s;
	unsigned i = (unsigned)((a >> 7) ^ (a >> REGION_SHIFT)) & (FLUSH_GROUPS - 1);
	struct group *g = &d->g[i];
	if (!(d->used >> i & 1) || g->s != s) {
		if (d->used >> i & 1)
			sm_push_chain(g->s, g->head, g->tail, g->n);
		*g = (struct group){.s = s, .head = NULL, .tail = NULL, .n = 0};
		d->used |= 1ull << i;
	}
	return g;
}

static inline void detached_add(struct detached *d, void *o)
{
	struct slab *s = slab_of((uintptr_t)o);
	struct group *g = detached_group(d, s);
	fp_set(o, g->head, s->cache->fpoff);
	if (slab_keyed(s))
		slab_key_set(o);
	if (!g->head)
		g->tail = o;
	g->head = o;
	g->n++;
}

/* Return a chain of objects (free pointers at fpoff) to their slabs: one push per slab. */
void sm_free_chain(void *o, uint32_t fpoff)
{
	struct detached d;
	d.used = 0;
	while (o) {
		void *next = checked_next(slab_of((uintptr_t)o), o, fpoff);
		detached_add(&d, o);
		o = next;
	}
	detached_push(&d);
}

/* A run: the pointers of an array in a row that share a page (so a slab), chained, their
 * keys set (keyed slabs), the chain's head in a register (sm_g.secret too: fp_set's encoding,
 * inline). Its tail is the run's first object, whose link the caller writes. */
struct run {
	struct slab *s;
	uintptr_t head, tail;
	uint32_t k, fpoff;
};

/* The next run of [*at, end) into *r, NULLs skipped, *at moved past it; false at the end. The
 * links go into objects long freed, most of them out of the cache by now: prefetched. */
static inline bool run_next(void ***at, void **end, uintptr_t secret, struct run *r)
{
	void **p = *at;
	for (;; p++) {
		if (p == end)
			return false;
		if (p + FLUSH_PREFETCH < end)
			__builtin_prefetch(p[FLUSH_PREFETCH], 1);
		if (*p)
			break;
	}
	void **run = p;
	uintptr_t first = (uintptr_t)*p++, a, head = first;
	struct slab *s = slab_of(first);
	uint32_t fpoff = s->cache->fpoff;
	bool keyed = slab_keyed(s);
	/* the next pointers in first's page (a NULL is in none of ours) */
	for (; p < end && !(((a = (uintptr_t)*p) ^ first) >> SPAGE_SHIFT); p++) {
		uintptr_t slot = a + fpoff;
		*(uintptr_t *)slot = head ^ secret ^ __builtin_bswap64(slot);
		if (keyed)
			slab_key_set((void *)a);
		head = a;
	}
	if (keyed)
		slab_key_set((void *)first);
	*r = (struct run){.s = s, .head = head, .tail = first, .k = (uint32_t)(p - run), .fpoff = fpoff};
	*at = p;
	return true;
}

static void push_groups(const struct group *g, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		sm_push_chain(g[i].s, g[i].head, g[i].tail, g[i].n);
}

/* The only thread's array (freelist.c, THE ONLY THREAD): each run straight onto its slab's
 * freelist with plain stores, no group, no cas16. A run that changes its slab's list waits in
 * later[] until the plain section ends: it takes the cache lock. */
#define PLAIN_LATER 32
static void free_array_plain(void **v, size_t n)
{
	struct group later[PLAIN_LATER];
	uint32_t nl = 0;
	void **at = v, **end = v + n;
	struct run r;
	while (run_next(&at, end, sm_g.secret, &r)) {
		if (likely(sm_push_chain_plain(r.s, (void *)r.head, (void *)r.tail, r.k, r.fpoff)))
			continue;
		later[nl++] = (struct group){.s = r.s, .head = (void *)r.head, .tail = (void *)r.tail, .n = r.k};
		if (nl == PLAIN_LATER) {
			sm_plain_end();
			push_groups(later, nl);
			nl = 0;
			if (!sm_plain_begin()) { /* a second thread came */
				sm_free_array(at, (size_t)(end - at));
				return;
			}
		}
	}
	sm_plain_end();
	push_groups(later, nl);
}

/* Return an array of objects (NULLs skipped) to their slabs: runs, gathered per slab into
 * groups, one push each; the only thread's, plain (free_array_plain). */
void sm_free_array(void **v, size_t n)
{
	if (sm_plain_begin()) {
		free_array_plain(v, n);
		return;
	}
	struct detached d;
	d.used = 0;
	void **at = v, **end = v + n;
	struct run r;
	while (run_next(&at, end, sm_g.secret, &r)) {
		struct group *g = detached_group(&d, r.s);
		fp_set((void *)r.tail, g->head, r.fpoff); /* before the group's chain */
		if (!g->head)
			g->tail = (void *)r.tail;
		g->head = (void *)r.head;
		g->n += r.k;
	}
	detached_push(&d);
}

/* Both stacks of cls get the room of cap slots (their arrays have cap_grown, or cap_burst once
 * tc->burst[cls] holds them). */
void sm_stacks_resize(struct tcache *tc, unsigned cls, uint32_t cap)
{
	tc->alloc_stack[cls].lim = tc->alloc_stack[cls].slots + cap;
	tc->free_stack[cls].lim = tc->free_stack[cls].slots + cap;
	stack_set_floor(&tc->alloc_stack[cls], tc->alloc_stack[cls].slots);
	sm_free_stack_floor(tc, cls);
	if (unlikely(tc->smp_armed))
		sm_sample_arm(&tc->alloc_stack[cls], 0);
}

/* The bytes of objects burst stacks of cls hold at most. */
static uint64_t burst_objects(unsigned cls)
{
	return (uint64_t)sm_g.caches[cls].cap_burst * sm_g.caches[cls].size;
}

/* The bytes of objects the thread's burst stacks, all classes with arrays, hold at most. */
uint64_t sm_burst_held(const struct tcache *tc)
{
	uint64_t held = 0;
	for (unsigned i = 0; i < NCLASS; i++)
		if (tc->burst[i])
			held += burst_objects(i);
	return held;
}

/* The two stacks of cls in arrays of cap_burst slots, mapped on the first call (the thread's
 * block keeps the room of cap_grown only: most classes never burst, and a larger block would
 * spread every thread's used slots over more pages); false when no memory is left, or when
 * they would take the thread's burst stacks past TCACHE_BURST_BUDGET. */
static bool burst_stacks(struct tcache *tc, unsigned cls)
{
	if (tc->burst[cls])
		return true;
	uint32_t cap = sm_g.caches[cls].cap_burst;
	if (sm_burst_held(tc) + burst_objects(cls) > TCACHE_BURST_BUDGET)
		return false;
	void **v = sm_os_map(burst_bytes(cls)); /* zeroed: both NULL guards */
	if (!v)
		return false;
	struct stack *b[2] = {&tc->alloc_stack[cls], &tc->free_stack[cls]};
	for (int k = 0; k < 2; k++) {
		void **slots = v + 1 + k * (cap + 1);
		uint32_t n = stack_count(b[k]);
		memcpy(slots, b[k]->slots, n * sizeof(void *));
		b[k]->slots = slots;
		stack_set_floor(b[k], slots); /* (held again by sm_stacks_resize) */
		b[k]->top = slots + n;
	}
	tc->burst[cls] = v;
	return true;
}

/* Objects of slabs another thread froze, from a flush: in classes of a cache line or more to
 * the depot, for a thread that allocates them; below a line (which free_stack_in keeps from
 * being reused here) and when the depot is full, back to their slabs. */
#define OTHERS_CHUNK 512
static void others_back(unsigned cls, void **o, uint32_t k)
{
	if (sm_g.caches[cls].size < SUBLINE || !sm_depot_put(cls, o, k))
		sm_free_array(o, k);
}

/* A flush's first steps: a sign of life, a kick for the background thread, and the drain a
 * malloc_trim or a poke asked for (a thread that only frees drains here). Returns false when it
 * drained the thread's stacks: the caller has room then. */
static bool flush_begin(struct tcache *tc, unsigned cls)
{
	sm_bg_kick(); /* its cache is full: it may keep that much if it goes quiet */
	if (unlikely(sm_slow_begin(tc, cls)))
		return false; /* (the drain emptied the full stack too) */
	if (unlikely(sm_sampling))
		sm_sample_wake(tc);
	return true;
}

/* The remote stack of cls is full: its objects go back to their slabs, grouped by slab. */
void sm_flush_remote(struct tcache *tc, unsigned cls)
{
	if (!flush_begin(tc, cls))
		return;
	struct stack *r = &tc->remote_stack[cls];
	sm_free_array(r->slots, stack_count(r));
	r->top = r->slots;
}

/* The free stack of cls is full: if malloc's stack is empty, they swap; if the class has not
 * grown yet, both stacks grow to cap_grown; if they have, and the older half holds only
 * objects of this thread's own slabs, in runs of a page (bursts of its own objects), to
 * cap_burst; else the older half goes back to the slabs. While the process has one thread,
 * every slab is that thread's own: the split by owner is skipped. */
void sm_flush(struct tcache *tc, unsigned cls)
{
	if (!flush_begin(tc, cls))
		return;
	struct stack *b = &tc->free_stack[cls];
	if (tc->alloc_stack[cls].top == tc->alloc_stack[cls].slots) { /* malloc's stack is empty: these
							      * objects become it */
		stack_swap(&tc->alloc_stack[cls], b);
		if (unlikely(tc->smp_armed))
			sm_sample_arm(&tc->alloc_stack[cls], 0);
		return;
	}
	uint32_t count = stack_count(b), n = count / 2 ? count / 2 : count;
	if (count < sm_g.caches[cls].cap_grown) {
		sm_stacks_resize(tc, cls, sm_g.caches[cls].cap_grown);
		return;
	}
	/* the older half: this thread's own objects back to their slabs, to be taken again;
	 * those of slabs another thread froze through others[] (others_back) */
	void *others[OTHERS_CHUNK];
	uint32_t k = 0, own = 0, runs = 0, foreign = 0;
	uintptr_t page = 1; /* the last object's page (1: none yet) and whether it is ours */
	bool mine = false;
	if (!__atomic_load_n(&sm_second_thread, __ATOMIC_RELAXED)) {
		/* the only thread: every slab is its own; the runs only for the burst test */
		own = n;
		if (count < sm_g.caches[cls].cap_burst)
			for (uint32_t i = 0; i < n && runs * 4 <= n; i++)
				if (((uintptr_t)b->slots[i] ^ page) >> SPAGE_SHIFT)
					runs++, page = (uintptr_t)b->slots[i];
	}
	for (uint32_t i = own; i < n; i++) {
		void *o = b->slots[i];
		if (((uintptr_t)o ^ page) >> SPAGE_SHIFT) { /* a slab's objects come in runs */
			runs++;
			page = (uintptr_t)o;
			mine = __atomic_load_n(&slab_of(page)->frozen_by, __ATOMIC_RELAXED) == tc->id;
		}
		if (mine) {
			b->slots[own++] = o;
		} else {
			others[k++] = o;
			if (k == OTHERS_CHUNK) {
				others_back(cls, others, k);
				foreign += k;
				k = 0;
			}
		}
	}
	/* all own (and in place), in runs of 4 or more of a page: a burst, whose objects a
	 * few slabs hold, not frees in random order, which would leave a cached object in
	 * every other slab and keep the slabs from emptying */
	if (!foreign && !k && runs * 4 <= n && count < sm_g.caches[cls].cap_burst &&
	    burst_stacks(tc, cls)) {
		sm_stacks_resize(tc, cls, sm_g.caches[cls].cap_burst);
		return;
	}
	if (k)
		others_back(cls, others, k);
	sm_free_array(b->slots, own);
	memmove(b->slots, b->slots + n, (count - n) * sizeof(void *));
	b->top -= n;
}

/* The spill chain back to the active slab s. Pushed whole where it can be, unwalked: a
 * thread's exit or a trim would otherwise follow every link, a cache miss each. What other
 * threads pushed meanwhile is taken, and pushed after it. */
static void spill_back(struct source *source, const struct cache *c)
{
	struct slab *s = source->active;
	void *o = source->spill, *taken[4];
	uint32_t n = source->nspill, nt = 0, k;
	while (o && s && nt < 4) {
		if (sm_slab_put_back(s, o, n))
			o = NULL;
		else if ((taken[nt] = sm_slab_take_all(s, &k)))
			nt++;
	}
	sm_free_chain(o, c->fpoff); /* (no active slab, or a busy one: walked) */
	for (uint32_t i = 0; i < nt; i++)
		sm_free_chain(taken[i], c->fpoff);
	source->spill = NULL;
	source->nspill = 0;
}

/* Return the objects of c on the allocation stack b and the free stack f (NULL: none), its
 * spill chain and its active slab (unfrozen) to the slabs. The spill goes first: the stacks'
 * pushes would make the slab's list non-empty (spill_back).
 * A size class's allocation stack may hold carved objects with ZERO_KEY: sm_free_array writes
 * their links and SLAB_KEY. (A typed cache's word 1 may be its objects' constructed state:
 * never touched.) */
void sm_drop(struct stack *b, struct stack *f, struct source *source, const struct cache *c)
{
	spill_back(source, c);
	if (f) {
		sm_free_array(f->slots, stack_count(f));
		f->top = f->slots;
	}
	sm_free_array(b->slots, stack_count(b)); /* (ZERO_KEYs become SLAB_KEYs) */
	b->top = b->slots;
	if (source->active)
		sm_slab_unfreeze(source->active);
	source->active = NULL;
}

