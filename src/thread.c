/* thread.c: the life cycle of thread caches. A thread's first slow-path call sets its cache
 * up (sm_thread_start). At exit, a key's destructor hands its objects and active slabs back
 * and marks it dead. Each cache's slot arrays come from one block of memory, recycled through
 * a pool.
 * The orphan cache serves threads without a cache of their own: those past their exit
 * destructor (glibc frees and allocates a little after it) and those that could not get
 * memory for one. It is one struct tcache for every such thread, size classes and typed
 * caches alike, under the orphan lock. The thread holding that lock may take it again: a
 * typed cache's ctor may malloc while the typed path holds it. The nested call uses only the
 * size-class part, the outer one only the typed part.
 * A thread's struct tcache lives at the head of its block, not in TLS: the TLS is one pointer
 * to it (sm_tcp), so a copy loaded by dlopen fits in glibc's spare static TLS. Until the
 * thread is set up, sm_tcp is sm_tc_new; after its exit, sm_tc_dead. Both are read-only and
 * have no room in any stack: every call on them takes a slow path, which checks the state.
 * Invariants: a cache is written by its own thread only (the orphan: by the lock's holder), but
 * for pokes (trim.c) and the background thread's marks (background.c), under the registry lock;
 * state goes T_NEW -> T_LIVE -> T_DEAD, or stays T_NEW while no memory is left; sm_tc_new
 * and sm_tc_dead are never written (they are const: a write would fault). */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "background.h"
#include "bulk.h"
#include "config.h"
#include "diag/diag.h"
#include "engine.h"
#include "lock.h"
#include "platform.h"
#include "stack.h"
#include "stats.h"
#include "freelist.h"
#include "tcache.h"
#include "thread.h"
#include "typed.h"
#include "types.h"

const struct tcache sm_tc_new = {.state = T_NEW};
const struct tcache sm_tc_dead = {.state = T_DEAD};

/* ---- slot memory: one block per thread, all of one size, recycled through a pool ---- */
static sm_lock_t block_lock;
static void **block_pool;   /* blocks linked through their first word */

/* A block starts with room for the thread's struct tcache, in words, then the slot arrays:
 * per class the allocation and free stacks, then the remote stack, each a NULL guard and its
 * slots. */
#define TC_WORDS ((sizeof(struct tcache) + 63) / 64 * 8)
#define SPLIT_WORDS (4096 / sizeof(void *))
#define LINE_WORDS (64 / sizeof(void *))

/* Where an array of n words (a guard, then slots) goes, at word w of the block or further:
 * slots that fit in a 4 KiB page start in the next page rather than straddle two (the guard
 * stays just before them). malloc_bulk and free_bulk move pointers 32 bytes at a time, and a
 * move across a page boundary costs the CPU a page split (bench/results/studies/
 * bulk-page-split-*). A moved array starts tag lines into the page (modulo the lines where it
 * fits), not at its start: a load from one class's slot waits on a store to another's at the
 * same page offset (4K aliasing; bench/results/studies/stack-offsets-*). */
static size_t array_at(size_t w, size_t n, unsigned tag)
{
	size_t s = w + 1; /* the first slot */
	if (n - 1 <= SPLIT_WORDS && s / SPLIT_WORDS != (s + n - 2) / SPLIT_WORDS) {
		size_t lines = (SPLIT_WORDS - (n - 1)) / LINE_WORDS + 1; /* where its slots fit */
		return (s / SPLIT_WORDS + 1) * SPLIT_WORDS + tag % lines * LINE_WORDS - 1;
	}
	return w;
}

/* The words of class i's array k (0: allocation, 1: free, 2: remote stack), its guard
 * included. */
static size_t array_words(unsigned i, int k)
{
	return (k < 2 ? sm_g.caches[i].cap_grown : sm_g.caches[i].cap) + 1;
}

/* Class i's array k's line in its page, when it moves (array_at): the allocation and free
 * stacks of the classes whose grown stacks leave a page 8 lines (TCACHE_GROWN_MAX) take lines
 * 0 to 7, one each; the remote stacks, of fewer slots, lines further on. */
static unsigned array_tag(unsigned i, int k)
{
	return k < 2 ? 2 * i + (unsigned)k : 2 * i + 17;
}

static size_t block_words(void)
{
	size_t w = TC_WORDS;
	for (unsigned i = 0; i < NCLASS; i++)
		for (int k = 0; k < 3; k++)
			w = array_at(w, array_words(i, k), array_tag(i, k)) + array_words(i, k);
	return w;
}

/* A block from the pool, or a new one: *fresh tells which. */
static void **block_get(bool *fresh)
{
	sm_lock(&block_lock);
	void **blk = block_pool;
	if (blk)
		block_pool = *blk;
	sm_unlock(&block_lock);
	*fresh = !blk;
	return blk ? blk : sm_os_map(block_words() * sizeof(void *));
}

static void block_put(void **blk)
{
	sm_lock(&block_lock);
	*blk = block_pool;
	block_pool = blk;
	sm_unlock(&block_lock);
}

/* tc's stacks, in block blk after its first TC_WORDS words; tc becomes T_LIVE. A fresh block
 * is not read: a read of an untouched page may fault a page in (this VM's kernel maps no zero
 * page), and most of a block's pages are never used. */
static void setup(struct tcache *tc, void **blk, bool fresh)
{
	tc->block = blk;
	size_t w = TC_WORDS;
	static uint32_t next_id;
	uint32_t serial = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
	tc->id = (uint16_t)(serial % 65534 + 1);
	tc->trim_gen = __atomic_load_n(&sm_trim_gen, __ATOMIC_RELAXED);
	tc->slow_n = 1; /* (bg_seen is 0: not quiet before the background thread's first look) */
	for (unsigned i = 0; i < NCLASS; i++) {
		struct stack *stacks[3] = {&tc->alloc_stack[i], &tc->free_stack[i], &tc->remote_stack[i]};
		for (int k = 0; k < 3; k++) {
			w = array_at(w, array_words(i, k), array_tag(i, k));
			if (!fresh && blk[w]) /* the guard before slots[0]; a fresh block's is zero */
				blk[w] = NULL;
			/* a debug cache has no stacks: its calls all take the slow path */
			stack_init(stacks[k], blk + w + 1, sm_g.caches[i].debug ? 0 : sm_g.caches[i].cap);
			w += array_words(i, k);
		}
		sm_free_stack_floor(tc, i);
	}
	tc->state = T_LIVE;
	if (sm_sampling)
		sm_sample_wake(tc);
}

/* The orphan's stacks. Without memory for a block its state stays T_NEW, and a later call
 * tries again; meanwhile its frees go straight to the slabs. */
void sm_thread_setup(struct tcache *tc)
{
	bool fresh;
	void **blk = block_get(&fresh);
	if (blk)
		setup(tc, blk, fresh);
}

/* Thread exit: every cached object goes back to its slab, every active slab is unfrozen.
 * Objects other threads still hold stay reachable through their slabs' shared lists. */
void sm_thread_teardown(struct tcache *tc)
{
	sm_typed_thread_exit(tc);
	for (unsigned i = 0; i < NCLASS; i++) {
		sm_drop(&tc->alloc_stack[i], &tc->free_stack[i], &tc->source[i], &sm_g.caches[i]);
		stack_close(&tc->alloc_stack[i]);
		stack_close(&tc->free_stack[i]);
		sm_free_array(tc->remote_stack[i].slots, stack_count(&tc->remote_stack[i]));
		stack_close(&tc->remote_stack[i]);
		if (tc->burst[i]) { /* closed stacks are never read: their arrays can go */
			sm_os_unmap(tc->burst[i], burst_bytes(i));
			tc->burst[i] = NULL;
		}
	}
}

/* ---- the orphan cache ---- */
static sm_lock_t orphan_lock;
static struct tcache orphan;
static void *orphan_holder; /* the holder's &sm_tcp, unique to a thread (relaxed: only the holder
				      * finds itself there) */
static unsigned orphan_depth;        /* the holder's nested entries */

struct tcache *sm_orphan_enter(void)
{
	if (__atomic_load_n(&orphan_holder, __ATOMIC_RELAXED) == (void *)&sm_tcp) {
		orphan_depth++;
		return &orphan;
	}
	sm_lock(&orphan_lock);
	__atomic_store_n(&orphan_holder, (void *)&sm_tcp, __ATOMIC_RELAXED);
	return &orphan;
}

void sm_orphan_leave(void)
{
	if (orphan_depth) {
		orphan_depth--;
		return;
	}
	__atomic_store_n(&orphan_holder, NULL, __ATOMIC_RELAXED);
	sm_unlock(&orphan_lock);
}

/* An object of class cls from the orphan cache, or NULL (no memory). Debug caches never get
 * here: alloc.c sends them to debug.c first. */
void *sm_orphan_alloc(unsigned cls)
{
	struct tcache *o = sm_orphan_enter();
	if (o->state == T_NEW)
		sm_thread_setup(o);
	struct stack *b = &o->alloc_stack[cls];
	void *p = NULL;
	if (o->state == T_LIVE)
		p = b->top != b->slots ? *--b->top : sm_refill(o, cls);
	else if (!sm_fill(&sm_g.caches[cls], 0, &o->source[cls], &p, 1)) /* no stacks at all */
		p = NULL;
	sm_orphan_leave();
	return p;
}

/* Every thread cache: the registry's (typed.c), then the orphan. */
void sm_tcache_walk(void (*fn)(struct tcache *tc, void *arg), void *arg)
{
	struct tcache *o = sm_orphan_enter();
	sm_typed_registry_walk(fn, arg);
	fn(o, arg);
	sm_orphan_leave();
}

static void block_resident(struct tcache *tc, void *arg)
{
	if (tc->block)
		*(uint64_t *)arg += sm_os_resident(tc->block, block_words() * sizeof(void *));
}

/* The bytes in memory (mincore) of the threads' blocks, in use and pooled. */
uint64_t sm_thread_resident(void)
{
	uint64_t n = 0;
	sm_tcache_walk(block_resident, &n);
	sm_lock(&block_lock);
	for (void **b = block_pool; b; b = *b)
		n += sm_os_resident(b, block_words() * sizeof(void *));
	sm_unlock(&block_lock);
	return n;
}

/* ---- start and exit ---- */
static pthread_key_t exit_key;
static int exit_key_ok;

static void thread_exit(void *arg)
{
	struct tcache *tc = arg;
	sm_thread_teardown(tc); /* it leaves the registry first: no reader sees tc->st after */
	sm_stats_thread_exit(tc);
	tc->state = T_DEAD;
	sm_tcp = (struct tcache *)&sm_tc_dead; /* (what glibc frees later goes to the orphan) */
	block_put(tc->block);                  /* tc is in it: the last touch */
	sm_bg_thread_left();
}

/* Once, at init, with the engine ready: pthread_key_create may allocate. */
void sm_thread_init(void)
{
	exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

struct tcache *sm_thread_start(void)
{
	sm_init();
	sm_gate(); /* before the thread's first use of a slab (freelist.c, THE ONLY THREAD) */
	bool fresh;
	void **blk = block_get(&fresh);
	if (!blk) /* no memory now: the orphan serves this thread, and a later call tries again */
		return sm_tcp;
	struct tcache *tc = (struct tcache *)(void *)blk;
	if (!fresh) /* its first word linked the pool */
		memset(tc, 0, sizeof *tc);
	setup(tc, blk, fresh);
	sm_tcp = tc;
	sm_stats_thread_start(tc);
	sm_typed_register(tc);
	if (exit_key_ok)
		pthread_setspecific(exit_key, tc);
	return tc;
}

/* ---- fork (the lock order: freelist.c) ---- */
void sm_orphan_lock_all(void)
{
	sm_lock(&orphan_lock);
}

void sm_orphan_unlock_all(bool child)
{
	if (child) { /* the child's one thread holds no orphan entry */
		orphan_holder = NULL;
		orphan_depth = 0;
	}
	sm_unlock(&orphan_lock);
}

void sm_block_lock_all(void)
{
	sm_lock(&block_lock);
}

void sm_block_unlock_all(void)
{
	sm_unlock(&block_lock);
}
