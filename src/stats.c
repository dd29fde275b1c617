/* stats.c: statistics, SLUB's CONFIG_SLUB_STATS idea in user space.
 * Event counters are kept only when SLUBMALLOC_STATS=1. Each thread keeps its own (struct
 * sm_tstats, mapped at thread start), with plain increments. They are summed only when read. A
 * thread that exits first adds its counters to the global ones, with atomics.
 * Every counting site is on a slow path. With the option set, the slabs point free() at a stack
 * with no room (slab.c, tcache.c), and the class table sends every malloc to the slow path
 * (sizeclass.c). So the fastpaths' code is the same with the option set or not.
 * The figures of slabs and objects come from a census: the slabs' own words and the thread
 * caches' lengths. They need no counting and are right with the option unset.
 * Output goes out with write(2) and /proc is read with read(2), both raw (platform/os.c).
 * Nothing here allocates or is a cancellation point, except malloc_info, which writes with
 * stdio.
 * Invariants: a live thread's counters are written by it alone. Readers hold the registry
 * lock, so a thread's counters cannot go away under them: it leaves the registry first. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>


#include "slubmalloc.h"

#include "config.h"
#include "depot.h"
#include "engine.h"
#include "large.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "stats.h"
#include "thread.h"
#include "typed.h"
#include "types.h"

static uint64_t dead_ev[NROWS][NEV]; /* threads that exited, and threads without counters */
uint64_t sm_trim_gen;

void sm_count_slow(const struct cache *c, unsigned ev, uint64_t n)
{
	unsigned row = sm_row(c);
	struct sm_tstats *st = sm_tcp->st;
	if (st) /* this thread's own: a plain add, read by others with relaxed loads */
		__atomic_store_n(&st->ev[row][ev], st->ev[row][ev] + n, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&dead_ev[row][ev], n, __ATOMIC_RELAXED);
}

void sm_stats_thread_start(struct tcache *tc)
{
	if (sm_opt.stats && !tc->st)
		tc->st = sm_os_map(sizeof *tc->st); /* NULL: this thread counts into dead_ev */
}

void sm_stats_thread_exit(struct tcache *tc)
{
	struct sm_tstats *st = tc->st;
	if (!st)
		return;
	tc->st = NULL;
	for (unsigned r = 0; r < NROWS; r++)
		for (unsigned e = 0; e < NEV; e++)
			if (st->ev[r][e])
				__atomic_fetch_add(&dead_ev[r][e], st->ev[r][e], __ATOMIC_RELAXED);
	sm_os_unmap(st, sizeof *st);
}

/* ---- the census ---- */
struct census {
	uint64_t inuse[NROWS];   /* objects not on a slab's shared freelist (word counters) */
	uint64_t slabs[NROWS];
	uint64_t empty[NROWS];   /* unfrozen slabs with no object in use */
	uint64_t full[NROWS];    /* unfrozen slabs with every object in use */
	uint64_t held[NROWS];    /* of inuse: objects in thread caches, depots, spill chains */
	uint64_t untouched[NROWS]; /* of inuse: active slabs' objects not carved yet */
	uint64_t ev[NROWS][NEV];
};

static uint64_t untouched(const struct slab *s)
{
	return s ? s->objects - s->carved : 0;
}

static void census_slab(struct slab *s, void *arg)
{
	struct census *k = arg;
	const struct cache *c = __atomic_load_n(&s->cache, __ATOMIC_RELAXED);
	if (!c) /* pages just taken, the slab not made yet (sm_slab_new) */
		return;
	unsigned row = sm_row(c);
	uint64_t hi = __atomic_load_n(&s->word.hi, __ATOMIC_RELAXED);
	k->inuse[row] += SLAB_INUSE(hi);
	k->slabs[row]++;
	k->empty[row] += !(hi & SLAB_FROZEN) && SLAB_INUSE(hi) == 0;
	k->full[row] += !(hi & SLAB_FROZEN) && SLAB_INUSE(hi) == s->objects;
}

/* Objects in another thread's stack, read while that thread may be changing it: top and slots
 * come from two loads, perhaps either side of a swap, so a figure outside the stack is taken as
 * none (the census is a snapshot of moving counts anyway). */
static uint32_t held_in(struct stack *b)
{
	void **top = __atomic_load_n(&b->top, __ATOMIC_RELAXED);
	void **slots = __atomic_load_n(&b->slots, __ATOMIC_RELAXED);
	return top >= slots && top - slots <= TCACHE_BURST_MAX ? (uint32_t)(top - slots) : 0;
}

static void census_tcache(struct tcache *tc, void *arg)
{
	struct census *k = arg;
	sm_region_lock(); /* active slabs stay mapped while we read them */
	for (unsigned i = 0; i < NCLASS; i++) {
		k->held[i] += held_in(&tc->alloc_stack[i]) + held_in(&tc->free_stack[i]) +
			      held_in(&tc->remote_stack[i]) +
			      __atomic_load_n(&tc->source[i].nspill, __ATOMIC_RELAXED);
		k->untouched[i] += untouched(__atomic_load_n(&tc->source[i].active, __ATOMIC_RELAXED));
	}
	for (unsigned id = 0; id < MAX_TYPED; id++)
		if (__atomic_load_n(&tc->typed_for[id], __ATOMIC_RELAXED))
			k->held[NCLASS + id] +=
				held_in(&tc->typed_alloc[id]) + held_in(&tc->typed_free[id]) +
				__atomic_load_n(&tc->typed_source[id].nspill, __ATOMIC_RELAXED) +
				untouched(__atomic_load_n(&tc->typed_source[id].active, __ATOMIC_RELAXED));
	sm_region_unlock();
	struct sm_tstats *st = tc->st;
	if (st)
		for (unsigned r = 0; r < NROWS; r++)
			for (unsigned e = 0; e < NEV; e++)
				k->ev[r][e] += __atomic_load_n(&st->ev[r][e], __ATOMIC_RELAXED);
}

static void census_take(struct census *k)
{
	memset(k, 0, sizeof *k);
	sm_tcache_walk(census_tcache, k);
	for (unsigned i = 0; i < NCLASS; i++) {
		struct cache *c = &sm_g.caches[i];
		k->held[i] += sm_depot_held(i);
		if (!c->debug)
			continue;
		sm_lock(&c->dlock);
		sm_region_lock();
		k->held[i] += c->debug_source.nspill;
		k->untouched[i] += untouched(c->debug_source.active);
		sm_region_unlock();
		sm_unlock(&c->dlock);
	}
	sm_region_lock();
	sm_region_walk_locked(census_slab, k);
	sm_region_unlock();
	for (unsigned r = 0; r < NROWS; r++)
		for (unsigned e = 0; e < NEV; e++)
			k->ev[r][e] += __atomic_load_n(&dead_ev[r][e], __ATOMIC_RELAXED);
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* One cache's row of the census (the census is consistent when the other threads are quiet). */
static void row_of(const struct census *k, unsigned r, const struct cache *c,
		   struct slub_cache_stats *o)
{
	memset(o, 0, sizeof *o);
	memcpy(o->name, c->name, sizeof o->name);
	o->name[sizeof o->name - 1] = 0;
	o->active_objs = sat_sub(k->inuse[r], k->held[r] + k->untouched[r]);
	o->num_objs = k->slabs[r] * c->objects;
	o->objsize = c->debug ? c->osize : c->size;
	o->objperslab = c->objects;
	o->pagesperslab = (size_t)c->pages * (SPAGE_SIZE / SLABINFO_PAGE);
	o->num_slabs = k->slabs[r];
	o->active_slabs = sat_sub(k->slabs[r], k->empty[r]);
	const uint64_t *ev = k->ev[r];
	o->alloc_fastpath = ev[EV_ALLOC_FAST]; /* (typed caches' own fastpaths are not counted) */
	o->alloc_slowpath = ev[EV_ALLOC_SLOW];
	o->refill_takeall = ev[EV_REFILL_TAKEALL];
	o->free_fastpath = ev[EV_FREE_FAST];
	o->free_remote = ev[EV_FREE_REMOTE];
	o->cmpxchg_retry = ev[EV_CAS_RETRY];
	o->slabs_allocated = ev[EV_SLAB_NEW];
	o->slabs_freed = ev[EV_SLAB_FREE];
}

/* The bytes of slubmalloc's memory that are in memory, as the kernel counts them (mincore):
 * the regions, the large blocks and cached ranges with their table, the thread caches. */
static uint64_t resident_bytes(void)
{
	return sm_region_resident() + sm_large_resident() + sm_thread_resident();
}

static bool row_used(const struct census *k, unsigned r)
{
	if (k->slabs[r])
		return true;
	for (unsigned e = 0; e < NEV; e++)
		if (k->ev[r][e])
			return true;
	return false;
}

/* Row r's cache: a size class's, or a copy of a typed cache's in *copy; NULL when it is gone. */
static const struct cache *row_cache(unsigned r, struct cache *copy)
{
	if (r < NCLASS)
		return &sm_g.caches[r];
	return sm_typed_copy(r - NCLASS, copy) ? copy : NULL;
}

/* The census behind slub_stats_get and the printed table: the totals, and up to max rows.
 * bytes_resident only when resident is set: its mincore over every mapping costs 6 times the
 * rest. glibc's calls have no field for it and leave it 0. */
static size_t collect(struct census *k, struct slub_stats *t, struct slub_cache_stats *rows,
		      size_t max, bool resident)
{
	if (!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE))
		sm_init();
	census_take(k);
	memset(t, 0, sizeof *t);
	t->events_counted = sm_opt.stats;
	size_t n = 0;
	for (unsigned r = 0; r < NROWS; r++) {
		struct cache copy;
		const struct cache *c = row_cache(r, &copy);
		if (!c || !row_used(k, r))
			continue;
		struct slub_cache_stats o;
		row_of(k, r, c, &o);
		t->small_bytes_in_use += o.active_objs * o.objsize;
		if (n < max && rows)
			rows[n] = o;
		n++;
	}
	t->ncaches = n;
	uint64_t mapped, dirty, cached, pn, pb;
	sm_region_figures(&mapped, &dirty);
	sm_large_figures(&t->large_count, &t->large_bytes, &cached, &pn, &pb);
	t->large_peak_count = pn;
	t->large_peak_bytes = pb;
	t->large_allocations = __atomic_load_n(&sm_stat_large, __ATOMIC_RELAXED);
	t->slab_bytes_mapped = mapped;
	t->bytes_in_use = t->small_bytes_in_use + t->large_bytes;
	t->bytes_requested = __atomic_load_n(&sm_stat_large_req, __ATOMIC_RELAXED);
	for (unsigned r = 0; r < NROWS; r++)
		t->bytes_requested += k->ev[r][EV_BYTES];
	t->bytes_mapped = mapped + t->large_bytes + cached;
	t->bytes_resident = resident ? resident_bytes() : 0;
	return n < max ? n : max;
}

/* Locks that guard only this file's scratch buffers: fork does not take them (a print may wait
 * on a slow reader of its fd), and a child starts with them free (sm_stats_after_fork). */
static sm_lock_t census_lock, print_lock, info_lock;

void sm_stats_after_fork(void)
{
	sm_unlock(&census_lock);
	sm_unlock(&print_lock);
	sm_unlock(&info_lock);
}

static struct census census_k; /* big: not on a caller's stack; guarded by census_lock */

static size_t get(struct slub_stats *totals, struct slub_cache_stats *caches, size_t max,
		  bool resident)
{
	struct slub_stats t;
	sm_lock(&census_lock);
	size_t n = collect(&census_k, &t, caches, caches ? max : 0, resident);
	sm_unlock(&census_lock);
	if (totals)
		*totals = t;
	return n;
}

SM_EXPORT size_t slub_stats_get(struct slub_stats *totals, struct slub_cache_stats *caches,
				size_t max)
{
	return get(totals, caches, max, totals != NULL);
}

/* The figures of jemalloc's names (mallctl.c): the totals, each size class's bin, and the
 * bytes of the slabs that have an object in use. */
void sm_stats_snapshot(struct sm_snapshot *o)
{
	struct census *k = &census_k;
	struct slub_stats t;
	sm_lock(&census_lock);
	collect(k, &t, NULL, 0, true);
	o->allocated = t.bytes_in_use;
	o->small_allocated = t.small_bytes_in_use;
	o->large_bytes = t.large_bytes;
	o->mapped = t.bytes_mapped;
	o->slab_mapped = t.slab_bytes_mapped;
	o->resident = t.bytes_resident;
	o->retained = sm_large_retained();
	o->slab_bytes_active = 0;
	for (unsigned r = 0; r < NROWS; r++) {
		struct cache copy;
		const struct cache *c = row_cache(r, &copy);
		if (!c)
			continue;
		o->slab_bytes_active += sat_sub(k->slabs[r], k->empty[r]) * c->pages * SPAGE_SIZE;
		if (r < NCLASS) {
			o->bin[r].curregs = sat_sub(k->inuse[r], k->untouched[r]); /* caches' too */
			/* as jemalloc's, whose empty slabs go at once: the empty ones left out */
			o->bin[r].curslabs = sat_sub(k->slabs[r], k->empty[r]);
			o->bin[r].nonfull = sat_sub(k->slabs[r], k->full[r] + k->empty[r]);
		}
	}
	sm_unlock(&census_lock);
	uint64_t mapped;
	sm_region_figures(&mapped, &o->dirty_bytes);
}

/* ---- printing ---- */
static void put_num(int fd, uint64_t v, int width)
{
	sm_write_num_pad(fd, v, 10, width);
}

static void put_name(int fd, const char *name, int width)
{
	sm_write(fd, name);
	for (int pad = width - (int)strlen(name); pad > 0; pad--)
		sm_write(fd, " ");
}

/* "name   value   (meaning)" */
static void put_total(int fd, const char *name, uint64_t v, const char *meaning)
{
	put_name(fd, name, 20);
	put_num(fd, v, 16);
	sm_write(fd, "  (");
	sm_write(fd, meaning);
	sm_write(fd, ")\n");
}

/* The /proc/slabinfo 2.1 table, then the event counters, then the totals. */
void sm_stats_print(int fd)
{
	static struct slub_cache_stats rows[NROWS];
	struct slub_stats t;
	sm_lock(&print_lock);
	size_t n = slub_stats_get(&t, rows, NROWS);
	sm_write(fd, "slubmalloc: stats of pid ");
	put_num(fd, (uint64_t)sm_os_pid(), 0);
	sm_write(fd, "\nslabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> "
		 "<objperslab> <pagesperslab> : slabdata <active_slabs> <num_slabs>\n");
	for (size_t i = 0; i < n; i++) {
		const struct slub_cache_stats *o = &rows[i];
		put_name(fd, o->name, 17);
		put_num(fd, o->active_objs, 14);
		put_num(fd, o->num_objs, 11);
		put_num(fd, o->objsize, 10);
		put_num(fd, o->objperslab, 13);
		put_num(fd, o->pagesperslab, 15);
		sm_write(fd, " : slabdata ");
		put_num(fd, o->active_slabs, 14);
		put_num(fd, o->num_slabs, 11);
		sm_write(fd, "\n");
	}
	sm_write(fd, t.events_counted ? "# events\n" : "# events (not counted: SLUBMALLOC_STATS=1)\n");
	sm_write(fd, "# name            alloc_fastpath alloc_slowpath refill_takeall free_fastpath "
		 "free_remote cmpxchg_retry slabs_allocated slabs_freed\n");
	for (size_t i = 0; i < n; i++) {
		const struct slub_cache_stats *o = &rows[i];
		put_name(fd, o->name, 17);
		put_num(fd, o->alloc_fastpath, 15);
		put_num(fd, o->alloc_slowpath, 15);
		put_num(fd, o->refill_takeall, 15);
		put_num(fd, o->free_fastpath, 14);
		put_num(fd, o->free_remote, 12);
		put_num(fd, o->cmpxchg_retry, 14);
		put_num(fd, o->slabs_allocated, 16);
		put_num(fd, o->slabs_freed, 12);
		sm_write(fd, "\n");
	}
	sm_write(fd, "# totals\n");
	put_total(fd, "bytes_requested", t.bytes_requested,
		  "asked for by every malloc so far; counted with SLUBMALLOC_STATS=1");
	put_total(fd, "bytes_in_use", t.bytes_in_use, "objects at their class size, large blocks");
	put_total(fd, "bytes_mapped", t.bytes_mapped,
		  "slab regions, large blocks, cached and retained ranges");
	put_total(fd, "bytes_resident", t.bytes_resident, "of these, in memory (mincore)");
	put_total(fd, "large_alive", t.large_count, "large blocks in use");
	put_total(fd, "large_bytes", t.large_bytes, "their bytes");
	put_total(fd, "large_allocations", t.large_allocations, "large blocks allocated so far");
	sm_unlock(&print_lock);
}

/* ---- glibc's malloc_stats and malloc_info, answered from the same census ---- */

static void stat_line(const char *what, uint64_t v)
{
	sm_write(2, what);
	sm_write_num_pad(2, v, 10, 10);
	sm_write(2, "\n");
}

/* glibc's layout, on stderr, one arena. */
void sm_malloc_stats(void)
{
	struct slub_stats t;
	get(&t, NULL, 0, false);
	sm_write(2, "Arena 0:\n");
	stat_line("system bytes     = ", t.slab_bytes_mapped);
	stat_line("in use bytes     = ", t.small_bytes_in_use);
	sm_write(2, "Total (incl. mmap):\n");
	stat_line("system bytes     = ", t.bytes_mapped);
	stat_line("in use bytes     = ", t.bytes_in_use);
	stat_line("max mmap regions = ", t.large_peak_count);
	stat_line("max mmap bytes   = ", t.large_peak_bytes);
}

/* glibc's XML shape: one heap, a <sizes> element per cache with free objects, then the
 * totals. Called by the program, outside the allocator: stdio may allocate, so the figures
 * are copied out first and no lock is held while it writes; and cancellation is off while it
 * writes, as glibc promises (malloc_info is no cancellation point). */
int sm_malloc_info(int options, FILE *fp)
{
	if (options != 0)
		return errno = EINVAL, -1;
	static struct slub_cache_stats rows[NROWS]; /* guarded by info_lock */
	struct { size_t size, free; } sizes[NROWS];
	struct slub_stats t;
	sm_lock(&info_lock);
	size_t n = get(&t, rows, NROWS, false), ns = 0;
	size_t free_objs = 0, free_bytes = 0;
	for (size_t i = 0; i < n && i < NROWS; i++) {
		size_t f = rows[i].num_objs - rows[i].active_objs;
		if (!f)
			continue;
		sizes[ns].size = rows[i].objsize;
		sizes[ns++].free = f;
		free_objs += f, free_bytes += f * rows[i].objsize;
	}
	sm_unlock(&info_lock);
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	fprintf(fp, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
	for (size_t i = 0; i < ns; i++)
		fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n",
			sizes[i].size, sizes[i].size, sizes[i].free * sizes[i].size, sizes[i].free);
	fprintf(fp, "</sizes>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		"<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
		"<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
		"<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n"
		"</heap>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		"<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
		"<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n"
		"<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
		"<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n"
		"</malloc>\n",
		free_objs, free_bytes, t.slab_bytes_mapped, t.slab_bytes_mapped,
		t.slab_bytes_mapped, t.slab_bytes_mapped, free_objs, free_bytes, t.large_count,
		t.large_bytes, t.bytes_mapped, t.bytes_mapped, t.bytes_mapped, t.bytes_mapped);
	pthread_setcancelstate(cancel, NULL);
	return 0;
}

/* ---- glibc's mallopt and mallinfo ---- */

/* glibc's parameters are all accepted and have no effect here (slubmalloc has no arenas, top
 * pad or mmap threshold); its tests expect 1 for unknown ones too. */
int sm_mallopt(int param, int value)
{
	(void)param, (void)value;
	return 1;
}

static size_t clamp_int(size_t v)
{
	return v > INT_MAX ? INT_MAX : v;
}

/* glibc's meanings: arena = non-mmapped bytes (our slab regions), uordblks/fordblks = bytes
 * in use/free in them, hblks/hblkhd = mmapped blocks (our large blocks). */
struct mallinfo2 sm_mallinfo2(void)
{
	struct slub_stats t;
	get(&t, NULL, 0, false);
	struct mallinfo2 m = {0};
	m.arena = t.slab_bytes_mapped;
	m.uordblks = t.small_bytes_in_use;
	m.fordblks = t.slab_bytes_mapped > t.small_bytes_in_use
			     ? t.slab_bytes_mapped - t.small_bytes_in_use : 0;
	m.hblks = t.large_count;
	m.hblkhd = t.large_bytes;
	m.usmblks = 0;
	m.ordblks = 1;
	return m;
}

struct mallinfo sm_mallinfo(void)
{
	struct mallinfo2 m2 = sm_mallinfo2();
	struct mallinfo m = {0};
	m.arena = (int)clamp_int(m2.arena);
	m.ordblks = (int)clamp_int(m2.ordblks);
	m.hblks = (int)clamp_int(m2.hblks);
	m.hblkhd = (int)clamp_int(m2.hblkhd);
	m.uordblks = (int)clamp_int(m2.uordblks);
	m.fordblks = (int)clamp_int(m2.fordblks);
	return m;
}
