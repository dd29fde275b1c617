/* slubmalloc_rseq_none.h: where slubmalloc has no rseq sections (aarch64), the hooks that
 * slubmalloc.h's per-CPU fastpaths call, each reporting "not done", so every call takes its
 * slow path: the fallback that slub_pcpu_rseq = 0 selects at run time (a CAS on the slot of
 * sched_getcpu()'s CPU). Included by slubmalloc.h; not for direct use. */
#ifndef SLUBMALLOC_RSEQ_NONE_H
#define SLUBMALLOC_RSEQ_NONE_H

#include <stdbool.h>

static inline int slub_rseq_cpu_id(void)
{
	return -1;
}

static inline bool slub_pcpu_rseq_add(long *p, long v)
{
	(void)p, (void)v;
	return false;
}

static inline bool slub_pcpu_counter_rseq_add(int *base, long long amount, long long bm1,
					      unsigned long long lim)
{
	(void)base, (void)amount, (void)bm1, (void)lim;
	return false;
}

static inline bool slub_pcpu_ref_rseq_add(unsigned long *word, unsigned long nr)
{
	(void)word, (void)nr;
	return false;
}

#endif
