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
 * Invariants: a cache is written by its own thread only (the orphan: by the lock's holder);
 * state goes T_NEW -> T_LIVE -> T_DEAD, or stays T_NEW while no memory is left. */
#include <errno.h>
#include <pthread.h>

#include "internal.h"

/* ---- slot memory: one block per thread, all of one size, recycled through a pool ---- */
static sm_lock_t block_lock;
static void **block_pool;   /* blocks linked through their first word */

static size_t block_words(void)
{
	size_t w = 0;
	for (unsigned i = 0; i < NCLASS; i++)
		/* the allocation and free stacks, then the remote stack */
		w += 2 * (sm_g.caches[i].cap_grown + 1) + sm_g.caches[i].cap + 1;
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
		struct stack *stacks[3] = {&tc->alloc_stack[i], &tc->free_stack[i], &tc->remote_stack[i]};
		for (int k = 0; k < 3; k++) {
			if (blk[0]) /* the guard before slots[0]; a fresh block's is zero already,
				     * and a page only read stays out of the resident set */
				blk[0] = NULL;
			/* a debug cache has no stacks: its calls all take the slow path */
			stack_init(stacks[k], blk + 1, sm_g.caches[i].debug ? 0 : sm_g.caches[i].cap);
			if (sm_opt.stats && k == 2) /* every free to the counted slow path: the
						     * slabs point free() at the remote_stack (slab.c),
						     * with no room; malloc's fastpath stays */
				stack_close(stacks[k]);
			blk += (k < 2 ? sm_g.caches[i].cap_grown : sm_g.caches[i].cap) + 1;
		}
	}
	tc->state = T_LIVE;
	if (__atomic_load_n(&sm_subline_shared, __ATOMIC_RELAXED))
		sm_hold(tc);
	if (sm_sampling)
		sm_sample_wake(tc);
}

/* Thread exit: every cached object goes back to its slab, every active slab is unfrozen.
 * Objects other threads still hold stay reachable through their slabs' shared lists. */
void sm_thread_teardown(struct tcache *tc)
{
	sm_typed_thread_exit(tc);
	for (unsigned i = 0; i < NCLASS; i++) {
		sm_free_array(tc->remote_stack[i].slots, stack_count(&tc->remote_stack[i]));
		stack_close(&tc->remote_stack[i]);
		sm_free_array(tc->free_stack[i].slots, stack_count(&tc->free_stack[i]));
		stack_close(&tc->free_stack[i]);
		sm_drop(&tc->alloc_stack[i], &tc->source[i], sm_g.caches[i].fpoff);
		stack_close(&tc->alloc_stack[i]);
		if (tc->burst[i]) { /* closed stacks are never read: their arrays can go */
			sm_os_unmap(tc->burst[i], burst_bytes(i));
			tc->burst[i] = NULL;
		}
	}
	if (tc->block)
		block_put(tc->block);
	tc->block = NULL;
}

/* ---- the orphan cache ---- */
static sm_lock_t orphan_lock;
static struct tcache orphan;
static struct tcache *orphan_holder; /* the holder's own sm_tc (relaxed: only the holder
				      * finds itself there) */
static unsigned orphan_depth;        /* the holder's nested entries */

struct tcache *sm_orphan_enter(void)
{
	if (__atomic_load_n(&orphan_holder, __ATOMIC_RELAXED) == &sm_tc) {
		orphan_depth++;
		return &orphan;
	}
	sm_lock(&orphan_lock);
	__atomic_store_n(&orphan_holder, &sm_tc, __ATOMIC_RELAXED);
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

/* ---- start and exit ---- */
static pthread_key_t exit_key;
static int exit_key_ok;

static void thread_exit(void *arg)
{
	struct tcache *tc = arg;
	sm_thread_teardown(tc); /* it leaves the registry first: no reader sees tc->st after */
	sm_stats_thread_exit(tc);
	tc->state = T_DEAD;
}

/* Once, at init, with the engine ready: pthread_key_create may allocate. */
void sm_thread_init(void)
{
	exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

void sm_thread_start(struct tcache *tc)
{
	sm_init();
	sm_thread_setup(tc);
	sm_stats_thread_start(tc);
	if (tc->state == T_LIVE)
		sm_typed_register(tc);
	if (exit_key_ok)
		pthread_setspecific(exit_key, tc);
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
