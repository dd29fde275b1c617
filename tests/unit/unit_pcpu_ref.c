/* unit_pcpu_ref.c: struct pcpu_ref (percpu_ref semantics).
 * 1. Semantics, single-threaded: init flags (default, INIT_ATOMIC, INIT_DEAD, ALLOW_REINIT),
 *    get/get_many/tryget/tryget_many/tryget_live/put/put_many in both modes, kill and
 *    kill_and_confirm (confirm runs before kill returns; tryget_live fails from then on),
 *    release exactly at zero, switch_to_atomic(+confirm)/_sync/switch_to_percpu, resurrect,
 *    reinit, is_zero, is_dying, exit; the exact atomic count after each switch.
 * 2. Kill race, thousands of rounds: worker threads take references with tryget_live and
 *    hold, nest (get, tryget, get_many), hand some to other threads through a mailbox (so gets
 *    and puts land on different CPUs: per-CPU counters go negative) and drop them, while the
 *    main thread kills the ref at a random moment. Every round: release runs exactly once,
 *    only when the shadow count (references the threads say they hold, plus mailbox tokens) is
 *    zero, never before confirm_kill, and no tryget_live succeeds once confirm_kill has run.
 * 3. Switch round trips under load: the same workers while the main thread switches
 *    atomic <-> per-CPU thousands of times; at pauses, the exact count (1 + mailbox tokens) is
 *    checked after switch_to_atomic_sync; finally kill: release exactly once.
 * 4. fork: a child kills and switches refs (its own and inherited ones).
 * Runs in rseq mode, then re-executes itself under GLIBC_TUNABLES=glibc.pthread.rseq=0.
 * Two "slubmalloc: pcpu_ref..." warnings per mode on stderr are expected (misuse cases). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#ifdef UNIT_PCPU_WINDOW
/* unit_pcpu_ref_window: the same test with ~1-3 us of `pause` inside every inline reference
 * section, between its mode load and its commit, so that switches, preemptions and membarrier
 * IPIs land inside sections often (aborts, restarts, and a grace period that matters). */
#define SLUB_PCPU_REF_INJECT_ASM ".rept 48\n\tpause\n\t.endr\n\t"
#define TEST_NAME "unit_pcpu_ref_window"
#else
#define TEST_NAME "unit_pcpu_ref"
#endif

#include "percpu_internal.h"
#include "pcpu_test.h"

static int rseq_mode, ncpu;

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return (uint32_t)(*s >> 11);
}

static unsigned long acount(struct pcpu_ref *r)
{
	return __atomic_load_n(&r->data->count, __ATOMIC_ACQUIRE);
}
static unsigned long slot_sum(struct pcpu_ref *r)
{
	unsigned long *s = (unsigned long *)(r->pcpu_count_ptr & ~SLUB_PCPU_REF_FLAGS), sum = 0;
	for (int c = 0; c < ncpu; c++)
		sum += *pcpu_ptr(s, c);
	return sum;
}
static unsigned long mode(struct pcpu_ref *r)
{
	return r->pcpu_count_ptr & (SLUB_PCPU_REF_ATOMIC | SLUB_PCPU_REF_DEAD);
}

/* ------------------------------- 1. semantics ------------------------------- */

static int released, confirmed, switched;
static struct pcpu_ref *released_ref;
static void on_release(struct pcpu_ref *r)
{
	released++;
	released_ref = r;
}
static void on_confirm_kill(struct pcpu_ref *r)
{
	confirmed++;
	CHECK(released == 0, "release before confirm_kill");
	CHECK(!pcpu_ref_tryget_live(r), "tryget_live succeeded inside confirm_kill");
	CHECK(pcpu_ref_is_dying(r), "not dying in confirm_kill");
}
static void on_confirm_switch(struct pcpu_ref *r)
{
	switched++;
	CHECK(mode(r) & SLUB_PCPU_REF_ATOMIC, "confirm_switch in per-CPU mode");
}

static void test_basic(void)
{
	struct pcpu_ref r;
	released = confirmed = 0;
	CHECK(pcpu_ref_init(&r, on_release, 0) == 0, "init");
	CHECK(!pcpu_ref_is_dying(&r) && !pcpu_ref_is_zero(&r), "fresh ref state");
	CHECK((r.pcpu_count_ptr & SLUB_PCPU_REF_FLAGS) == (rseq_mode ? 0 : SLUB_PCPU_REF_NORSEQ),
	      "mode bits %#lx", r.pcpu_count_ptr & SLUB_PCPU_REF_FLAGS);
	CHECK(acount(&r) == PCPU_COUNT_BIAS + 1, "biased count");
	for (int i = 0; i < 1000; i++)
		pcpu_ref_get(&r);
	CHECK(slot_sum(&r) == 1000, "per-CPU counters hold %lu, not 1000", slot_sum(&r));
	CHECK(acount(&r) == PCPU_COUNT_BIAS + 1, "a per-CPU get touched the atomic count");
	pcpu_ref_get_many(&r, 50);
	CHECK(pcpu_ref_tryget(&r), "tryget");
	CHECK(pcpu_ref_tryget_many(&r, 9), "tryget_many");
	CHECK(pcpu_ref_tryget_live(&r), "tryget_live");
	pcpu_ref_put_many(&r, 61);
	CHECK(slot_sum(&r) == 1000, "after put_many: %lu", slot_sum(&r));
	pcpu_ref_kill_and_confirm(&r, on_confirm_kill);
	CHECK(confirmed == 1 && released == 0, "kill: confirmed %d released %d", confirmed,
	      released);
	CHECK(pcpu_ref_is_dying(&r) && !pcpu_ref_is_zero(&r), "killed ref state");
	CHECK(acount(&r) == 1000, "folded count %lu, not 1000", acount(&r));
	if (rseq_mode)
		CHECK((r.pcpu_count_ptr & ~SLUB_PCPU_REF_FLAGS) == 0,
		      "per-CPU counters not freed at kill without ALLOW_REINIT");
	CHECK(!pcpu_ref_tryget_live(&r), "tryget_live after kill");
	CHECK(pcpu_ref_tryget(&r), "tryget on a dying ref above zero");
	pcpu_ref_put(&r);
	for (int i = 0; i < 999; i++)
		pcpu_ref_put(&r);
	CHECK(released == 0 && !pcpu_ref_is_zero(&r), "released early");
	pcpu_ref_put(&r);
	CHECK(released == 1 && released_ref == &r && pcpu_ref_is_zero(&r), "release at zero");
	CHECK(!pcpu_ref_tryget(&r) && !pcpu_ref_tryget_live(&r), "tryget at zero");
	pcpu_ref_kill(&r); /* a second kill: reported and ignored */
	CHECK(released == 1, "second kill released again");
	pcpu_ref_exit(&r);
	CHECK(pcpu_ref_is_zero(&r) && pcpu_ref_is_dying(&r), "state after exit");
	pcpu_ref_exit(&r); /* harmless */

	/* exit of a live ref, with references taken on every CPU */
	CHECK(pcpu_ref_init(&r, on_release, 0) == 0, "init");
	pcpu_ref_get(&r);
	pcpu_ref_exit(&r);
	CHECK(!pcpu_ref_is_zero(&r), "exit of a live per-CPU ref reads as zero");
}

static void test_flags(void)
{
	struct pcpu_ref r;

	/* INIT_ATOMIC: count 1 in atomic mode, can go per-CPU and back */
	released = switched = 0;
	CHECK(pcpu_ref_init(&r, on_release, PCPU_REF_INIT_ATOMIC) == 0, "init atomic");
	CHECK(mode(&r) == SLUB_PCPU_REF_ATOMIC && acount(&r) == 1, "INIT_ATOMIC state");
	pcpu_ref_get(&r);
	CHECK(acount(&r) == 2, "atomic get");
	CHECK(pcpu_ref_tryget_live(&r), "tryget_live in (forced) atomic mode");
	pcpu_ref_put_many(&r, 2);
	pcpu_ref_switch_to_percpu(&r);
	CHECK(mode(&r) == 0 && acount(&r) == PCPU_COUNT_BIAS + 1, "switch_to_percpu from INIT_ATOMIC");
	pcpu_ref_get_many(&r, 5);
	pcpu_ref_switch_to_atomic(&r, on_confirm_switch);
	CHECK(switched == 1 && mode(&r) == SLUB_PCPU_REF_ATOMIC && acount(&r) == 6,
	      "switch_to_atomic: confirm %d, count %lu", switched, acount(&r));
	pcpu_ref_switch_to_atomic(&r, on_confirm_switch); /* already atomic: confirm at once */
	CHECK(switched == 2, "confirm of a no-op switch");
	pcpu_ref_switch_to_percpu(&r);
	pcpu_ref_put_many(&r, 5);
	pcpu_ref_switch_to_atomic_sync(&r);
	CHECK(acount(&r) == 1, "count after round trip %lu", acount(&r));
	pcpu_ref_kill(&r);
	CHECK(released == 1, "INIT_ATOMIC kill released %d", released);
	pcpu_ref_exit(&r);

	/* INIT_DEAD: zero and dead until reinit */
	released = 0;
	CHECK(pcpu_ref_init(&r, on_release, PCPU_REF_INIT_DEAD) == 0, "init dead");
	CHECK(pcpu_ref_is_dying(&r) && pcpu_ref_is_zero(&r), "INIT_DEAD state");
	CHECK(!pcpu_ref_tryget_live(&r) && !pcpu_ref_tryget(&r), "tryget on INIT_DEAD");
	for (int cycle = 0; cycle < 3; cycle++) {
		pcpu_ref_reinit(&r);
		CHECK(!pcpu_ref_is_dying(&r) && mode(&r) == 0 && !pcpu_ref_is_zero(&r), "reinit");
		CHECK(pcpu_ref_tryget_live(&r), "tryget_live after reinit");
		pcpu_ref_put(&r);
		pcpu_ref_kill(&r);
		CHECK(released == cycle + 1 && pcpu_ref_is_zero(&r), "cycle %d release", cycle);
	}
	pcpu_ref_exit(&r);

	/* ALLOW_REINIT + resurrect while references are held */
	released = 0;
	CHECK(pcpu_ref_init(&r, on_release, PCPU_REF_ALLOW_REINIT) == 0, "init reinit");
	pcpu_ref_get(&r);
	pcpu_ref_kill(&r);
	CHECK(released == 0 && acount(&r) == 1 && pcpu_ref_is_dying(&r), "kill with one held");
	CHECK((r.pcpu_count_ptr & ~SLUB_PCPU_REF_FLAGS) != 0, "ALLOW_REINIT lost its counters");
	pcpu_ref_resurrect(&r);
	CHECK(!pcpu_ref_is_dying(&r) && mode(&r) == 0, "resurrect");
	CHECK(pcpu_ref_tryget_live(&r), "tryget_live after resurrect");
	pcpu_ref_put_many(&r, 2); /* the held one and the tryget_live one */
	CHECK(released == 0, "released while resurrected");
	pcpu_ref_kill(&r);
	CHECK(released == 1, "release after resurrect + kill");
	pcpu_ref_exit(&r);

	/* forced atomic survives kill + resurrect */
	released = switched = 0;
	CHECK(pcpu_ref_init(&r, on_release, PCPU_REF_ALLOW_REINIT) == 0, "init");
	pcpu_ref_switch_to_atomic(&r, on_confirm_switch);
	pcpu_ref_get(&r);
	pcpu_ref_kill(&r);
	pcpu_ref_resurrect(&r);
	CHECK(mode(&r) == SLUB_PCPU_REF_ATOMIC && acount(&r) == 2, "forced atomic after resurrect");
	pcpu_ref_switch_to_percpu(&r);
	CHECK(mode(&r) == 0, "switch_to_percpu after resurrect");
	pcpu_ref_put(&r);
	pcpu_ref_kill(&r);
	CHECK(released == 1, "forced-atomic release %d", released);
	pcpu_ref_exit(&r);

	/* without ALLOW_REINIT a killed ref never goes per-CPU again (warns), in both modes */
	released = 0;
	CHECK(pcpu_ref_init(&r, on_release, 0) == 0, "init");
	pcpu_ref_get(&r);
	pcpu_ref_kill(&r);
	pcpu_ref_resurrect(&r);
	CHECK(!pcpu_ref_is_dying(&r) && (mode(&r) & SLUB_PCPU_REF_ATOMIC) && acount(&r) == 2,
	      "resurrected non-reinit ref: mode %#lx count %lu", mode(&r), acount(&r));
	CHECK(pcpu_ref_tryget_live(&r), "tryget_live after resurrect");
	pcpu_ref_put_many(&r, 2);
	pcpu_ref_kill(&r);
	CHECK(released == 1, "non-reinit resurrect: released %d", released);
	pcpu_ref_exit(&r);

	/* a dying ref does not go per-CPU */
	CHECK(pcpu_ref_init(&r, NULL, PCPU_REF_ALLOW_REINIT) == 0, "init");
	pcpu_ref_get(&r);
	pcpu_ref_kill(&r);
	pcpu_ref_switch_to_percpu(&r);
	CHECK(mode(&r) == (SLUB_PCPU_REF_ATOMIC | SLUB_PCPU_REF_DEAD), "dying ref went per-CPU");
	pcpu_ref_put(&r); /* NULL release */
	CHECK(pcpu_ref_is_zero(&r), "zero with NULL release");
	pcpu_ref_exit(&r);
}

/* A forked child (one thread, the parent's rseq registration, maybe not its membarrier
 * registration) can still kill and switch refs; the parent's refs keep working. */
static void test_fork(void)
{
	struct pcpu_ref r;
	released = 0;
	CHECK(pcpu_ref_init(&r, on_release, PCPU_REF_ALLOW_REINIT) == 0, "init");
	pcpu_ref_get(&r);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct pcpu_ref c;
		CHECK(pcpu_ref_init(&c, on_release, 0) == 0, "init in child");
		pcpu_ref_get(&c);
		pcpu_ref_switch_to_atomic_sync(&c);
		pcpu_ref_switch_to_percpu(&c);
		pcpu_ref_kill(&c);
		pcpu_ref_put(&c);
		CHECK(released == 1, "child: release ran %d times", released);
		pcpu_ref_kill(&r);
		pcpu_ref_put(&r);
		CHECK(released == 2, "child: inherited ref released %d", released);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child failed: %#x", st);
	pcpu_ref_kill(&r);
	CHECK(released == 0 && acount(&r) == 1, "parent after fork: count %lu", acount(&r));
	pcpu_ref_put(&r);
	CHECK(released == 1, "parent release");
	pcpu_ref_exit(&r);
}

/* --------------------------- 2 and 3: concurrency --------------------------- */

#define WORKERS 3
#define MAILBOX 8

struct shadow {
	_Alignas(64) atomic_long held; /* references this thread took minus those it dropped */
	atomic_long ops;
};
static struct shadow sh[WORKERS + 1];      /* [WORKERS]: the main thread */
static atomic_int mailbox[MAILBOX];        /* 1: a reference waiting to be dropped */
static struct pcpu_ref *cur;
static atomic_int r_released, r_confirmed, phase_stop, pause_req;
static atomic_long live_after_confirm;
static pthread_barrier_t bar;

static long shadow_total(void)
{
	long t = 0;
	for (int i = 0; i <= WORKERS; i++)
		t += atomic_load_explicit(&sh[i].held, memory_order_relaxed);
	for (int i = 0; i < MAILBOX; i++)
		t += atomic_load_explicit(&mailbox[i], memory_order_relaxed);
	return t;
}

static void race_release(struct pcpu_ref *r)
{
	(void)r;
	long t = shadow_total();
	CHECK(t == 0, "release while %ld references are held", t);
	CHECK(atomic_load(&r_confirmed) == 1, "release before confirm_kill");
	CHECK(atomic_fetch_add(&r_released, 1) == 0, "release ran twice");
}
static void race_confirm(struct pcpu_ref *r)
{
	CHECK(atomic_load(&r_released) == 0, "release before confirm_kill");
	atomic_store(&r_confirmed, 1);
	CHECK(!pcpu_ref_tryget_live(r), "tryget_live succeeded in confirm_kill");
}
static void switch_confirm(struct pcpu_ref *r)
{
	unsigned long c = acount(r);
	CHECK(c >= 1 && c < (1UL << 40), "atomic count %#lx after a switch", c);
}

static inline void held_add(struct shadow *me, long d)
{
	atomic_store_explicit(&me->held, atomic_load_explicit(&me->held, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

/* One request: a live reference, nested ones, mailbox traffic. False once tryget_live fails. */
static bool one_request(struct pcpu_ref *r, struct shadow *me, uint64_t *s)
{
	int conf = atomic_load_explicit(&r_confirmed, memory_order_acquire);
	if (!pcpu_ref_tryget_live(r)) {
		CHECK(pcpu_ref_is_dying(r), "tryget_live failed on a live ref");
		return false;
	}
	held_add(me, 1);
	if (conf)
		atomic_fetch_add(&live_after_confirm, 1);
	CHECK(!atomic_load_explicit(&r_released, memory_order_relaxed),
	      "released while a reference is held");
	uint32_t x = rnd(s);
	int k = x & 3;
	for (int j = 0; j < k; j++) {
		held_add(me, 1); /* count first: we hold one already, so no release can be due */
		if (j & 1)
			pcpu_ref_get(r);
		else
			CHECK(pcpu_ref_tryget(r), "tryget failed while holding a reference");
	}
	if (x & 4) {
		held_add(me, 3);
		pcpu_ref_get_many(r, 3);
		held_add(me, -3);
		pcpu_ref_put_many(r, 3);
	}
	if ((x & 0x18) == 0) { /* hand one to whoever finds it */
		int i = (x >> 5) % MAILBOX, zero = 0;
		pcpu_ref_get(r);
		if (atomic_compare_exchange_strong(&mailbox[i], &zero, 1))
			; /* now counted by the mailbox */
		else
			pcpu_ref_put(r);
	}
	if ((x & 0x60) == 0) { /* drop one somebody else took */
		int i = (x >> 9) % MAILBOX, one = 1;
		if (atomic_compare_exchange_strong(&mailbox[i], &one, 0))
			pcpu_ref_put(r); /* uncounted for a moment: our own reference covers it */
	}
	for (int j = 0; j < k; j++) {
		held_add(me, -1);
		pcpu_ref_put(r);
	}
	held_add(me, -1);
	pcpu_ref_put(r);
	atomic_store_explicit(&me->ops, atomic_load_explicit(&me->ops, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	return true;
}

static void drain_mailbox(struct pcpu_ref *r)
{
	for (int i = 0; i < MAILBOX; i++)
		if (atomic_exchange(&mailbox[i], 0))
			pcpu_ref_put(r);
}

static int kill_rounds;

static void *kill_worker(void *arg)
{
	struct shadow *me = &sh[(long)arg];
	uint64_t s = 0x2545f4914f6cdd1dull * ((uintptr_t)arg + 3);
	for (int round = 0; round < kill_rounds; round++) {
		pthread_barrier_wait(&bar);
		struct pcpu_ref *r = cur;
		for (unsigned n = 1; one_request(r, me, &s); n++)
			if (n % 32 == 0)
				sched_yield(); /* 2 CPUs, 4 threads: let the killer run */
		pthread_barrier_wait(&bar);
	}
	return NULL;
}

static long total_ops(void)
{
	long t = 0;
	for (int i = 0; i < WORKERS; i++)
		t += atomic_load_explicit(&sh[i].ops, memory_order_relaxed);
	return t;
}

static void test_kill_race(int rounds)
{
	pthread_t t[WORKERS];
	struct pcpu_ref ref;
	uint64_t s = 88172645463325252ull;
	kill_rounds = rounds;
	pthread_barrier_init(&bar, NULL, WORKERS + 1);
	for (long i = 0; i < WORKERS; i++)
		CHECK(!pthread_create(&t[i], NULL, kill_worker, (void *)i), "pthread_create");
	bool have = false;
	long ops_before = 0;
	for (int round = 0; round < rounds; round++) {
		/* odd rounds reuse the ref with reinit (ALLOW_REINIT), even ones init afresh */
		atomic_store(&r_released, 0);
		atomic_store(&r_confirmed, 0);
		if (have && (round & 1))
			pcpu_ref_reinit(&ref);
		else {
			if (have)
				pcpu_ref_exit(&ref);
			CHECK(pcpu_ref_init(&ref, race_release,
					    (round & 2) ? PCPU_REF_ALLOW_REINIT : 0) == 0, "init");
			have = (round & 2) != 0;
		}
		cur = &ref;
		long start = total_ops(), want = rnd(&s) % 256;
		pthread_barrier_wait(&bar);
		double t0 = pcpu_test_now();
		while (total_ops() - start < want && pcpu_test_now() - t0 < 0.002)
			sched_yield();
		pcpu_ref_kill_and_confirm(&ref, race_confirm);
		pthread_barrier_wait(&bar);
		drain_mailbox(&ref);
		CHECK(atomic_load(&r_released) == 1, "round %d: release ran %d times", round,
		      atomic_load(&r_released));
		CHECK(pcpu_ref_is_zero(&ref), "round %d: not zero after release", round);
		CHECK(shadow_total() == 0, "round %d: shadow count %ld", round, shadow_total());
		if (!have)
			pcpu_ref_exit(&ref);
	}
	if (have)
		pcpu_ref_exit(&ref);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	printf("  kill race: %d rounds, %ld requests, %ld tryget_live successes after "
	       "confirm_kill\n", rounds, total_ops() - ops_before, atomic_load(&live_after_confirm));
	CHECK(atomic_load(&live_after_confirm) == 0,
	      "%ld tryget_live succeeded after confirm_kill had run",
	      atomic_load(&live_after_confirm));
}

static void *switch_worker(void *arg)
{
	struct shadow *me = &sh[(long)arg];
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 7);
	while (!atomic_load_explicit(&phase_stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&pause_req, memory_order_acquire)) {
			pthread_barrier_wait(&bar);
			pthread_barrier_wait(&bar);
			continue;
		}
		CHECK(one_request(cur, me, &s), "tryget_live failed with no kill");
		if (atomic_load_explicit(&me->ops, memory_order_relaxed) % 32 == 0)
			sched_yield();
	}
	return NULL;
}

static void test_switch_round_trips(int switches)
{
	pthread_t t[WORKERS];
	struct pcpu_ref ref;
	atomic_store(&r_released, 0);
	atomic_store(&r_confirmed, 0);
	atomic_store(&phase_stop, 0);
	CHECK(pcpu_ref_init(&ref, race_release, PCPU_REF_ALLOW_REINIT) == 0, "init");
	cur = &ref;
	pthread_barrier_init(&bar, NULL, WORKERS + 1);
	long start = total_ops();
	for (long i = 0; i < WORKERS; i++)
		CHECK(!pthread_create(&t[i], NULL, switch_worker, (void *)i), "pthread_create");
	int checks = 0;
	for (int i = 0; i < switches; i++) {
		pcpu_ref_switch_to_atomic(&ref, switch_confirm);
		CHECK(mode(&ref) == SLUB_PCPU_REF_ATOMIC, "not atomic after switch_to_atomic");
		if (i & 1)
			sched_yield(); /* let the workers run in atomic mode */
		pcpu_ref_switch_to_percpu(&ref);
		if (i % 97 == 0)
			sched_yield();
		if (i % 250 == 0) { /* quiesce the workers, check the exact count */
			atomic_store(&pause_req, 1);
			pthread_barrier_wait(&bar);
			pcpu_ref_switch_to_atomic_sync(&ref);
			long tokens = 0;
			for (int m = 0; m < MAILBOX; m++)
				tokens += atomic_load(&mailbox[m]);
			CHECK(acount(&ref) == 1 + (unsigned long)tokens,
			      "after %d switches: count %lu, expected %ld", i, acount(&ref), 1 + tokens);
			pcpu_ref_switch_to_percpu(&ref);
			atomic_store(&pause_req, 0);
			pthread_barrier_wait(&bar);
			checks++;
		}
	}
	atomic_store(&phase_stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	drain_mailbox(&ref);
	pcpu_ref_switch_to_atomic_sync(&ref);
	CHECK(acount(&ref) == 1, "final count %lu, expected 1", acount(&ref));
	CHECK(shadow_total() == 0, "shadow %ld", shadow_total());
	pcpu_ref_switch_to_percpu(&ref);
	atomic_store(&r_confirmed, 1); /* race_release checks confirm; plain kill here */
	pcpu_ref_kill(&ref);
	CHECK(atomic_load(&r_released) == 1, "switch test: release ran %d times",
	      atomic_load(&r_released));
	pcpu_ref_exit(&ref);
	printf("  switch round trips: %d atomic<->per-CPU pairs under %ld requests, %d exact-count "
	       "checks\n", switches, total_ops() - start, checks);
}

static void body(int rseq)
{
	rseq_mode = rseq;
	ncpu = pcpu_nr_cpus();
	test_basic();
	test_flags();
	test_fork();
#ifdef UNIT_PCPU_WINDOW
	test_kill_race(8000); /* every section is ~100x longer: fewer rounds, same coverage */
	test_switch_round_trips(8000);
#else
	test_kill_race(20000);
	test_switch_round_trips(20000);
#endif
}

int main(int argc, char **argv)
{
	(void)argc;
	return pcpu_test_main(TEST_NAME, argv, body);
}
