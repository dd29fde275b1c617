/* percpu_internal.h: declarations shared by the per-CPU files (percpu.c, pcpu_ref.c, cpu.c)
 * and their unit tests. The per-CPU part depends only on the platform layer (platform.h) and
 * the reports (report.h); nothing of the malloc engine depends on it but fork.c's locking.
 * Invariants: the mode (rseq or fallback) is chosen once, by pcpu_setup(), before the first
 * per-CPU area exists, and never changes; cpu numbers are < pcpu_ncpus. */
#ifndef SM_PERCPU_INTERNAL_H
#define SM_PERCPU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "slubmalloc.h"

#include "platform.h"
#include "report.h"

#pragma GCC visibility push(hidden)

/* A per-CPU slot's value while a fallback-mode reference is closed (atomic mode): per-CPU ops
 * that find it go to the atomic count instead. A live slot cannot reach it (that would take
 * 2^63 net operations on one CPU, the same bound the kernel's PERCPU_COUNT_BIAS relies on). */
#define PCPU_SLOT_CLOSED (1UL << 63)
/* The bias of the atomic count in per-CPU mode (the kernel's PERCPU_COUNT_BIAS). */
#define PCPU_COUNT_BIAS (1UL << 63)
#define PCPU_REF_FLAG_BITS 3

/* The shared part of a pcpu_ref (the kernel's percpu_ref_data), malloc'd by pcpu_ref_init. */
struct pcpu_ref_data {
	unsigned long count;        /* atomic count (biased by PCPU_COUNT_BIAS in per-CPU mode) */
	pcpu_ref_func_t *release;   /* called once when count reaches zero */
	struct pcpu_ref *ref;       /* back pointer */
	bool force_atomic;          /* switch_to_atomic was called (until switch_to_percpu) */
	bool allow_reinit;          /* keep the per-CPU counters in atomic mode */
	bool pcpu_retired;          /* killed without allow_reinit: never per-CPU again (the
				     * fallback keeps the memory until exit, rseq mode frees it) */
	pthread_mutex_t lock;       /* serializes mode switches, kill, resurrect of this ref */
};

/* A test-and-test-and-set lock that yields the CPU, for the per-CPU slow paths. */
static inline void pcpu_spin_lock(int *l)
{
	for (unsigned spins = 0;; spins++) {
		if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return;
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			if (spins++ < 100)
				cpu_relax();
			else
				sm_os_yield();
		}
	}
}
static inline void pcpu_spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* "percpu.c": chunk allocator (pcpu_alloc / pcpu_free are public) */
size_t pcpu_chunk_count(void);       /* chunks mapped now (tests) */
void pcpu_chunks_lock(void);         /* fork: the chunk list's lock */
void pcpu_chunks_unlock(bool child);

/* "pcpu_ref.c" */
void pcpu_lock_all(void);            /* fork: every global per-CPU lock (src/fork.c) */
void pcpu_unlock_all(bool child);

#pragma GCC visibility pop

#endif
