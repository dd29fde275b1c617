/* slubmalloc.h: the public API of libslubmalloc beyond the standard malloc family, which the
 * library also provides (link with -lslubmalloc, or LD_PRELOAD=libslubmalloc.so).
 * Every function here is thread-safe. */
#ifndef SLUBMALLOC_H
#define SLUBMALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bulk allocation, after the kernel's kmem_cache_alloc_bulk: fill ptrs[0..n) with n objects of
 * `size` bytes each (any size, small or large), taking them many at a time. All or nothing:
 * returns n, or 0 with errno ENOMEM and nothing allocated (EINVAL when ptrs is NULL).
 * The objects are ordinary malloc blocks: free(), realloc() and free_bulk() all take them. */
size_t malloc_bulk(size_t size, size_t n, void **ptrs);

/* Bulk free, after kmem_cache_free_bulk: free ptrs[0..n), pointers from malloc, malloc_bulk
 * or any other allocation function of this library, of any sizes, from any thread. NULL
 * entries are skipped. Invalid pointers are reported and abort, as with free(). */
void free_bulk(size_t n, void **ptrs);

/* Typed object caches, after the kernel's kmem_cache_*. A cache hands out objects of one size
 * and alignment from slabs of its own. Up to 32 typed caches exist at once. */
struct slub_cache;

#define SLUB_HWCACHE_ALIGN 0x1u /* align objects to a cache line (half or less for small) */
#define SLUB_ZERO 0x2u          /* every object is zeroed when allocated (not with a ctor) */

/* Create a cache of objects of `size` bytes (at most 32 KiB) aligned to `align` (0 or a
 * power of two up to 32 KiB; at least 8). ctor, if given, runs once on each object when it is
 * first carved from a new slab, as in the kernel: a freed object keeps its constructed state.
 * Returns NULL with errno EINVAL (bad arguments) or ENOMEM. */
struct slub_cache *slub_cache_create(const char *name, size_t size, size_t align,
				     unsigned flags, void (*ctor)(void *));
/* One object, or NULL with errno ENOMEM. */
void *slub_cache_alloc(struct slub_cache *cache);
/* Free an object of this cache (free() takes it too). Another cache's object is reported. */
void slub_cache_free(struct slub_cache *cache, void *obj);
/* n objects into ptrs, all or nothing: n, or 0 with errno ENOMEM. */
size_t slub_cache_alloc_bulk(struct slub_cache *cache, size_t n, void **ptrs);
/* Free n objects of this cache (NULL entries skipped). */
void slub_cache_free_bulk(struct slub_cache *cache, size_t n, void **ptrs);
/* Destroy the cache. Objects still allocated are reported on stderr; the cache's memory then
 * stays until they are freed (freeing them stays valid). */
void slub_cache_destroy(struct slub_cache *cache);

/* ---- statistics (the format is described in slubmalloc(3)) ----
 * Object and slab figures come from a census of the slabs and the thread caches: exact when
 * the other threads are quiet, a snapshot otherwise. Event counters are kept (per thread,
 * summed here) only when the program runs with SLUBMALLOC_STATS=1; else they read 0. */
struct slub_cache_stats {
	char name[32];             /* kmalloc-<size> for the size classes, or a typed cache's name */
	size_t active_objs;        /* objects handed out and not freed */
	size_t num_objs;           /* objects in all its slabs */
	size_t objsize, objperslab;
	size_t pagesperslab;       /* in 4 KiB pages, as /proc/slabinfo counts them */
	size_t active_slabs;       /* slabs with objects in use (or held by a thread) */
	size_t num_slabs;
	/* events (SLUBMALLOC_STATS=1): */
	uint64_t alloc_fastpath;   /* mallocs served from the thread's cache (size classes) */
	uint64_t alloc_slowpath;   /* mallocs that refilled the thread's cache */
	uint64_t refill_takeall;   /* refills that took a slab's whole freelist (one cmpxchg16b) */
	uint64_t free_fastpath;    /* frees onto the freeing thread's own cache */
	uint64_t free_remote;      /* frees straight to a slab (no thread cache, typed objects) */
	uint64_t cmpxchg_retry;    /* cmpxchg16b attempts on a slab's freelist that lost a race */
	uint64_t slabs_allocated, slabs_freed;
};
struct slub_stats {
	int events_counted;        /* 1: SLUBMALLOC_STATS=1, the event counters are kept */
	size_t ncaches;            /* caches with slabs or events (rows slub_stats_get can give) */
	uint64_t bytes_requested;  /* asked for by all allocations so far (SLUBMALLOC_STATS=1) */
	size_t bytes_in_use;       /* small objects at their class size, plus large blocks */
	size_t small_bytes_in_use;
	size_t bytes_mapped;       /* slab regions, large blocks and cached freed ranges */
	size_t slab_bytes_mapped;  /* slab regions alone */
	size_t bytes_resident;     /* of slubmalloc's mappings, the bytes in memory (mincore) */
	size_t large_count, large_bytes;            /* large blocks alive (> 128 KiB) */
	size_t large_peak_count, large_peak_bytes;  /* ... at most, so far */
	uint64_t large_allocations;                 /* large blocks allocated so far */
};
/* Fill *totals (if not NULL) and up to max rows of caches[] (one per cache in use); returns
 * the number of rows written. Does not allocate. */
size_t slub_stats_get(struct slub_stats *totals, struct slub_cache_stats *caches, size_t max);
/* Write the statistics to fd: a /proc/slabinfo 2.1 table, the event counters, the totals. */
void slub_stats_print(int fd);

/* Defragmentation, for a program that can move its objects (as Valkey's active defrag does).
 * slub_defrag_hint(p): 1 when moving the block at p would help its slab empty: a small block
 * in a slab no thread is filling, not full, and used no more than 9/8 of its size class's
 * average (figures at most 0.1 s old). 0 for anything else (large blocks too).
 * slub_defrag_move(p): when the hint says so, a new block from the fullest partial slab of
 * p's size class with p's contents (its usable size), and p freed; else p itself. So a mover
 * writes `obj = slub_defrag_move(obj)` and updates its references when the address changed.
 * jemalloc's way works too: mallctl("experimental.utilization.batch_query"), then
 * mallocx(size, MALLOCX_TCACHE_NONE), which takes from the fullest partial slab. */
int slub_defrag_hint(const void *p);
void *slub_defrag_move(void *p);

/* With SLUBMALLOC_PROF=1: write the heap profile (gperftools' heap-profile format, which
 * google-pprof reads) to path, or to SLUBMALLOC_PROF_FILE (default slubmalloc.<pid>.heap) when
 * path is NULL. Returns 0, or -1 with errno (ENOENT: the profiler is off). Does not allocate. */
int slub_prof_dump(const char *path);

#ifdef __cplusplus
}
#endif

/* ======================= per-CPU memory, counters and reference counts =======================
 * Kernel-familiar per-CPU facilities (mm/percpu.c, lib/percpu_counter.c, lib/percpu-refcount.c),
 * independent of the malloc engine. Implementation: src/percpu/percpu.c (areas),
 * src/percpu/pcpu_ref.c (counters, references; the correctness argument is at its top),
 * src/platform/rseq.c.
 *
 * Per-CPU memory: pcpu_alloc() returns the address of CPU 0's copy; CPU c's copy is exactly
 * c * SLUB_PCPU_STRIDE bytes further (pcpu_ptr). One area per possible CPU at that fixed stride,
 * the same offset in each: an object costs size x CPUs, with no padding, and copies of different
 * CPUs never share a 64-byte line (they are a stride apart); objects of one CPU are packed.
 *
 * Fastpaths: on Linux >= 4.18 with glibc >= 2.35 (which registers rseq for every thread) and
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) (Linux >= 5.10), an update of this CPU's
 * copy is an rseq critical section: one plain add, no locked instruction, no line shared with
 * another CPU. Otherwise (e.g. GLIBC_TUNABLES=glibc.pthread.rseq=0) a slower but equally correct
 * path (sched_getcpu() + a locked instruction on this CPU's copy) is chosen once, at the first
 * pcpu_alloc(); see pcpu_rseq_active(). Identifiers of the form slub_pcpu_* / SLUB_PCPU_* /
 * pcpu_*_slow below are implementation details of the inline code.
 * Requires glibc >= 2.35 (the __rseq_offset / __rseq_size symbols). The rseq sections are
 * x86-64's, in slubmalloc_rseq_x86_64.h, which this header includes there; elsewhere
 * (aarch64) slubmalloc_rseq_none.h sends every call to the slower fallback. */
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- per-CPU memory (alloc_percpu / free_percpu / per_cpu_ptr / this_cpu_ptr) ---- */

#define SLUB_PCPU_STRIDE_SHIFT 16
#define SLUB_PCPU_STRIDE ((size_t)1 << SLUB_PCPU_STRIDE_SHIFT) /* bytes between CPUs' copies */
#define SLUB_PCPU_MAX_SIZE SLUB_PCPU_STRIDE                    /* largest pcpu_alloc size */
#define SLUB_PCPU_MAX_ALIGN ((size_t)4096)                     /* largest pcpu_alloc align */

/* alloc_percpu: size bytes for every possible CPU, zeroed, aligned to align (a power of two
 * <= 4096; 0 means 4; alignments below 4 are raised to 4). Returns CPU 0's copy, or NULL with
 * errno EINVAL (size 0 or > SLUB_PCPU_MAX_SIZE, bad align) or ENOMEM. Thread-safe; not for
 * hot paths (it takes a lock). The memory is mapped directly, never from malloc. */
void *pcpu_alloc(size_t size, size_t align);
/* free_percpu: frees every CPU's copy of p (NULL is ignored). p must come from pcpu_alloc and
 * no thread may still access any copy; an invalid pointer is reported and aborts. */
void pcpu_free(void *p);
/* alloc_percpu(type): one zeroed, naturally aligned object of type per CPU. */
#define pcpu_alloc_type(type) ((type *)pcpu_alloc(sizeof(type), __alignof__(type)))
/* per_cpu_ptr: CPU cpu's copy of per-CPU pointer p (0 <= cpu < pcpu_nr_cpus()). */
#define pcpu_ptr(p, cpu) \
	((__typeof__(p))((char *)(p) + ((size_t)(unsigned)(cpu) << SLUB_PCPU_STRIDE_SHIFT)))
/* The number of possible CPUs (from /sys/devices/system/cpu/possible): valid cpu arguments
 * are 0 .. pcpu_nr_cpus() - 1. Fixed for the life of the process. */
int pcpu_nr_cpus(void);
/* 1 when the rseq fastpaths are in use, 0 when the fallback was chosen (decided once, at the
 * first pcpu_alloc / *_init; calling this makes the decision if it was not made yet). */
int pcpu_rseq_active(void);

extern const ptrdiff_t __rseq_offset;  /* glibc >= 2.35: thread pointer -> struct rseq */
extern const unsigned int __rseq_size; /* glibc >= 2.35: 0 when rseq is not registered */
extern int slub_pcpu_rseq;             /* the once-made choice: 1 rseq, 0 fallback */
int pcpu_this_cpu_slow(void);
void pcpu_this_add_slow(long *p, long v);

#ifdef __cplusplus
}
#endif
/* The rseq critical sections of the fastpaths below, in the CPU's own instructions. */
#if defined(__x86_64__)
#include "slubmalloc_rseq_x86_64.h"
#else
#include "slubmalloc_rseq_none.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* raw_smp_processor_id: the CPU this thread is running on now (may be stale by the time it is
 * used: the thread can migrate; use pcpu_this_add / counters / refs for updates). */
static inline int pcpu_this_cpu(void)
{
	int c = slub_rseq_cpu_id();
	if (__builtin_expect(c >= 0, 1))
		return c;
	return pcpu_this_cpu_slow();
}
/* this_cpu_ptr: this CPU's copy of p (a snapshot, as pcpu_this_cpu). */
#define pcpu_this_ptr(p) pcpu_ptr(p, pcpu_this_cpu())

/* this_cpu_add: adds v to this CPU's copy of the per-CPU long p, atomically with respect to
 * every other pcpu_this_add on that copy (no lost update), without a locked instruction in
 * rseq mode. Reading another CPU's copy while it is updated gives the old or the new value. */
static inline void pcpu_this_add(long *p, long v)
{
	if (__builtin_expect(slub_pcpu_rseq, 1) && __builtin_expect(slub_pcpu_rseq_add(p, v), 1))
		return;
	pcpu_this_add_slow(p, v);
}

/* ---- per-CPU counters (struct percpu_counter) ----
 * A total kept as a shared 64-bit count plus a small per-CPU delta (|delta| < batch); an add
 * changes only this CPU's delta until it would reach +-batch, then folds it into the count
 * under a lock. batch = max(32, 2 x CPUs). */
struct pcpu_counter {
	uintptr_t pcpu;   /* per-CPU int deltas (pcpu_alloc) | 1 when the fastpath is off */
	int batch;        /* fold threshold */
	int lock;         /* orders folds against pcpu_counter_sum (slow paths only) */
	long long count;  /* the folded part of the total */
};

/* percpu_counter_init: the counter starts at value. 0, or -ENOMEM. */
int pcpu_counter_init(struct pcpu_counter *c, long long value);
/* percpu_counter_destroy: frees the per-CPU deltas; the counter must be idle. */
void pcpu_counter_destroy(struct pcpu_counter *c);
/* percpu_counter_sum: the exact total: the count plus every CPU's delta, read under the lock
 * the folds take (exact once concurrent adds have returned). */
long long pcpu_counter_sum(struct pcpu_counter *c);
/* percpu_counter_compare: the sign of (total - rhs), from the approximate value when it is
 * farther than batch x CPUs from rhs, else from the exact sum. */
int pcpu_counter_compare(struct pcpu_counter *c, long long rhs);
void pcpu_counter_add_slow(struct pcpu_counter *c, long long amount);

/* percpu_counter_add: total += amount. In rseq mode: one rseq section storing this CPU's new
 * delta; every batch-th unit of change folds under the lock. */
static inline void pcpu_counter_add(struct pcpu_counter *c, long long amount)
{
	uintptr_t p = c->pcpu;
	long long b = c->batch;
	if (__builtin_expect(!(p & 1), 1) &&
	    __builtin_expect(slub_pcpu_counter_rseq_add((int *)p, amount, b - 1,
							(unsigned long long)(2 * b - 1)), 1))
		return;
	pcpu_counter_add_slow(c, amount);
}
static inline void pcpu_counter_inc(struct pcpu_counter *c) { pcpu_counter_add(c, 1); }
static inline void pcpu_counter_dec(struct pcpu_counter *c) { pcpu_counter_add(c, -1); }
static inline void pcpu_counter_sub(struct pcpu_counter *c, long long amount)
{
	pcpu_counter_add(c, -amount);
}
/* percpu_counter_read: the approximate total (the folded count only; off by less than
 * batch x CPUs). No lock, no per-CPU walk. */
static inline long long pcpu_counter_read(const struct pcpu_counter *c)
{
	return __atomic_load_n(&c->count, __ATOMIC_RELAXED);
}
/* percpu_counter_read_positive: pcpu_counter_read, or 0 when that is negative. */
static inline long long pcpu_counter_read_positive(const struct pcpu_counter *c)
{
	long long v = pcpu_counter_read(c);
	return v > 0 ? v : 0;
}

/* ---- per-CPU reference counts (struct percpu_ref) ----
 * A reference count that is per-CPU while the object is live (get/put: one add to this CPU's
 * counter, inline) and a single atomic count once it is killed, so that the release callback
 * runs exactly once, when the true count reaches zero. The same semantics as the kernel's
 * percpu_ref, with one difference: the switches to atomic mode (kill, switch_to_atomic) are
 * synchronous: they wait for the user-space grace period (a membarrier) themselves, and
 * call the confirm callback before returning. */
struct pcpu_ref;
typedef void pcpu_ref_func_t(struct pcpu_ref *ref);

enum {
	/* start in atomic mode with a count of 1 (implies PCPU_REF_ALLOW_REINIT) */
	PCPU_REF_INIT_ATOMIC = 1 << 0,
	/* start dead, atomic, with a count of 0; pcpu_ref_reinit() brings it to life */
	PCPU_REF_INIT_DEAD = 1 << 1,
	/* keep the per-CPU counters after a switch to atomic mode, so that
	 * switch_to_percpu / resurrect / reinit can go back to per-CPU mode */
	PCPU_REF_ALLOW_REINIT = 1 << 2,
};

struct pcpu_ref_data;
struct pcpu_ref {
	/* the per-CPU counters' address (CPU 0's copy) | mode bits: */
	unsigned long pcpu_count_ptr;
	struct pcpu_ref_data *data;  /* count, release, flags, lock (malloc'd) */
};
#define SLUB_PCPU_REF_ATOMIC 1UL    /* the count is data->count */
#define SLUB_PCPU_REF_DEAD 2UL      /* killed: tryget_live fails */
#define SLUB_PCPU_REF_NORSEQ 4UL    /* fallback mode: per-CPU ops go out of line */
#define SLUB_PCPU_REF_FLAGS 7UL

/* percpu_ref_init: the count starts at 1 (the initial reference, dropped by kill) in per-CPU
 * mode, unless flags say otherwise. release(ref) runs once the count reaches zero after a
 * kill (any thread, from the call that dropped the last reference; it may call
 * pcpu_ref_exit and free the object). Returns 0 or -ENOMEM. */
int pcpu_ref_init(struct pcpu_ref *ref, pcpu_ref_func_t *release, unsigned int flags);
/* percpu_ref_exit: frees the per-CPU counters and the shared data; ref must be idle (no
 * concurrent operation). Afterwards only pcpu_ref_is_zero / is_dying may be called. */
void pcpu_ref_exit(struct pcpu_ref *ref);
/* percpu_ref_switch_to_atomic: switch to atomic mode (sticky until switch_to_percpu) and call
 * confirm_switch (if not NULL) once every CPU's count has been folded into the atomic count.
 * Synchronous here: the grace period and confirm_switch happen before it returns. Switches of
 * one ref are serialized; confirm_switch must not switch the same ref. */
void pcpu_ref_switch_to_atomic(struct pcpu_ref *ref, pcpu_ref_func_t *confirm_switch);
/* percpu_ref_switch_to_atomic_sync: switch to atomic mode and wait for it to be complete. */
void pcpu_ref_switch_to_atomic_sync(struct pcpu_ref *ref);
/* percpu_ref_switch_to_percpu: back to per-CPU mode (needs the per-CPU counters, i.e.
 * PCPU_REF_ALLOW_REINIT or INIT_ATOMIC/INIT_DEAD); a dying ref stays atomic until resurrected. */
void pcpu_ref_switch_to_percpu(struct pcpu_ref *ref);
/* percpu_ref_kill_and_confirm: mark the ref dead, switch it to atomic mode, call confirm_kill
 * (if not NULL) once tryget_live is guaranteed to fail everywhere, then drop the initial
 * reference. release runs when the last reference goes (possibly inside this call). Killing
 * a ref that is already dying is reported (once) and does nothing else (the kernel would drop
 * one more reference). */
void pcpu_ref_kill_and_confirm(struct pcpu_ref *ref, pcpu_ref_func_t *confirm_kill);
/* percpu_ref_kill: pcpu_ref_kill_and_confirm(ref, NULL). */
static inline void pcpu_ref_kill(struct pcpu_ref *ref) { pcpu_ref_kill_and_confirm(ref, NULL); }
/* percpu_ref_resurrect: undo a kill: clear DEAD, take back the initial reference and return
 * to per-CPU mode (unless forced atomic). The ref must be dying and must not have reached
 * zero (or use reinit); it needs its per-CPU counters (ALLOW_REINIT) to become per-CPU. */
void pcpu_ref_resurrect(struct pcpu_ref *ref);
/* percpu_ref_reinit: re-initialize a killed ref whose count reached zero (release ran):
 * the count is 1 again, per-CPU mode (unless forced atomic). */
void pcpu_ref_reinit(struct pcpu_ref *ref);
/* percpu_ref_is_zero: true if the ref is in atomic mode and its count is zero (false in
 * per-CPU mode, where the count cannot be known without a switch). */
bool pcpu_ref_is_zero(struct pcpu_ref *ref);

void pcpu_ref_get_slow(struct pcpu_ref *ref, unsigned long nr);
void pcpu_ref_put_slow(struct pcpu_ref *ref, unsigned long nr);
bool pcpu_ref_tryget_slow(struct pcpu_ref *ref, unsigned long nr);
bool pcpu_ref_tryget_live_slow(struct pcpu_ref *ref);


static inline bool slub_pcpu_ref_fast(struct pcpu_ref *ref)
{
	return __builtin_expect(
		!(__atomic_load_n(&ref->pcpu_count_ptr, __ATOMIC_RELAXED) & SLUB_PCPU_REF_FLAGS), 1);
}

/* percpu_ref_get_many: take nr references; the caller must already hold one (or otherwise
 * know the count is not zero). Per-CPU mode: one add to this CPU's counter. */
static inline void pcpu_ref_get_many(struct pcpu_ref *ref, unsigned long nr)
{
	if (slub_pcpu_ref_fast(ref) &&
	    __builtin_expect(slub_pcpu_ref_rseq_add(&ref->pcpu_count_ptr, nr), 1))
		return;
	pcpu_ref_get_slow(ref, nr);
}
/* percpu_ref_get: pcpu_ref_get_many(ref, 1). */
static inline void pcpu_ref_get(struct pcpu_ref *ref) { pcpu_ref_get_many(ref, 1); }

/* percpu_ref_tryget_many: take nr references unless the count is zero (possible only in
 * atomic mode); true on success. Succeeds on a dying ref that has not reached zero. */
static inline bool pcpu_ref_tryget_many(struct pcpu_ref *ref, unsigned long nr)
{
	if (slub_pcpu_ref_fast(ref) &&
	    __builtin_expect(slub_pcpu_ref_rseq_add(&ref->pcpu_count_ptr, nr), 1))
		return true;
	return pcpu_ref_tryget_slow(ref, nr);
}
/* percpu_ref_tryget: pcpu_ref_tryget_many(ref, 1). */
static inline bool pcpu_ref_tryget(struct pcpu_ref *ref) { return pcpu_ref_tryget_many(ref, 1); }

/* percpu_ref_tryget_live: take a reference unless the ref is dying (killed) or zero; true on
 * success. Guaranteed to fail once kill_and_confirm's confirm_kill has been called (it may
 * still succeed while a kill is in progress, before that). */
static inline bool pcpu_ref_tryget_live(struct pcpu_ref *ref)
{
	if (slub_pcpu_ref_fast(ref) &&
	    __builtin_expect(slub_pcpu_ref_rseq_add(&ref->pcpu_count_ptr, 1), 1))
		return true;
	return pcpu_ref_tryget_live_slow(ref);
}

/* percpu_ref_put_many: drop nr references. In atomic mode, the put that brings the count to
 * zero calls release. Per-CPU mode: one subtraction from this CPU's counter. */
static inline void pcpu_ref_put_many(struct pcpu_ref *ref, unsigned long nr)
{
	if (slub_pcpu_ref_fast(ref) &&
	    __builtin_expect(slub_pcpu_ref_rseq_add(&ref->pcpu_count_ptr, 0UL - nr), 1))
		return;
	pcpu_ref_put_slow(ref, nr);
}
/* percpu_ref_put: pcpu_ref_put_many(ref, 1). */
static inline void pcpu_ref_put(struct pcpu_ref *ref) { pcpu_ref_put_many(ref, 1); }

/* percpu_ref_is_dying: true once kill has started (until resurrect / reinit). */
static inline bool pcpu_ref_is_dying(struct pcpu_ref *ref)
{
	return __atomic_load_n(&ref->pcpu_count_ptr, __ATOMIC_RELAXED) & SLUB_PCPU_REF_DEAD;
}

#ifdef __cplusplus
}
#endif
/* ===================== end of per-CPU memory, counters and reference counts ===================== */

#endif
