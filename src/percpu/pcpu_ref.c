/* pcpu_ref.c: per-CPU reference counts (the kernel's percpu_ref, "bigrefs") and per-CPU
 * counters (percpu_counter): the slow paths, the mode switches and their grace period. The
 * fastpaths are inline in include/slubmalloc.h.
 *
 * ---------------------------------------------------------------------------------------------
 * STATE. A ref is { pcpu_count_ptr = slots | mode bits, data }: slots[c] (CPU c's counter,
 * unsigned long, in per-CPU memory) and data->count (an unsigned long, changed only by atomic
 * instructions). Mode bits: ATOMIC (the count is data->count), DEAD (killed), NORSEQ (fallback
 * mode, fixed at init). "Per-CPU mode" = neither ATOMIC nor DEAD. All arithmetic is modulo
 * 2^64. The true count N (references held) always satisfies
 *     N = data->count - (per-CPU mode or a switch in progress ? BIAS : 0) + sum_c slots[c]
 * where BIAS = 2^63 (PERCPU_COUNT_BIAS), and slots are summed only while they can change.
 *
 * OPERATIONS. get/put/tryget* read the mode word; in per-CPU mode they add +-nr to this CPU's
 * slot, otherwise they use data->count (get: add; put: sub-and-test, release at 0; tryget:
 * add unless 0; tryget_live: fail if DEAD, else increment unless 0). Each operation changes
 * exactly one of the two places, so N stays exact.
 *
 * SWITCH TO ATOMIC (kill, switch_to_atomic; serialized by data->lock; synchronous):
 *   1. set ATOMIC (DEAD first, for kill) in the mode word (seq_cst store);
 *   2. take the switch's own reference: data->count += 1 (atomic);
 *   3. grace period: after it, no per-CPU add that read the old mode can still land (below);
 *   4. S = sum of the slots; data->count += S - BIAS (atomic): now data->count == N exactly;
 *   5. call confirm; drop the switch's reference (and, for kill, the initial one) with an
 *      atomic sub-and-test after unlocking, which calls release if N reached zero.
 * Release runs exactly once, at true zero, never before: release is called only by a put whose
 * sub-and-test brought data->count to 0. Before step 4, data->count = BIAS + (atomic-mode
 * changes since the last fold), and |that change| < 2^63 (fewer than 2^63 references), so it
 * is not 0. At step 4 the switch's reference keeps N >= 1, so the fold itself cannot make the
 * count 0 unseen. From then on data->count == N and every change is atomic: the put that takes
 * N from 1 to 0 is unique, and a correct program takes no reference once N is 0 (tryget and
 * tryget_live refuse 0), so release runs once.
 * SWITCH TO PER-CPU (switch_to_percpu, resurrect; ATOMIC set, not DEAD): data->count += BIAS,
 * then every slot = 0, then clear ATOMIC with a release store. While ATOMIC is set no per-CPU
 * add lands (step 3 of the previous switch), so zeroing loses nothing; the bias is in place
 * before any per-CPU op can see per-CPU mode again.
 *
 * THE GRACE PERIOD, rseq mode. A per-CPU op is one rseq critical section (slubmalloc.h):
 * publish the descriptor, check cpu_id, LOAD THE MODE WORD, branch out unless per-CPU, and
 * commit with one `add` to slots[cpu]. Step 3 is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ):
 * when it returns, every thread of the process that was running has been interrupted (IPI) and
 * has executed a full barrier, and any critical section it was inside has been restarted; a
 * thread that was not running went through the scheduler, which aborts a preempted section on
 * resume and orders its accesses (the membarrier contract). So a section that loaded the old
 * (per-CPU) mode either committed before membarrier returned, and its add is visible to the
 * sum of step 4 (the barrier orders it), or it never commits: it is restarted and reloads the
 * mode, which it now reads as ATOMIC (the store of step 1 precedes membarrier's barrier and
 * the restarted load follows it). A section loaded after the barrier reads ATOMIC too. Hence
 * after step 3 the slots are frozen: the sum is exact. The add itself needs no lock prefix:
 * slots[c] is changed only by sections running on CPU c (the cpu_id check; migration implies
 * preemption, which aborts), sections on one CPU never interleave (preemption aborts the
 * interrupted one), and other CPUs only read it (step 4) or write it while no section can
 * commit (switch to per-CPU, free).
 * Per-CPU memory freed at kill (no ALLOW_REINIT) is freed after step 3: no section can use it.
 *
 * THE FALLBACK (no rseq, or no membarrier RSEQ; chosen once, recorded as NORSEQ in every ref).
 * A per-CPU op is out of line: slot = slots[sched_getcpu()] (any slot is correct, the CPU is
 * only a locality hint), then `lock cmpxchg` slot: v -> v + nr unless v == CLOSED (2^63), in
 * which case it takes the atomic path. Step 3+4 become: for each slot, S += xchg(slot, CLOSED).
 * Each slot's operations are linearizable (CAS and xchg on one word): an op either changed the
 * slot before the xchg (so it is in S) or finds CLOSED and changes data->count, which already
 * carries the bias until step 4, so no grace period is needed. A CAS that read the slot long
 * ago fails if the slot changed (or succeeds on a re-opened slot, after the switch to per-CPU
 * added the bias: it then simply counts in the new per-CPU epoch). tryget_live that finds
 * CLOSED reloads the mode (ordered after DEAD, which kill stores before closing) and fails if
 * DEAD. The switch to per-CPU re-opens slots by storing 0 (after adding the bias). Per-CPU
 * memory is freed only by pcpu_ref_exit in this mode (a stale CAS could still touch it).
 * ---------------------------------------------------------------------------------------------
 *
 * Counters: count (folded, under `lock`) + per-CPU int deltas with |delta| < batch. The inline
 * add stores delta + amount in one rseq section when the result stays within the batch;
 * otherwise the slow path, under the lock, takes this CPU's delta (rseq section: load, store 0)
 * and adds delta + amount to count. pcpu_counter_sum reads count and every delta under the
 * same lock, so a fold is seen entirely or not at all; each fastpath add is a single store.
 * Fallback: CAS on the delta, xchg(delta, 0) to fold. */
#include <errno.h>
#include <stdlib.h>

#include "percpu_internal.h"
#if defined(__x86_64__)
#include "rseq_x86_64.h"
#else
#include "rseq_none.h"
#endif

#define ATOMIC SLUB_PCPU_REF_ATOMIC
#define DEAD SLUB_PCPU_REF_DEAD
#define NORSEQ SLUB_PCPU_REF_NORSEQ
#define FLAGS SLUB_PCPU_REF_FLAGS

static int exit_lock; /* ref->data vs pcpu_ref_exit, for pcpu_ref_is_zero */

static inline unsigned long mode_load(struct pcpu_ref *ref)
{
	return __atomic_load_n(&ref->pcpu_count_ptr, __ATOMIC_ACQUIRE);
}
static inline bool is_percpu(unsigned long p)
{
	return !(p & (ATOMIC | DEAD));
}
static inline unsigned long *slots_of(unsigned long p)
{
	return (unsigned long *)(p & ~FLAGS);
}

static void warn_once(int *done, const char *msg)
{
	if (__atomic_exchange_n(done, 1, __ATOMIC_RELAXED))
		return;
	sm_write(2, "slubmalloc: ");
	sm_write(2, msg);
	sm_write(2, "\n");
}

/* Fallback mode: slots[this cpu] += nr unless the slot is closed; false when closed. */
static bool fallback_add(unsigned long p, unsigned long nr)
{
	unsigned long *slot = pcpu_ptr(slots_of(p), pcpu_fallback_cpu());
	unsigned long v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	do {
		if (v == PCPU_SLOT_CLOSED)
			return false;
	} while (!__atomic_compare_exchange_n(slot, &v, v + nr, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_ACQUIRE));
	return true;
}

/* Per-CPU mode add, out of line. 1: done; 0: the ref is not per-CPU (any more): reload. */
static int percpu_add(struct pcpu_ref *ref, unsigned long p, unsigned long nr)
{
	if (p & NORSEQ)
		return fallback_add(p, nr);
	pcpu_rseq_check_thread();
	return slub_pcpu_ref_rseq_add(&ref->pcpu_count_ptr, nr);
}

SM_EXPORT void pcpu_ref_get_slow(struct pcpu_ref *ref, unsigned long nr)
{
	for (;;) {
		unsigned long p = mode_load(ref);
		if (is_percpu(p)) {
			if (percpu_add(ref, p, nr))
				return;
			if (p & NORSEQ) /* closed: the count is data->count (biased or exact) */
				break;
			continue; /* rseq: aborted or the mode changed: reload */
		}
		break;
	}
	__atomic_fetch_add(&ref->data->count, nr, __ATOMIC_RELAXED);
}

SM_EXPORT void pcpu_ref_put_slow(struct pcpu_ref *ref, unsigned long nr)
{
	for (;;) {
		unsigned long p = mode_load(ref);
		if (is_percpu(p)) {
			if (percpu_add(ref, p, 0UL - nr))
				return;
			if (p & NORSEQ)
				break;
			continue;
		}
		break;
	}
	struct pcpu_ref_data *d = ref->data;
	if (__atomic_sub_fetch(&d->count, nr, __ATOMIC_ACQ_REL) == 0 && d->release)
		d->release(ref);
}

/* atomic_long_add_unless(count, nr, 0) */
static bool add_unless_zero(struct pcpu_ref_data *d, unsigned long nr)
{
	unsigned long v = __atomic_load_n(&d->count, __ATOMIC_RELAXED);
	do {
		if (v == 0)
			return false;
	} while (!__atomic_compare_exchange_n(&d->count, &v, v + nr, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return true;
}

SM_EXPORT bool pcpu_ref_tryget_slow(struct pcpu_ref *ref, unsigned long nr)
{
	for (;;) {
		unsigned long p = mode_load(ref);
		if (is_percpu(p)) {
			if (percpu_add(ref, p, nr))
				return true;
			if (p & NORSEQ)
				break;
			continue;
		}
		break;
	}
	return add_unless_zero(ref->data, nr);
}

SM_EXPORT bool pcpu_ref_tryget_live_slow(struct pcpu_ref *ref)
{
	for (;;) {
		unsigned long p = mode_load(ref);
		if (is_percpu(p)) {
			if (percpu_add(ref, p, 1))
				return true;
			continue; /* aborted, or closed: the reload sees ATOMIC (and DEAD if killed) */
		}
		if (p & DEAD)
			return false;
		return add_unless_zero(ref->data, 1);
	}
}

SM_EXPORT int pcpu_ref_init(struct pcpu_ref *ref, pcpu_ref_func_t *release, unsigned int flags)
{
	pcpu_setup();
	unsigned long *slots = pcpu_alloc(sizeof(unsigned long), sizeof(unsigned long));
	struct pcpu_ref_data *d = slots ? malloc(sizeof *d) : NULL;
	if (!d) {
		pcpu_free(slots);
		ref->pcpu_count_ptr = 0;
		ref->data = NULL;
		return -ENOMEM;
	}
	unsigned long p = (unsigned long)slots | (slub_pcpu_rseq ? 0 : NORSEQ);
	unsigned long start = 0;
	d->pcpu_retired = false;
	d->force_atomic = flags & PCPU_REF_INIT_ATOMIC;
	d->allow_reinit = flags & PCPU_REF_ALLOW_REINIT;
	if (flags & (PCPU_REF_INIT_ATOMIC | PCPU_REF_INIT_DEAD)) {
		p |= ATOMIC;
		d->allow_reinit = true;
		if (p & NORSEQ)
			for (int c = 0; c < pcpu_ncpus; c++)
				*pcpu_ptr(slots, c) = PCPU_SLOT_CLOSED;
	} else {
		start += PCPU_COUNT_BIAS;
	}
	if (flags & PCPU_REF_INIT_DEAD)
		p |= DEAD;
	else
		start++;
	d->count = start;
	d->release = release;
	d->ref = ref;
	pthread_mutex_init(&d->lock, NULL);
	ref->data = d;
	__atomic_store_n(&ref->pcpu_count_ptr, p, __ATOMIC_RELEASE);
	return 0;
}

/* Steps 1-4 of the switch to atomic (data->lock held). True when it took the switch's own
 * reference, which the caller drops after unlocking. */
static bool to_atomic_locked(struct pcpu_ref *ref, pcpu_ref_func_t *confirm)
{
	struct pcpu_ref_data *d = ref->data;
	unsigned long p = ref->pcpu_count_ptr;
	if (p & ATOMIC) {
		if (confirm)
			confirm(ref);
		return false;
	}
	__atomic_store_n(&ref->pcpu_count_ptr, p | ATOMIC, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&d->count, 1, __ATOMIC_SEQ_CST);
	unsigned long *slots = slots_of(p), sum = 0;
	if (p & NORSEQ) {
		for (int c = 0; c < pcpu_ncpus; c++)
			sum += __atomic_exchange_n(pcpu_ptr(slots, c), PCPU_SLOT_CLOSED,
						   __ATOMIC_SEQ_CST);
	} else {
		pcpu_grace_period();
		for (int c = 0; c < pcpu_ncpus; c++)
			sum += __atomic_load_n(pcpu_ptr(slots, c), __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&d->count, sum - PCPU_COUNT_BIAS, __ATOMIC_SEQ_CST);
	if (confirm)
		confirm(ref);
	if (!d->allow_reinit && (p & DEAD)) {
		d->pcpu_retired = true;
		if (!(p & NORSEQ)) {
			__atomic_store_n(&ref->pcpu_count_ptr, ATOMIC | DEAD, __ATOMIC_RELEASE);
			pcpu_free(slots);
		}
	}
	return true;
}

static void to_percpu_locked(struct pcpu_ref *ref)
{
	static int warned;
	unsigned long p = ref->pcpu_count_ptr;
	if (!(p & ATOMIC))
		return;
	unsigned long *slots = slots_of(p);
	if (!slots || ref->data->pcpu_retired) {
		warn_once(&warned, "pcpu_ref: per-CPU mode needs PCPU_REF_ALLOW_REINIT; "
				   "the ref stays atomic");
		return;
	}
	__atomic_fetch_add(&ref->data->count, PCPU_COUNT_BIAS, __ATOMIC_SEQ_CST);
	for (int c = 0; c < pcpu_ncpus; c++)
		__atomic_store_n(pcpu_ptr(slots, c), 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ref->pcpu_count_ptr, p & ~ATOMIC, __ATOMIC_RELEASE);
}

/* __percpu_ref_switch_mode: atomic if forced or dying, else per-CPU. */
static bool switch_mode_locked(struct pcpu_ref *ref, pcpu_ref_func_t *confirm)
{
	if (ref->data->force_atomic || (ref->pcpu_count_ptr & DEAD))
		return to_atomic_locked(ref, confirm);
	to_percpu_locked(ref);
	return false;
}

SM_EXPORT void pcpu_ref_switch_to_atomic(struct pcpu_ref *ref, pcpu_ref_func_t *confirm_switch)
{
	struct pcpu_ref_data *d = ref->data;
	pthread_mutex_lock(&d->lock);
	d->force_atomic = true;
	bool extra = switch_mode_locked(ref, confirm_switch);
	pthread_mutex_unlock(&d->lock);
	if (extra)
		pcpu_ref_put(ref);
}

SM_EXPORT void pcpu_ref_switch_to_atomic_sync(struct pcpu_ref *ref)
{
	pcpu_ref_switch_to_atomic(ref, NULL); /* synchronous already */
}

SM_EXPORT void pcpu_ref_switch_to_percpu(struct pcpu_ref *ref)
{
	struct pcpu_ref_data *d = ref->data;
	pthread_mutex_lock(&d->lock);
	d->force_atomic = false;
	bool extra = switch_mode_locked(ref, NULL);
	pthread_mutex_unlock(&d->lock);
	if (extra)
		pcpu_ref_put(ref);
}

SM_EXPORT void pcpu_ref_kill_and_confirm(struct pcpu_ref *ref, pcpu_ref_func_t *confirm_kill)
{
	static int warned;
	struct pcpu_ref_data *d = ref->data;
	pthread_mutex_lock(&d->lock);
	unsigned long p = ref->pcpu_count_ptr;
	if (p & DEAD) {
		pthread_mutex_unlock(&d->lock);
		warn_once(&warned, "pcpu_ref_kill_and_confirm called on a dying ref (ignored)");
		return;
	}
	__atomic_store_n(&ref->pcpu_count_ptr, p | DEAD, __ATOMIC_SEQ_CST);
	bool extra = switch_mode_locked(ref, confirm_kill);
	pthread_mutex_unlock(&d->lock);
	/* the initial reference, and the switch's: ref may be released (and freed) here */
	pcpu_ref_put_many(ref, extra ? 2 : 1);
}

SM_EXPORT void pcpu_ref_resurrect(struct pcpu_ref *ref)
{
	static int warned;
	struct pcpu_ref_data *d = ref->data;
	pthread_mutex_lock(&d->lock);
	unsigned long p = ref->pcpu_count_ptr;
	if (!(p & DEAD) || !(p & ATOMIC)) {
		pthread_mutex_unlock(&d->lock);
		warn_once(&warned, "pcpu_ref_resurrect of a ref that is not dying (ignored)");
		return;
	}
	__atomic_store_n(&ref->pcpu_count_ptr, p & ~DEAD, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&d->count, 1, __ATOMIC_SEQ_CST); /* the new initial reference */
	bool extra = switch_mode_locked(ref, NULL);         /* atomic already: never extra */
	pthread_mutex_unlock(&d->lock);
	if (extra)
		pcpu_ref_put(ref);
}

SM_EXPORT void pcpu_ref_reinit(struct pcpu_ref *ref)
{
	static int warned;
	if (!pcpu_ref_is_zero(ref))
		warn_once(&warned, "pcpu_ref_reinit of a ref whose count is not zero");
	pcpu_ref_resurrect(ref);
}

SM_EXPORT bool pcpu_ref_is_zero(struct pcpu_ref *ref)
{
	if (is_percpu(mode_load(ref)))
		return false;
	unsigned long count;
	pcpu_spin_lock(&exit_lock);
	if (ref->data)
		count = __atomic_load_n(&ref->data->count, __ATOMIC_ACQUIRE);
	else
		count = ref->pcpu_count_ptr >> PCPU_REF_FLAG_BITS;
	pcpu_spin_unlock(&exit_lock);
	return count == 0;
}

SM_EXPORT void pcpu_ref_exit(struct pcpu_ref *ref)
{
	struct pcpu_ref_data *d = ref->data;
	if (!d)
		return;
	unsigned long *slots = slots_of(ref->pcpu_count_ptr);
	if (slots)
		pcpu_free(slots);
	pcpu_spin_lock(&exit_lock);
	ref->pcpu_count_ptr = ATOMIC | DEAD | (d->count << PCPU_REF_FLAG_BITS);
	ref->data = NULL;
	pcpu_spin_unlock(&exit_lock);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* ---------------------------------- per-CPU counters ---------------------------------- */

SM_EXPORT int pcpu_counter_init(struct pcpu_counter *c, long long value)
{
	pcpu_setup();
	int *deltas = pcpu_alloc(sizeof(int), sizeof(int));
	c->pcpu = 1;
	c->batch = pcpu_ncpus * 2 > 32 ? pcpu_ncpus * 2 : 32;
	c->lock = 0;
	c->count = value;
	if (!deltas)
		return -ENOMEM;
	__atomic_store_n(&c->pcpu, (uintptr_t)deltas | (slub_pcpu_rseq ? 0 : 1), __ATOMIC_RELEASE);
	return 0;
}

SM_EXPORT void pcpu_counter_destroy(struct pcpu_counter *c)
{
	int *deltas = (int *)(c->pcpu & ~(uintptr_t)1);
	c->pcpu = 1; /* later adds go to count, under the lock */
	pcpu_free(deltas);
}

static void fold(struct pcpu_counter *c, long long delta)
{
	__atomic_store_n(&c->count, c->count + delta, __ATOMIC_RELAXED);
}

SM_EXPORT void pcpu_counter_add_slow(struct pcpu_counter *c, long long amount)
{
	int *deltas = (int *)(c->pcpu & ~(uintptr_t)1);
	long long b = c->batch;
	int v;
	if (!deltas) {
		pcpu_spin_lock(&c->lock);
		fold(c, amount);
		pcpu_spin_unlock(&c->lock);
		return;
	}
	if (!(c->pcpu & 1)) {
		/* rseq: the section was aborted, or the delta would reach +-batch */
		pcpu_rseq_check_thread();
		if (slub_pcpu_counter_rseq_add(deltas, amount, b - 1, (unsigned long long)(2 * b - 1)))
			return;
		pcpu_spin_lock(&c->lock);
		while (!pcpu_rseq_take_int(deltas, &v))
			;
		fold(c, v + amount);
		pcpu_spin_unlock(&c->lock);
		return;
	}
	int *slot = pcpu_ptr(deltas, pcpu_fallback_cpu());
	v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	for (;;) {
		long long n = v + amount;
		if (n <= -b || n >= b)
			break;
		if (__atomic_compare_exchange_n(slot, &v, (int)n, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return;
	}
	pcpu_spin_lock(&c->lock);
	v = __atomic_exchange_n(slot, 0, __ATOMIC_RELAXED);
	fold(c, v + amount);
	pcpu_spin_unlock(&c->lock);
}

SM_EXPORT long long pcpu_counter_sum(struct pcpu_counter *c)
{
	int *deltas = (int *)(c->pcpu & ~(uintptr_t)1);
	pcpu_spin_lock(&c->lock);
	long long s = c->count;
	if (deltas)
		for (int cpu = 0; cpu < pcpu_ncpus; cpu++)
			s += __atomic_load_n(pcpu_ptr(deltas, cpu), __ATOMIC_RELAXED);
	pcpu_spin_unlock(&c->lock);
	return s;
}

SM_EXPORT int pcpu_counter_compare(struct pcpu_counter *c, long long rhs)
{
	long long err = (long long)c->batch * pcpu_ncpus;
	__int128 diff = (__int128)pcpu_counter_read(c) - rhs;
	if (diff > err)
		return 1;
	if (diff < -err)
		return -1;
	long long s = pcpu_counter_sum(c);
	return s > rhs ? 1 : s < rhs ? -1 : 0;
}

/* fork (src/fork.c): chunks, then exit_lock; neither is held while the other is taken. */
void pcpu_lock_all(void)
{
	pcpu_chunks_lock();
	pcpu_spin_lock(&exit_lock);
}

void pcpu_unlock_all(bool child)
{
	(void)child; /* a spin lock's word: unlocking is re-initialising */
	pcpu_spin_unlock(&exit_lock);
	pcpu_chunks_unlock(child);
}
