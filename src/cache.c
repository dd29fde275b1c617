/* cache.c: the heart of the engine: refilling and flushing thread caches, the slabs' shared
 * freelists, partial lists and empty slabs. SLUB's design in user space.
 *
 * DATA STRUCTURES
 *   thread (TLS, struct tcache)          cache (one per size class)       slab (in region header)
 *   bin[c].slots[0..top)    = objects     lock                             start, size, objects
 *   fbin[c] (frees), bin[c].lim           partial <-> slab <-> slab        carved (owner only)
 *   rbin[c] (others' sub-line objects)
 *   src[c].spill -> o -> o (encoded chain; src[c].nspill of them)
 *   src[c].active ------------------------------------------------------> word = {freelist,
 *                                                                                 counters}
 *   A thread keeps for class c two stacks of objects (its "sheaves"): malloc pops bin[c], free
 *   pushes fbin[c]; each holds objects of any slabs of c, at most cap of them (cap_grown once
 *   fbin[c] has overflowed or c has refilled twice; cap_burst, in arrays of their own,
 *   tc->burst[c], once fbin[c] overflows again with only objects of the thread's own slabs on
 *   it, in runs of a page: both stacks grow, until malloc_trim). When bin[c] runs dry the two
 *   arrays swap (class_swap); when fbin[c] fills they swap if bin[c] is empty, else they grow,
 *   else fbin[c]'s older half goes back, grouped by slab (sm_flush). Excepted: in classes
 *   below a cache line, once a second thread has a cache, each swap first moves fbin[c]'s
 *   objects of slabs another thread froze last (slab->owner != fbin.key) to rbin[c], whence
 *   they go back to their slabs when it fills, so a thread never reuses a small object next to
 *   ones another thread writes (passive false sharing). Objects in a bin or a spill chain
 *   count as "in use" for their slabs. An empty bin with an empty fbin is refilled from the
 *   active slab: its spill, its shared freelist (take-all), its untouched objects (carve). A
 *   slab whose freelist holds every object it handed out (taken all by its owner, or frozen
 *   empty) starts over: the chain is dropped unread and the objects are carved again, in
 *   address order.
 *
 * THE SHARED WORD: slab->word = { lo: freelist head, hi: counters = inuse (bits 0-31) |
 *   frozen (bit 32) }, 16-byte aligned, changed only with cas16() (lock cmpxchg16b).
 *   inuse counts objects that are not on the slab's shared freelist and, unless the slab is
 *   frozen, not untouched (objects [carved, objects) are held by the owner while frozen).
 *   Only two operations change a shared freelist lock-free, so none can suffer ABA:
 *     push a chain (any thread):   {f, c} -> {head (tail->next = f), c - n}      sm_push_chain
 *     take it all (the owner):     {f, c} -> {NULL, frozen | objects}     sm_slab_take_all
 *   The other CASes change only counters or freeze: freeze from the partial list (take all +
 *   set frozen, under the cache lock), unfreeze a full slab ({NULL, frozen|objects} ->
 *   {NULL, objects}) and unfreeze at thread exit (under the cache lock).
 *
 * SLAB STATES (the one thread whose CAS makes a transition carries it out)
 *   state        who pops                  where frees go                       which list
 *   active       owner thread, via take-all any thread: shared list (push)      none
 *   (frozen)     into its bin               (every thread: its own bin first)
 *   partial      a thread that freezes it   shared list (push)                   cache partial
 *   full         nobody                     push; the first one: -> partial      none
 *   empty        -                          -                                    partial (up to
 *                                                                  EMPTY_RESERVE), else freed
 *   A push that would change the list state of an unfrozen slab (full -> partial, anything ->
 *   empty) takes the cache lock before its CAS, as SLUB does, so list changes happen in the
 *   order of the CASes that decided them. Freezing from the partial list also holds the lock.
 *
 * WHO WRITES WHAT
 *   tcache: its thread only (plain loads and stores; no atomics on the fastpath); its typed-
 *   cache state also by a thread destroying that cache, once the owner is quiet (typed.c);
 *   the orphan tcaches (alloc.c, typed.c) under their locks. Other threads' statistics read
 *   bin tops with relaxed loads, as a snapshot (stats.c). Slot memory: a pool, block_lock.
 *   slab line 0: fixed at creation (tail pages get copies; start last, and cleared first at
 *   release: struct slab), but for owner (every page), written by the thread that freezes the
 *   slab and read by any thread with relaxed atomics (class_swap: a stale value only keeps an
 *   object or sends it to the rbin). sm_subline_shared: relaxed atomics, set by the second
 *   thread's setup, before that thread allocates: a thread holding another's object got it
 *   later, so its loads see the flag. Line 1 past the word: carved by the freezing owner;
 *   freezer (head) by the freezing thread, read relaxed (a stale value only picks the depot
 *   or the slab).
 *   slab->word: cas16 only. next/prev/on_partial, cache partial/nr_*: under the cache lock
 *   (partial is also peeked without it, relaxed, and checked again under it).
 *   region free_mask/dirty_mask/map/list: under the page lock (region.c).
 *   A debug cache (debug.c) has no bins: its dsrc is its own, under its dlock.
 *   A full bin's older half goes to the class's depot (depot.c) when it has room: objects
 *   there are in use for their slabs, like those in bins, until a refill takes them.
 * LOCK ORDER: a thread that holds one of these locks takes only locks further on:
 *   typed.c: orphan -> registry -> table -> alloc.c: orphan -> typed caches' locks -> block ->
 *   depots -> each class: debug lock, then cache lock -> page -> large -> per-CPU chunks ->
 *   pcpu_ref's exit lock.
 *   (A typed cache's ctor may malloc under typed.c's orphan lock; a census takes the orphans
 *   one at a time.) No engine lock is held while stdio runs: stdio takes its own locks, and
 *   may call malloc while it holds them.
 * FORK (src/fork.c): in a multi-threaded process, prepare takes glibc's stdio list lock, then
 *   every lock above in this order; the parent releases them; the child re-initialises them.
 *   The list lock comes first because a thread may hold a FILE's lock and wait in malloc for
 *   an engine lock while another holds the list lock and waits for that FILE (fflush(NULL)):
 *   glibc orders its own malloc's locks after the list lock too. In a single-threaded process
 *   prepare takes nothing, so a signal handler may fork even during a fork. Not taken: the
 *   statistics' scratch locks (stats.c), which a child simply frees, and the per-object locks
 *   of pcpu_counter and pcpu_ref, which are the program's objects, as its mutexes are.
 */
#include <sched.h>
#include <string.h>

#include "internal.h"

void sm_lock_slow(sm_lock_t *l)
{
	for (unsigned spins = 0;; spins++) {
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED)) {
			if (spins++ < 64)
				cpu_relax();
			else
				sched_yield();
		}
		if (!__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
			return;
	}
}

static inline dword_t word_read(struct slab *s)
{
	dword_t w;
	w.lo = __atomic_load_n(&s->word.lo, __ATOMIC_RELAXED);
	w.hi = __atomic_load_n(&s->word.hi, __ATOMIC_RELAXED);
	return w; /* may be torn: every user validates it with cas16 */
}

/* ---- partial list: circular, partially used slabs at the head, empty ones at the tail ---- */
static void partial_add(struct cache *c, struct slab *s, bool at_tail)
{
	struct slab *h = c->partial;
	if (!h) {
		s->next = s->prev = s;
		__atomic_store_n(&c->partial, s, __ATOMIC_RELAXED);
	} else {
		s->next = h;
		s->prev = h->prev;
		h->prev->next = s;
		h->prev = s;
		if (!at_tail)
			__atomic_store_n(&c->partial, s, __ATOMIC_RELAXED);
	}
	s->on_partial = 1;
	c->nr_partial++;
}

static void partial_remove(struct cache *c, struct slab *s)
{
	if (s->next == s) {
		__atomic_store_n(&c->partial, NULL, __ATOMIC_RELAXED);
	} else {
		s->prev->next = s->next;
		s->next->prev = s->prev;
		if (c->partial == s)
			__atomic_store_n(&c->partial, s->next, __ATOMIC_RELAXED);
	}
	s->on_partial = 0;
	c->nr_partial--;
}

/* An unfrozen slab just reached inuse == 0 (cache lock held). Keep it as a reserve, or unlist
 * it and return true: the caller frees its pages after dropping the lock. */
static bool slab_became_empty(struct cache *c, struct slab *s)
{
	if (c->nr_empty < sm_opt.min_partial && !c->dead) { /* a destroyed cache keeps none */
		if (s->on_partial)
			partial_remove(c, s);
		partial_add(c, s, true);
		c->nr_empty++;
		return false;
	}
	if (s->on_partial)
		partial_remove(c, s);
	return true;
}

static void slab_release(struct cache *c, struct slab *s)
{
	sm_count(c, EV_SLAB_FREE, 1);
	sm_pages_free(s);
	if (__atomic_sub_fetch(&c->nr_slabs, 1, __ATOMIC_ACQ_REL) == 0 && c->cls == NCLASS)
		sm_typed_gone(c);
}

/* Free every empty slab c keeps on its partial list (kmem_cache_shrink). */
void sm_cache_shrink(struct cache *c)
{
	for (;;) {
		sm_lock(&c->lock);
		struct slab *s = c->partial;
		for (uint32_t i = 0; s && i < c->nr_partial; i++, s = s->next)
			if (SLAB_INUSE(s->word.hi) == 0)
				break;
		if (!s || SLAB_INUSE(s->word.hi) != 0) {
			sm_unlock(&c->lock);
			return;
		}
		/* empty and unfrozen: nobody holds one of its objects, so nobody frees into it */
		partial_remove(c, s);
		c->nr_empty--;
		sm_unlock(&c->lock);
		slab_release(c, s);
	}
}

/* Push the chain head..tail (n objects of s, linked with fp_set) onto s's shared freelist. */
void sm_push_chain(struct slab *s, void *head, void *tail, uint32_t n)
{
	struct cache *c = s->cache;
	bool locked = false, was_full, frozen;
	dword_t old = word_read(s), new;
	for (;;) {
		uint32_t inuse = SLAB_INUSE(old.hi);
		if (unlikely(inuse < n))
			sm_fatal_in("double free (its slab has fewer objects in use than freed)",
				    head, c);
		fp_set(tail, (void *)old.lo, c->fpoff);
		new.lo = (uintptr_t)head;
		new.hi = old.hi - n;
		frozen = old.hi & SLAB_FROZEN;
		was_full = inuse == s->objects;
		if (!frozen && (was_full || inuse == n) && !locked) {
			sm_lock(&c->lock);
			locked = true;
			old = word_read(s);
			continue;
		}
		if (cas16(&s->word, &old, new))
			break;
		sm_count(c, EV_CAS_RETRY, 1);
	}
	if (!locked)
		return;
	bool release = false;
	if (!frozen) {
		if (SLAB_INUSE(new.hi) == 0)
			release = slab_became_empty(c, s);
		else if (was_full)
			partial_add(c, s, false);
	}
	sm_unlock(&c->lock);
	if (release)
		slab_release(c, s);
}

void sm_free_to_slab(struct slab *s, void *obj)
{
	sm_push_chain(s, obj, obj, 1);
}

/* The owner takes the whole shared freelist of its frozen slab s. */
void *sm_slab_take_all(struct slab *s, uint32_t *n)
{
	dword_t old = word_read(s), new;
	for (;;) {
		if (!old.lo)
			return NULL;
		new.lo = 0;
		new.hi = SLAB_FROZEN | s->objects;
		if (cas16(&s->word, &old, new))
			break;
		sm_count(s->cache, EV_CAS_RETRY, 1);
	}
	*n = s->objects - SLAB_INUSE(old.hi);
	return (void *)old.lo;
}

/* Unfreeze the owner's exhausted slab (nothing shared, nothing untouched): it becomes full and
 * unlisted. False when a remote free got in first (take it instead). */
static bool unfreeze_full(struct slab *s)
{
	dword_t old = {.lo = 0, .hi = SLAB_FROZEN | s->objects};
	dword_t new = {.lo = 0, .hi = s->objects};
	return cas16(&s->word, &old, new);
}

/* Take a slab off the partial list and freeze it: its shared freelist becomes *head. */
static struct slab *freeze_partial(struct cache *c, void **head, uint32_t *n)
{
	if (!__atomic_load_n(&c->partial, __ATOMIC_RELAXED))
		return NULL;
	sm_lock(&c->lock);
	struct slab *s = c->partial;
	if (!s) {
		sm_unlock(&c->lock);
		return NULL;
	}
	partial_remove(c, s);
	dword_t old = word_read(s), new;
	do {
		new.lo = 0;
		new.hi = SLAB_FROZEN | s->objects;
	} while (!cas16(&s->word, &old, new));
	if (SLAB_INUSE(old.hi) == 0)
		c->nr_empty--;
	sm_unlock(&c->lock);
	*head = (void *)old.lo;
	*n = s->carved - SLAB_INUSE(old.hi);
	return s;
}

/* A free pointer read from obj (of slab s) must be NULL or an object of s: anything else is a
 * corrupted link (a write after free), reported before it is followed. */
static SM_COLD SM_NORETURN void bad_link(const struct slab *s, uintptr_t obj)
{
	sm_fatal_in("corrupted freelist link (written after free?)", (void *)obj, s->cache);
}

/* Whether next is not NULL and not an object of the slab whose start, span (objects * size),
 * inv and qbad these are (inside the span, is_object's one test is exact). */
static inline bool link_bad(uintptr_t next, uintptr_t start, uint64_t span, uint64_t inv,
			    uint64_t qbad)
{
	return next && (next - start >= span || ((next - start) * inv) & qbad);
}

static inline void *checked_next(struct slab *s, void *obj, uint32_t fpoff)
{
	uintptr_t next = (uintptr_t)fp_get(obj, fpoff);
	if (unlikely(link_bad(next, (uintptr_t)s->start, (uint64_t)s->objects * s->size, s->inv,
			      s->qbad)))
		bad_link(s, (uintptr_t)obj);
	return (void *)next;
}

/* Move up to n objects of a spill chain (objects of the active slab) to out[]; returns how
 * many. checked_next's checks, with the slab's fields in registers: each step's chain of
 * dependent work is the load of the link and one xor (the key, secret ^ swab(slot), comes
 * from the object's address alone). */
static uint32_t take_spill(struct cache *c, struct src *src, void **out, uint32_t n)
{
	const struct slab *s = src->active;
	uintptr_t o = (uintptr_t)src->spill, start = (uintptr_t)s->start, secret = sm_g.secret;
	uint64_t span = (uint64_t)s->objects * s->size, inv = s->inv, qbad = s->qbad;
	uint32_t fpoff = c->fpoff, k = 0;
	for (; o && k < n; k++) {
		out[k] = (void *)o;
		uintptr_t slot = o + fpoff, key = secret ^ __builtin_bswap64(slot);
		uintptr_t next = *(const uintptr_t *)slot ^ key;
		if (unlikely(link_bad(next, start, span, inv, qbad)))
			bad_link(s, o);
		o = next;
	}
	src->spill = (void *)o;
	src->nspill -= k;
	return k;
}

/* The owner has just taken s's whole freelist into src's spill (take-all or freeze). When
 * that is every object s has handed out since it was made (none is in a bin or in use), s
 * starts over as a new slab: the chain is dropped unread and the objects are carved again, in
 * address order, with no link to load (a burst of frees and mallocs larger than the thread
 * stacks otherwise walks the chain at the latency of a cache miss per object). Not for caches
 * with a ctor (an object is constructed once, when first carved) or debug caches (every link
 * they follow is checked). */
static void restart_if_all_free(const struct cache *c, struct slab *s, struct src *src)
{
	if (src->nspill != s->carved || c->ctor || c->debug)
		return;
	src->spill = NULL;
	src->nspill = 0;
	s->carved = 0;
}

/* ---- other threads' sub-line objects (class_swap, internal.h) ---- */
int sm_subline_shared; /* set when a second thread gets a cache (sm_thread_setup) */

/* f (a sub-line fbin, f->key the thread's id) is about to become malloc's stack: its objects
 * of slabs another thread froze last go to the rbin (sent back to their slabs when it is full
 * or closed), the others keep their order. */
void sm_sort_foreign(struct bin *f)
{
	struct bin *r = f + (offsetof(struct tcache, rbin) - offsetof(struct tcache, fbin)) /
				    sizeof(struct bin);
	void **keep = f->slots;
	uintptr_t page = 1; /* the last object's page (1: none yet) and whether it is ours */
	bool ours = false;
	for (void **o = f->slots; o != f->top; o++) {
		uintptr_t a = (uintptr_t)*o;
		if ((a ^ page) >> SPAGE_SHIFT) { /* one slab's objects often come in a row */
			page = a;
			ours = __atomic_load_n(&page_desc(a)->owner, __ATOMIC_RELAXED) == f->key;
		}
		if (ours) {
			*keep++ = *o;
			continue;
		}
		if (r->top == r->lim) { /* full (or closed: SLUBMALLOC_STATS=1) */
			sm_free_array(r->slots, bin_count(r));
			r->top = r->slots;
			if (r->top == r->lim) {
				sm_free_array(o, 1);
				continue;
			}
		}
		*r->top++ = *o;
	}
	f->top = keep;
}

/* Put between 1 and want objects of c into out[], from one source, in this order: the spill
 * chain, the active slab's shared freelist (take-all; or, when that is every object the slab
 * handed out, the slab starts over), its untouched objects (carve, running the ctor on them),
 * a partial slab (which may start over too), a new slab. Returns how many; 0 only when memory is
 * exhausted (ENOMEM). src is the calling thread's for c, owner its id: a slab it
 * freezes records it (for objects smaller than a cache line; see class_swap). */
uint32_t sm_fill(struct cache *c, uint16_t owner, struct src *src, void **out, uint32_t want)
{
	uint32_t n;
	for (;;) {
		if (src->spill)
			return take_spill(c, src, out, want);
		struct slab *s = src->active;
		if (s) {
			if ((src->spill = sm_slab_take_all(s, &n))) {
				src->nspill = n;
				sm_count(c, EV_REFILL_TAKEALL, 1);
				restart_if_all_free(c, s, src);
				continue;
			}
			if ((n = sm_slab_carve(s, out, want))) {
				if (c->ctor)
					for (uint32_t i = 0; i < n; i++)
						c->ctor(out[i]);
				return n;
			}
			if (!unfreeze_full(s))
				continue;
			src->active = NULL;
		}
		s = freeze_partial(c, &src->spill, &n);
		src->nspill = s ? n : 0;
		if (s)
			restart_if_all_free(c, s, src);
		if (!s && !(s = sm_slab_new(c)))
			return 0;
		for (unsigned i = 0; i < s->pages; i++)
			__atomic_store_n(&s[i].owner, (uint16_t)(c->size < 64 ? owner : 0), __ATOMIC_RELAXED);
		__atomic_store_n(&s->freezer, owner, __ATOMIC_RELAXED);
		src->active = s;
	}
}

/* The thread's bin for cls and its free stack are empty (the caller tried class_swap; the
 * orphan's frees never reach its free stack): fill half of the bin. One object for the
 * caller, or NULL. */
void *sm_refill(struct tcache *tc, unsigned cls)
{
	if (unlikely(tc->trim_gen != __atomic_load_n(&sm_trim_gen, __ATOMIC_RELAXED)))
		sm_trim_self(tc);
	struct bin *b = &tc->bin[cls];
	struct cache *c = &sm_g.caches[cls];
	if (++tc->src[cls].refills == 2 && bin_cap(b) == c->cap) /* not the first use: a
								     * producer; larger refills */
		sm_bins_resize(tc, cls, c->cap_grown);
	uint32_t want = bin_cap(b) / 2 ? bin_cap(b) / 2 : 1, got = 0;
	if (!tc->src[cls].spill) /* another thread's full bin first: no links to follow */
		got = sm_depot_take(cls, b->slots, want);
	if (!got)
		got = sm_fill(c, tc->id, &tc->src[cls], b->slots, want);
	b->top = b->slots + got;
	if (!got)
		return NULL;
	sm_count(c, EV_ALLOC_SLOW, 1);
	return *--b->top;
}

/* n objects of c into out[]: runs from the top of the bin b, then refills (straight into out[]
 * when more than a bin's worth is left). Returns how many it got: n, or fewer when memory ran
 * out (the caller gives those back). src is the thread's for c, as b is. */
size_t sm_take_n(struct cache *c, uint16_t owner, struct bin *b, struct bin *f, struct src *src,
		 void **out, size_t n)
{
	size_t got = 0;
	for (;;) {
		uint32_t have = bin_count(b), k = have < n - got ? have : (uint32_t)(n - got);
		b->top -= k;
		sm_copy_ptrs(out + got, b->top, k);
		if ((got += k) == n)
			return n;
		if (f && class_swap(b, f)) /* the free stack's objects next (typed: key 0) */
			continue;
		uint32_t cap = bin_cap(b);
		if (n - got < cap) { /* refill the bin by half and go round */
			b->top = b->slots + sm_fill(c, owner, src, b->slots, cap / 2 ? cap / 2 : 1);
			if (b->top == b->slots)
				return got;
			continue;
		}
		size_t want = n - got < UINT32_MAX ? n - got : UINT32_MAX;
		uint32_t f = sm_fill(c, owner, src, out + got, (uint32_t)want);
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
	uint32_t used;
};
_Static_assert(FLUSH_GROUPS <= 32 && !(FLUSH_GROUPS & (FLUSH_GROUPS - 1)),
	       "one bit of used per group, a mask for the index");

static void detached_push(struct detached *d)
{
	for (uint32_t m = d->used; m; m &= m - 1) {
		struct group *g = &d->g[__builtin_ctz(m)];
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
		d->used |= 1u << i;
	}
	return g;
}

static inline void detached_add(struct detached *d, void *o)
{
	struct slab *s = slab_of((uintptr_t)o);
	struct group *g = detached_group(d, s);
	fp_set(o, g->head, s->cache->fpoff);
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

/* The pointers of an array in a row that share a page (so a slab) are chained first, the
 * chain's head in a register (sm_g.secret too: fp_set's encoding, inline), and the chain
 * joins its slab's group in one step. */
void sm_free_array(void **v, size_t n)
{
	struct detached d;
	d.used = 0;
	uintptr_t secret = sm_g.secret;
	for (void **at = v, **end = v + n; at < end;) {
		/* the links go into objects long freed, most of them out of the cache by now */
		if (at + FLUSH_PREFETCH < end)
			__builtin_prefetch(at[FLUSH_PREFETCH], 1);
		uintptr_t first = (uintptr_t)*at++;
		if (!first)
			continue;
		struct slab *s = slab_of(first);
		uint32_t fpoff = s->cache->fpoff;
		uintptr_t head = first, a;
		void **run = at - 1;
		/* the run: the next pointers in first's page (a NULL is in none of ours) */
		for (; at < end && !(((a = (uintptr_t)*at) ^ first) >> SPAGE_SHIFT); at++) {
			uintptr_t slot = a + fpoff;
			*(uintptr_t *)slot = head ^ secret ^ __builtin_bswap64(slot);
			head = a;
		}
		uint32_t k = (uint32_t)(at - run);
		struct group *g = detached_group(&d, s);
		fp_set((void *)first, g->head, fpoff); /* the run's tail, before the group's chain */
		if (!g->head)
			g->tail = (void *)first;
		g->head = (void *)head;
		g->n += k;
	}
	detached_push(&d);
}

/* Both stacks of cls get the room of cap slots (their arrays have cap_grown, or cap_burst once
 * tc->burst[cls] holds them). */
void sm_bins_resize(struct tcache *tc, unsigned cls, uint32_t cap)
{
	tc->bin[cls].lim = tc->bin[cls].slots + cap;
	tc->fbin[cls].lim = tc->fbin[cls].slots + cap;
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
	struct bin *b[2] = {&tc->bin[cls], &tc->fbin[cls]};
	for (int k = 0; k < 2; k++) {
		void **slots = v + 1 + k * (cap + 1);
		uint32_t n = bin_count(b[k]);
		memcpy(slots, b[k]->slots, n * sizeof(void *));
		b[k]->slots = slots;
		b[k]->top = slots + n;
	}
	tc->burst[cls] = v;
	return true;
}

/* Objects of slabs another thread froze, from a flush: in classes of a cache line or more to
 * the depot, for a thread that allocates them; below a line (which class_swap keeps from
 * being reused here) and when the depot is full, back to their slabs. */
#define OTHERS_CHUNK 512
static void others_back(unsigned cls, void **o, uint32_t k)
{
	if (sm_g.caches[cls].size < 64 || !sm_depot_put(cls, o, k))
		sm_free_array(o, k);
}

/* The free stack of cls is full: if malloc's stack is empty, they swap; if the class has not
 * grown yet, both stacks grow to cap_grown; if they have, and the older half holds only
 * objects of this thread's own slabs, in runs of a page (bursts of its own objects), to
 * cap_burst; else the older half goes back to the slabs. */
void sm_flush(struct tcache *tc, unsigned cls)
{
	if (unlikely(tc->trim_gen != __atomic_load_n(&sm_trim_gen, __ATOMIC_RELAXED))) {
		sm_trim_self(tc); /* drains this bin too */
		return;
	}
	struct bin *b = &tc->fbin[cls];
	if (tc->bin[cls].top == tc->bin[cls].slots) { /* malloc's stack is empty: these
							      * objects become it */
		class_swap(&tc->bin[cls], b);
		return;
	}
	uint32_t count = bin_count(b), n = count / 2 ? count / 2 : count;
	if (count < sm_g.caches[cls].cap_grown) {
		sm_bins_resize(tc, cls, sm_g.caches[cls].cap_grown);
		return;
	}
	/* the older half: this thread's own objects back to their slabs, to be taken again;
	 * those of slabs another thread froze through others[] (others_back) */
	void *others[OTHERS_CHUNK];
	uint32_t k = 0, own = 0, runs = 0, foreign = 0;
	uintptr_t page = 1; /* the last object's page (1: none yet) and whether it is ours */
	bool mine = false;
	for (uint32_t i = 0; i < n; i++) {
		void *o = b->slots[i];
		if (((uintptr_t)o ^ page) >> SPAGE_SHIFT) { /* a slab's objects come in runs */
			runs++;
			page = (uintptr_t)o;
			mine = __atomic_load_n(&slab_of(page)->freezer, __ATOMIC_RELAXED) == tc->id;
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
		sm_bins_resize(tc, cls, sm_g.caches[cls].cap_burst);
		return;
	}
	if (k)
		others_back(cls, others, k);
	sm_free_array(b->slots, own);
	memmove(b->slots, b->slots + n, (count - n) * sizeof(void *));
	b->top -= n;
}

/* ---- slot memory: one block per thread, all of one size, recycled through a pool ---- */
static sm_lock_t block_lock;
static void **block_pool;   /* blocks linked through their first word */

static size_t block_words(void)
{
	size_t w = 0;
	for (unsigned i = 0; i < NCLASS; i++)
		w += 2 * (sm_g.caches[i].cap_grown + 1) + sm_g.caches[i].cap + 1; /* bin, fbin
										    * and rbin */
	return w;
}

static void **block_get(void)
{
	sm_lock(&block_lock);
	void **blk = block_pool;
	if (blk)
		block_pool = *blk;
	sm_unlock(&block_lock);
	return blk ? blk : sm_os_map(block_words() * sizeof(void *));
}

static void block_put(void **blk)
{
	sm_lock(&block_lock);
	*blk = block_pool;
	block_pool = blk;
	sm_unlock(&block_lock);
}

void sm_thread_setup(struct tcache *tc)
{
	void **blk = block_get();
	if (!blk) {
		/* no memory for a cache now: this call's frees go straight to slabs, its mallocs
		 * to the orphan; the state stays T_NEW, so a later call tries again */
		return;
	}
	tc->block = blk;
	static uint32_t next_id;
	uint32_t serial = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
	tc->id = (uint16_t)(serial % 65534 + 1);
	if (serial && !__atomic_load_n(&sm_subline_shared, __ATOMIC_RELAXED))
		__atomic_store_n(&sm_subline_shared, 1, __ATOMIC_RELAXED); /* a second thread */
	tc->trim_gen = __atomic_load_n(&sm_trim_gen, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < NCLASS; i++) {
		struct bin *bins[3] = {&tc->bin[i], &tc->fbin[i], &tc->rbin[i]};
		for (int k = 0; k < 3; k++) {
			if (blk[0]) /* the guard before slots[0]; a fresh block's is zero already,
				     * and a page only read stays out of the resident set */
				blk[0] = NULL;
			/* a debug cache has no bins: its calls all take the slow path */
			bin_init(bins[k], blk + 1, sm_g.caches[i].debug ? 0 : sm_g.caches[i].cap);
			bins[k]->key = sm_g.caches[i].size < 64 ? tc->id : 0;
			if (sm_opt.stats && k == 2) /* every free to the counted slow path: the
						     * slabs point free() at the rbin (slab.c),
						     * with no room; malloc's fastpath stays */
				bin_close(bins[k]);
			blk += (k < 2 ? sm_g.caches[i].cap_grown : sm_g.caches[i].cap) + 1;
		}
	}
	tc->state = T_LIVE;
}

/* Hand the active slab back at thread exit: unfreeze it; it goes where its state says. */
static void unfreeze_active(struct slab *s)
{
	struct cache *c = s->cache;
	uint32_t untouched = s->objects - s->carved;
	sm_lock(&c->lock);
	dword_t old = word_read(s), new;
	do {
		new.lo = old.lo;
		new.hi = (old.hi & ~SLAB_FROZEN) - untouched;
	} while (!cas16(&s->word, &old, new));
	bool release = false;
	if (SLAB_INUSE(new.hi) == 0)
		release = slab_became_empty(c, s);
	else if (new.lo || untouched)
		partial_add(c, s, false);
	sm_unlock(&c->lock);
	if (release)
		slab_release(c, s);
}

/* Return a bin's objects, its spill chain and its active slab (unfrozen) to the slabs. */
void sm_drop(struct bin *b, struct src *src, uint32_t fpoff)
{
	sm_free_array(b->slots, bin_count(b));
	b->top = b->slots;
	sm_free_chain(src->spill, fpoff);
	src->spill = NULL;
	src->nspill = 0;
	if (src->active)
		unfreeze_active(src->active);
	src->active = NULL;
}

/* Thread exit: every cached object goes back to its slab, every active slab is unfrozen.
 * Objects other threads still hold stay reachable through their slabs' shared lists. */
void sm_thread_teardown(struct tcache *tc)
{
	sm_typed_thread_exit(tc);
	for (unsigned i = 0; i < NCLASS; i++) {
		sm_free_array(tc->rbin[i].slots, bin_count(&tc->rbin[i]));
		bin_close(&tc->rbin[i]);
		sm_free_array(tc->fbin[i].slots, bin_count(&tc->fbin[i]));
		bin_close(&tc->fbin[i]);
		sm_drop(&tc->bin[i], &tc->src[i], 0);
		bin_close(&tc->bin[i]);
		if (tc->burst[i]) { /* closed stacks are never read: their arrays can go */
			sm_os_unmap(tc->burst[i], burst_bytes(i));
			tc->burst[i] = NULL;
		}
	}
	if (tc->block)
		block_put(tc->block);
	tc->block = NULL;
}

void sm_caches_lock_all(void)
{
	sm_lock(&block_lock);
	sm_depot_lock_all();
	for (unsigned i = 0; i < NCLASS; i++) {
		sm_lock(&sm_g.caches[i].dlock);
		sm_lock(&sm_g.caches[i].lock);
	}
}

void sm_caches_unlock_all(bool reinit)
{
	(void)reinit; /* the child's lock words are plain ints: unlocking is re-initialising */
	for (unsigned i = 0; i < NCLASS; i++) {
		sm_unlock(&sm_g.caches[i].lock);
		sm_unlock(&sm_g.caches[i].dlock);
	}
	sm_depot_unlock_all();
	sm_unlock(&block_lock);
}
