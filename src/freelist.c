/* freelist.c: the slabs' shared freelists and the caches' partial lists. SLUB's core.
 * The concurrency rules and the lock order of the whole engine are written here, once.
 *
 * THE SHARED WORD
 *   slab->word is 16 bytes: lo is the freelist head, hi the counters.
 *   The counters are inuse (bits 0-31) and frozen (bit 32).
 *   The word is 16-byte aligned and changed only with cas16() (lock cmpxchg16b), but for
 *   the only thread's plain pushes (below).
 *   inuse counts the objects that are not on the slab's shared freelist.
 *   While a slab is frozen, its untouched objects [carved, objects) count as in use too.
 *   A size class's pushed objects carry SLAB_KEY in word 1 (harden.h), written by the pusher
 *   with their links, before its CAS. After a take-all the owner's sweep (tcache.c) reads word 1
 *   of every carved object of the slab, those in use included, with volatile loads. It trusts
 *   no key it has not proved, and writes links only into the chain it took.
 *   Two operations change a shared freelist lock-free, so none can suffer ABA:
 *     push a chain (any thread):  {f, c} -> {head, c - n}, with tail->next = f  (sm_push_chain)
 *     take it all (the owner):    {f, c} -> {NULL, frozen | objects}        (sm_slab_take_all)
 *   The owner also puts back a chain it took, unwalked, as a push onto an empty list:
 *     {NULL, c} -> {head, c - n}, the chain's end NULL                       (sm_slab_put_back)
 *   The only thread pushes with plain stores instead (sm_push_chain_plain, THE ONLY THREAD),
 *   where the push changes no list: {f, c} -> {head, c - n}, lo then hi.
 *   The other CASes change only the counters:
 *     freeze a partial slab (under the cache lock);
 *     unfreeze a full slab: {NULL, frozen | objects} -> {NULL, objects};
 *     unfreeze at thread exit (under the cache lock).
 *
 * SLAB STATES
 *   The thread whose CAS makes a transition carries it out.
 *   active (frozen): its owner thread takes its freelist into a stack; any thread pushes.
 *   A mover (MALLOCX_TCACHE_NONE, defrag.c) is an owner for a moment: it freezes the fullest
 *   partial slab under the cache lock (sm_slab_freeze_fullest), keeps one object, pushes the
 *   rest back and unfreezes it. Its owner id is not written: a stale one only picks a stack.
 *   partial: on the cache's partial list; a thread that needs objects freezes it.
 *   full: on no list; the first push makes it partial.
 *   empty: kept on the partial list (up to EMPTY_RESERVE), else its pages are freed.
 *   A push that changes an unfrozen slab's list state (full -> partial, anything -> empty)
 *   takes the cache lock before its CAS, as SLUB does. So list changes happen in the order of
 *   the CASes that decided them. Freezing from the partial list holds the lock too.
 *
 * THE ONLY THREAD
 *   The first thread to use the slabs is the only one until a second one comes (sm_gate).
 *   While it is, its pushes of whole arrays (sm_free_array) need no atomic: no other thread
 *   reads or writes a slab's word. Each such array is a plain section: plain_depth > 0.
 *   A second thread, before its first use of a slab, sets sm_second_thread, fences, and waits
 *   for plain_depth 0. The only thread sets plain_depth, fences, then reads sm_second_thread.
 *   So either it sees the second thread and pushes with cas16, or the second thread waits
 *   for its plain stores (Dekker's pattern; plain_depth's release, the waiter's acquire).
 *   After that, no section is plain again: sm_second_thread is never cleared.
 *   A thread that forks passes the gate first (fork.c), so no child copies a word half
 *   written by a plain section of another thread.
 *   A plain section takes no lock and waits for nothing, so the gate's wait is short, also
 *   for a thread that holds a lock.
 *
 * WHO WRITES WHAT
 *   struct tcache: its own thread, with plain loads and stores; no atomics on the fastpath.
 *   But a stack's floor: another thread pokes it (stack_poke, a CAS setting its top bit) under
 *   the registry lock; the owner stores it, and reads it off the fastpath, with relaxed atomics.
 *   slow_n: the owner's relaxed stores; the background thread reads it and writes bg_* under the
 *   registry lock.
 *   Its typed-cache part also: a thread destroying that cache, once the owner is quiet
 *   (typed.c). The orphan cache: any thread, under the orphan lock (thread.c).
 *   Other threads' statistics read stack tops with relaxed loads, as a snapshot (stats.c).
 *   Slot memory: a pool under the block lock (thread.c).
 *   Slab line 0 is fixed when the slab is made. Tail pages get copies. start is written last
 *   at creation and cleared first at release (struct slab).
 *   Line 0's subline_owner (every page) is written by the thread that freezes the slab. Any
 *   thread reads it with relaxed atomics: free() picks its stack by it (free_stack_in). A
 *   stale value only keeps an object or sends it to the remote stack. Larger objects' slabs
 *   keep 0, no thread's id.
 *   sm_second_thread: relaxed atomics, set once by the second thread's gate (sm_gate).
 *   plain_depth: the only thread, with relaxed and release stores; the gate reads it.
 *   Line 1, past the word: carved by the freezing owner; frozen_by (head) by the freezing
 *   thread, read relaxed. A stale frozen_by only picks the depot or the slab. zero (head): set
 *   by sm_pages_alloc under the page lock before the slab is published, then read and cleared
 *   by the owner only (carve, start over).
 *   slab->word: cas16 only, but for the only thread's plain pushes (THE ONLY THREAD).
 *   next, prev, on_partial, and the cache's partial and nr_*: under the cache lock. partial is
 *   also peeked without it (relaxed) and checked again under it; so is nr_empty, stored with
 *   relaxed atomics, by malloc_trim (sm_cache_shrink).
 *   A region's free_mask, dirty_mask, map and list: under the page lock (region.c).
 *   The background thread (background.c) takes the page lock, then, apart, the large lock,
 *   then, apart, the registry lock. Its state word changes by atomic exchanges, and a kick
 *   under either lock wakes it with a futex.
 *   A debug cache has no stacks. Its debug_source is its own, under its dlock (debug.c).
 *   A depot's objects count as in use for their slabs, like those in stacks (depot.c).
 *
 * LOCK ORDER
 *   A thread that holds one of these locks takes only locks further on:
 *   unwinder gate -> orphan -> typed registry -> typed table -> typed caches' locks ->
 *   block -> depots ->
 *   each class (debug lock, then cache lock) -> each profile cache (the same) -> page ->
 *   large -> debug quarantine ->
 *   KFENCE pool -> profile table -> per-CPU chunks -> pcpu_ref's exit lock.
 *   The unwinder gate is held only around an unwind (backtrace.c), which may call malloc.
 *   The orphan lock may be taken again by the thread that holds it: a typed cache's ctor may
 *   malloc under it (thread.c). A census takes the orphan alone.
 *   No engine lock is held while stdio runs. stdio takes its own locks and may call malloc
 *   while it holds them.
 *
 * FORK (fork.c)
 *   In a multi-threaded process, prepare takes glibc's stdio list lock, then every lock above,
 *   in this order. The parent releases them. The child re-initialises them.
 *   The locks of options that are off are never taken, and fork skips them: the profile's
 *   caches and table, KFENCE's pool, the debug quarantine.
 *   The list lock comes first. A thread may hold a FILE's lock and wait in malloc for an
 *   engine lock, while another holds the list lock and waits for that FILE (fflush(NULL)).
 *   glibc orders its own malloc's locks after the list lock too.
 *   In a single-threaded process prepare takes nothing, so a signal handler may fork even
 *   during a fork.
 *   The background thread makes a process multi-threaded. The child has none; it starts its
 *   own at its first slow path.
 *   Not taken: the statistics' scratch locks (stats.c), which a child simply frees, and the
 *   locks inside pcpu_counter and pcpu_ref objects, which are the program's, as its mutexes
 *   are.
 */
#include <string.h>

#include "config.h"
#include "depot.h"
#include "engine.h"
#include "freelist.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "stats.h"
#include "typed.h"
#include "types.h"

void sm_lock_slow(sm_lock_t *l)
{
	for (unsigned spins = 0;; spins++) {
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED)) {
			if (spins++ < 64)
				cpu_relax();
			else
				sm_os_yield();
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
		__atomic_store_n(&c->nr_empty, c->nr_empty + 1, __ATOMIC_RELAXED);
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

/* Free every empty slab c keeps on its partial list (kmem_cache_shrink). nr_empty counts them;
 * they were added at the tail (slab_became_empty), so the walk goes backward from there. A
 * malloc_trim with none to free costs a load per cache (nr_empty is stored atomically, under
 * the lock), not a lock or a walk of every partial slab. */
void sm_cache_shrink(struct cache *c)
{
	while (__atomic_load_n(&c->nr_empty, __ATOMIC_RELAXED)) {
		sm_lock(&c->lock);
		struct slab *s = c->nr_empty ? c->partial : NULL;
		if (s) {
			s = s->prev;
			for (uint32_t i = 0; i < c->nr_partial && SLAB_INUSE(s->word.hi) != 0; i++)
				s = s->prev;
		}
		if (!s || SLAB_INUSE(s->word.hi) != 0) {
			sm_unlock(&c->lock);
			return;
		}
		/* empty and unfrozen: nobody holds one of its objects, so nobody frees into it */
		partial_remove(c, s);
		__atomic_store_n(&c->nr_empty, c->nr_empty - 1, __ATOMIC_RELAXED);
		sm_unlock(&c->lock);
		slab_release(c, s);
	}
}

/* ---- the only thread (see THE ONLY THREAD above) ---- */
__thread uint8_t sm_gate_state TLS_IE; /* GATE_NONE, GATE_ONLY or GATE_SHARED */
int sm_second_thread;           /* a second thread passed the gate (never cleared) */
static int gate_taken;          /* a thread became the only thread */
static int plain_depth;         /* the only thread's plain sections in progress */

void sm_gate_pass(void)
{
	int none = 0;
	if (__atomic_compare_exchange_n(&gate_taken, &none, 1, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED)) {
		sm_gate_state = GATE_ONLY;
		return;
	}
	__atomic_store_n(&sm_second_thread, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	while (__atomic_load_n(&plain_depth, __ATOMIC_ACQUIRE))
		cpu_relax();
	sm_gate_state = GATE_SHARED;
}

bool sm_plain_begin(void)
{
	if (sm_gate_state != GATE_ONLY || __atomic_load_n(&sm_second_thread, __ATOMIC_RELAXED))
		return false;
	int d = __atomic_load_n(&plain_depth, __ATOMIC_RELAXED);
	__atomic_store_n(&plain_depth, d + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (likely(!__atomic_load_n(&sm_second_thread, __ATOMIC_RELAXED)))
		return true;
	__atomic_store_n(&plain_depth, d, __ATOMIC_RELEASE);
	return false;
}

void sm_plain_end(void)
{
	int d = __atomic_load_n(&plain_depth, __ATOMIC_RELAXED);
	__atomic_store_n(&plain_depth, d - 1, __ATOMIC_RELEASE);
}

/* Push the chain head..tail (n objects of s, linked with fp_set) onto s's shared freelist. */
void sm_push_chain(struct slab *s, void *head, void *tail, uint32_t n)
{
	sm_gate();
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
	sm_gate();
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

/* The owner of frozen s puts back a chain it took (n objects, NULL-ended) without walking it:
 * only while s's shared freelist is empty, whose end the chain's end then is. False when it is
 * not (take it, and try again). */
bool sm_slab_put_back(struct slab *s, void *head, uint32_t n)
{
	sm_gate();
	dword_t old = word_read(s), new;
	for (;;) {
		if (old.lo)
			return false;
		if (unlikely(SLAB_INUSE(old.hi) < n))
			sm_fatal_in("double free (its slab has fewer objects in use than freed)", head,
				    s->cache);
		new.lo = (uintptr_t)head;
		new.hi = old.hi - n;
		if (cas16(&s->word, &old, new))
			return true;
		sm_count(s->cache, EV_CAS_RETRY, 1);
	}
}

/* Unfreeze the owner's exhausted slab (nothing shared, nothing untouched): it becomes full and
 * unlisted. False when a remote free got in first (take it instead). */
bool sm_slab_unfreeze_full(struct slab *s)
{
	sm_gate();
	dword_t old = {.lo = 0, .hi = SLAB_FROZEN | s->objects};
	dword_t new = {.lo = 0, .hi = s->objects};
	return cas16(&s->word, &old, new);
}

/* Take s off c's partial list (its lock held, and released here) and freeze it: its shared
 * freelist becomes *head, of *n objects. */
static struct slab *freeze_listed(struct cache *c, struct slab *s, void **head, uint32_t *n)
{
	sm_gate();
	partial_remove(c, s);
	dword_t old = word_read(s), new;
	do {
		new.lo = 0;
		new.hi = SLAB_FROZEN | s->objects;
	} while (!cas16(&s->word, &old, new));
	if (SLAB_INUSE(old.hi) == 0)
		__atomic_store_n(&c->nr_empty, c->nr_empty - 1, __ATOMIC_RELAXED);
	sm_unlock(&c->lock);
	*head = (void *)old.lo;
	*n = s->carved - SLAB_INUSE(old.hi);
	return s;
}

/* Take a slab off the partial list and freeze it: its shared freelist becomes *head. */
struct slab *sm_slab_freeze_partial(struct cache *c, void **head, uint32_t *n)
{
	if (!__atomic_load_n(&c->partial, __ATOMIC_RELAXED))
		return NULL;
	sm_lock(&c->lock);
	struct slab *s = c->partial;
	if (!s) {
		sm_unlock(&c->lock);
		return NULL;
	}
	return freeze_listed(c, s, head, n);
}

/* For a mover (defrag.c): of the first FULLEST_SCAN slabs on c's partial list, the one with
 * the most objects in use and a shared freelist, frozen; *head, *n as sm_slab_freeze_partial
 * gives them. NULL when there is none. The mover hands it back with sm_slab_unfreeze. */
struct slab *sm_slab_freeze_fullest(struct cache *c, void **head, uint32_t *n)
{
	if (!__atomic_load_n(&c->partial, __ATOMIC_RELAXED))
		return NULL;
	sm_lock(&c->lock);
	struct slab *best = NULL, *s = c->partial;
	uint32_t most = 0;
	for (uint32_t i = 0; s && i < c->nr_partial && i < FULLEST_SCAN; i++, s = s->next) {
		dword_t w = word_read(s); /* under the lock no push empties it (see SLAB STATES) */
		if (w.lo && SLAB_INUSE(w.hi) > most)
			best = s, most = SLAB_INUSE(w.hi);
	}
	if (!best) {
		sm_unlock(&c->lock);
		return NULL;
	}
	return freeze_listed(c, best, head, n);
}

/* Hand the active slab back at thread exit: unfreeze it; it goes where its state says. */
void sm_slab_unfreeze(struct slab *s)
{
	sm_gate();
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

/* A free pointer read from an object of s was neither NULL nor an object of s. */
SM_COLD SM_NORETURN void sm_bad_link(const struct slab *s, uintptr_t obj)
{
	sm_fatal_in("corrupted freelist link (written after free?)", (void *)obj, s->cache);
}

void sm_caches_lock_all(void)
{
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
}
