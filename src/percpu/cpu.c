/* cpu.c: the per-CPU API's own small calls: which mode is in use, the number of CPUs, this
 * CPU's number and the slow path of pcpu_this_add (slubmalloc.h inlines the fast one).
 * Invariant: the mode is chosen once, by pcpu_setup() (platform/rseq.c), and never changes. */
#include "percpu_internal.h"

SM_EXPORT int pcpu_rseq_active(void)
{
	pcpu_setup();
	return slub_pcpu_rseq;
}

SM_EXPORT int pcpu_nr_cpus(void)
{
	pcpu_setup();
	return pcpu_ncpus;
}

SM_EXPORT int pcpu_this_cpu_slow(void)
{
	pcpu_setup();
	return pcpu_fallback_cpu();
}

SM_EXPORT void pcpu_this_add_slow(long *p, long v)
{
	if (slub_pcpu_rseq) {
		/* aborted section (or a migration before it): retry in rseq mode; a locked add
		 * here could race with the owning CPU's plain adds */
		pcpu_rseq_check_thread();
		while (!slub_pcpu_rseq_add(p, v))
			;
		return;
	}
	__atomic_fetch_add(pcpu_ptr(p, pcpu_fallback_cpu()), v, __ATOMIC_RELAXED);
}
