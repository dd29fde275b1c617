/* stats.h: the event counters of SLUBMALLOC_STATS=1 and glibc's statistics calls (stats.c).
 * Invariant: a live thread's counters are written by that thread alone. */
#ifndef SM_STATS_H
#define SM_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "options.h"
#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

/* "stats.c": event counters, kept per thread (plain increments) only when SLUBMALLOC_STATS=1
 * and summed when read; each call site is on a slow path. Rows: size classes, then typed ids. */
enum sm_event {
	EV_ALLOC_SLOW,      /* malloc found its stack empty and refilled it */
	EV_REFILL_TAKEALL,  /* a refill took the active slab's whole shared freelist (one cas16) */
	EV_FREE_FAST,       /* free pushed the object onto the thread's own stack */
	EV_FREE_REMOTE,     /* free straight to the object's slab (a thread without a cache, a
			     * typed object) */
	EV_CAS_RETRY,       /* a cas16 on a slab's word failed and was retried */
	EV_SLAB_NEW,
	EV_SLAB_FREE,
	EV_ALLOC_FAST,      /* malloc served from the thread's stack */
	EV_BYTES,           /* bytes asked for by those mallocs */
	NEV
};
#define NROWS (NCLASS + MAX_TYPED)
struct sm_tstats {
	uint64_t ev[NROWS][NEV];
};
static inline unsigned sm_row(const struct cache *c)
{
	return c->cls < NCLASS ? c->cls : NCLASS + c->id;
}
void sm_count_slow(const struct cache *c, unsigned ev, uint64_t n);
static inline void sm_count(const struct cache *c, unsigned ev, uint64_t n)
{
	if (unlikely(sm_opt.stats))
		sm_count_slow(c, ev, n);
}
void sm_stats_thread_start(struct tcache *tc);
void sm_stats_thread_exit(struct tcache *tc);  /* after it left the registry */
void sm_stats_print(int fd);
void sm_stats_after_fork(void);                /* a child: the scratch locks free */
struct sm_snapshot {                           /* for jemalloc's names (mallctl.c) */
	uint64_t allocated, small_allocated, large_bytes; /* slub_stats' in use, small, large */
	uint64_t mapped, slab_mapped, resident; /* slub_stats' bytes_mapped, slab_bytes_mapped, ... */
	uint64_t slab_bytes_active;            /* slabs with an object in use, whole */
	uint64_t dirty_bytes;                  /* free slab pages not yet purged */
	uint64_t retained;                     /* freed large ranges kept mapped, purged (in
						* mapped) */
	struct { uint64_t curregs, curslabs, nonfull; } bin[NCLASS]; /* curregs: as jemalloc's,
								 * with the thread caches' objects */
};
void sm_stats_snapshot(struct sm_snapshot *o);
void sm_malloc_stats(void);                    /* glibc's malloc_stats (stderr) */
int sm_malloc_info(int options, FILE *fp);     /* glibc's malloc_info (XML) */
int sm_mallopt(int param, int value);          /* accepted, no effect */
struct mallinfo2 sm_mallinfo2(void);
struct mallinfo sm_mallinfo(void);
extern uint64_t sm_trim_gen;                   /* malloc_trim calls so far (trim.c) */

#pragma GCC visibility pop

#endif
