/* unit_typed_mt.c: the typed object caches (slub_cache_*) through the public API, used by
 * several threads (linked with libslubmalloc.so, as a user program is). Threads share caches
 * and free each other's objects, with and without a ctor; objects keep their constructed
 * state across threads. A cache is destroyed after live threads freed all its objects: the
 * destroy reports nothing. Caches are destroyed while other threads are inside slub_cache_*
 * calls and threads come and go. A thread past its exit destructor allocates typed objects
 * whose ctor mallocs. A thread poked by another's malloc_trim gives its typed state back at
 * its next malloc. The single-threaded cases are in unit_typed.c; the helpers both use in
 * typed_util.h.
 * Each case runs in a child of its own; `unit_typed_mt NAME...` runs only the named cases. */
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "api_util.h"
#include "slubmalloc.h"
#include "typed_util.h"

/* ---- several threads sharing caches, with cross-thread frees ---- */
enum { MT_THREADS = 4, MT_CACHES = 3, MT_ITERS = 20000, MT_Q = 64, MT_BATCH = 48 };

struct tbatch {
	void *v[MT_BATCH];
	size_t n;
	unsigned cache;
	uint64_t tag0;
};

struct mailbox {
	pthread_mutex_t mu;
	struct tbatch *q[MT_Q];
	size_t head, tail;
};

static struct slub_cache *mt_cache[MT_CACHES];
static const size_t mt_size[MT_CACHES] = {48, CTOR_SIZE, 1000};
static struct mailbox box[MT_THREADS];
static atomic_ulong mt_alloc, mt_freed;
static atomic_int mt_running;
static int mt_ctor; /* cache 1 has the ctor (case threads_ctor) */

static void mt_release(struct tbatch *b, uint64_t *rng)
{
	struct slub_cache *c = mt_cache[b->cache];
	size_t size = mt_size[b->cache];
	for (size_t i = 0; i < b->n; i++) {
		if (mt_ctor && b->cache == 1) { /* the ctor cache: the user field holds the tag */
			CHECK(((uint64_t *)b->v[i])[1] == b->tag0 + i, "mt: ctor object %p lost its tag",
			      b->v[i]);
		} else {
			size_t bad = pat_bad(b->v[i], size, b->tag0 + i);
			CHECK(bad == SIZE_MAX, "mt: object %p of cache %u corrupted at byte %zu",
			      b->v[i], b->cache, bad);
		}
	}
	free_some(c, b->v, b->n, (unsigned)rng_below(rng, 4));
	atomic_fetch_add(&mt_freed, b->n);
	free(b);
}

static int mt_drain(unsigned id, uint64_t *rng)
{
	int any = 0;
	for (;;) {
		pthread_mutex_lock(&box[id].mu);
		struct tbatch *b = box[id].head != box[id].tail ? box[id].q[box[id].head++ % MT_Q] : NULL;
		pthread_mutex_unlock(&box[id].mu);
		if (!b)
			return any;
		mt_release(b, rng);
		any = 1;
	}
}

static void *mt_main(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 500 + id, tag = (uint64_t)(id + 1) << 40;
	for (unsigned it = 0; it < MT_ITERS; it++) {
		struct tbatch *b = malloc(sizeof *b);
		CHECK(b, "malloc");
		b->cache = (unsigned)rng_below(&rng, MT_CACHES);
		b->n = 1 + rng_below(&rng, MT_BATCH);
		b->tag0 = tag;
		tag += b->n;
		alloc_some(mt_cache[b->cache], b->v, b->n, &rng);
		atomic_fetch_add(&mt_alloc, b->n);
		for (size_t i = 0; i < b->n; i++) {
			if (mt_ctor && b->cache == 1)
				check_constructed(b->v[i], b->tag0 + i, 0, "mt ctor");
			else
				pat_fill(b->v[i], mt_size[b->cache], b->tag0 + i);
		}
		unsigned to = (unsigned)rng_below(&rng, MT_THREADS);
		int sent = 0;
		while (!sent) {
			pthread_mutex_lock(&box[to].mu);
			if (box[to].tail - box[to].head < MT_Q) {
				box[to].q[box[to].tail++ % MT_Q] = b;
				sent = 1;
			}
			pthread_mutex_unlock(&box[to].mu);
			if (!sent && !mt_drain(id, &rng))
				sched_yield();
		}
		mt_drain(id, &rng);
	}
	atomic_fetch_sub(&mt_running, 1);
	while (atomic_load(&mt_running) > 0)
		if (!mt_drain(id, &rng))
			sched_yield();
	mt_drain(id, &rng);
	return NULL;
}

static void run_threads(void)
{
	for (unsigned i = 0; i < MT_CACHES; i++) {
		mt_cache[i] = slub_cache_create("mt", mt_size[i], 0, i == 2 ? SLUB_HWCACHE_ALIGN : 0,
						mt_ctor && i == 1 ? ctor : NULL);
		CHECK(mt_cache[i], "create");
	}
	for (unsigned i = 0; i < MT_THREADS; i++)
		pthread_mutex_init(&box[i].mu, NULL);
	atomic_store(&mt_running, MT_THREADS);
	pthread_t t[MT_THREADS];
	for (unsigned i = 0; i < MT_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, mt_main, (void *)(uintptr_t)i) == 0, "create");
	for (unsigned i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(atomic_load(&mt_alloc) == atomic_load(&mt_freed), "%lu allocated, %lu freed",
	      atomic_load(&mt_alloc), atomic_load(&mt_freed));
	printf("  %lu objects passed between %d threads\n", atomic_load(&mt_alloc), MT_THREADS);
	/* every object was freed and the threads are gone: destroy reports nothing */
	struct capture cap;
	capture_start(&cap);
	for (unsigned i = 0; i < MT_CACHES; i++)
		slub_cache_destroy(mt_cache[i]);
	char *err = capture_end(&cap);
	CHECK(!strstr(err, "slubmalloc:"), "destroy after all objects were freed and the threads "
	      "exited reported: \"%s\"", err);
	free(err);
	check_all_ids_free("after the multithreaded caches were destroyed");
}

static void case_threads(void)
{
	mt_ctor = 0;
	run_threads();
}

/* the same with a ctor on one cache: objects keep their constructed state across threads */
static void case_threads_ctor(void)
{
	mt_ctor = 1;
	run_threads();
}

/* ---- destroy after other, still running threads freed every object of the cache ---- */
static pthread_barrier_t dl_bar;
static struct slub_cache *dl_cache;

static void *dl_worker(void *arg)
{
	uint64_t rng = 900 + (uintptr_t)arg;
	static void *vv[2][3000];
	void **v = vv[(uintptr_t)arg];
	for (unsigned r = 0; r < 40; r++) {
		pthread_barrier_wait(&dl_bar); /* main created dl_cache */
		size_t n = 1 + rng_below(&rng, 3000);
		alloc_some(dl_cache, v, n, &rng);
		free_some(dl_cache, v, n, r);
		pthread_barrier_wait(&dl_bar); /* every object freed: main destroys */
		pthread_barrier_wait(&dl_bar);
	}
	return NULL;
}

static void case_destroy_users_alive(void)
{
	pthread_t t[2];
	CHECK(pthread_barrier_init(&dl_bar, NULL, 3) == 0, "barrier");
	for (unsigned i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, dl_worker, (void *)(uintptr_t)i) == 0, "create");
	char *first_report = NULL;
	unsigned reports = 0, failed_create = 40;
	for (unsigned r = 0; r < 40; r++) {
		dl_cache = slub_cache_create("users-alive", 64 + 8 * r, 0, 0, NULL);
		if (!dl_cache) {
			failed_create = r;
			break;
		}
		pthread_barrier_wait(&dl_bar);
		pthread_barrier_wait(&dl_bar);
		struct capture cap;
		capture_start(&cap);
		slub_cache_destroy(dl_cache);
		char *err = capture_end(&cap);
		if (strstr(err, "slubmalloc:")) {
			reports++;
			if (!first_report)
				first_report = strdup(err);
		}
		free(err);
		pthread_barrier_wait(&dl_bar);
	}
	if (failed_create < 40) { /* the workers wait at a barrier: leave without them */
		fprintf(stderr, "unit_typed_mt.c: destroy_users_alive: slub_cache_create failed at cycle "
			"%u of 40 with ENOMEM although at most one typed cache was alive at a time (each "
			"destroyed after all its objects were freed); destroy reported live objects %u "
			"times, first: %s", failed_create, reports, first_report ? first_report : "-\n");
		fflush(stderr);
		_exit(1);
	}
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(reports == 0, "%u of 40 destroys reported objects although every object had been "
	      "freed (by two threads that are still running); first: %s", reports, first_report);
	check_all_ids_free("after 40 caches were destroyed while their users live on");
}

/* ---- destroy racing with other threads' calls: workers keep using a long-lived cache (and
 * hand its objects to each other) while the main thread destroys, one after another, caches
 * the workers had used and emptied; threads start and exit meanwhile ---- */
enum { DR_WORKERS = 2, DR_ROUNDS = 150 };

static struct slub_cache *dr_keep;
static struct slub_cache *_Atomic dr_cache;
static atomic_uint dr_gen, dr_done, dr_stop;
static void *_Atomic dr_swap; /* a batch of dr_keep objects handed to the other worker */

struct dr_batch {
	size_t n;
	uint64_t tag0;
	void *v[32];
};

static void dr_release(struct dr_batch *b, uint64_t *rng)
{
	for (size_t i = 0; i < b->n; i++) {
		size_t bad = pat_bad(b->v[i], 128, b->tag0 + i);
		CHECK(bad == SIZE_MAX, "destroy race: object %p of the kept cache corrupted at byte %zu",
		      b->v[i], bad);
	}
	free_some(dr_keep, b->v, b->n, (unsigned)rng_below(rng, 4));
	free(b);
}

static void *dr_worker(void *arg)
{
	uint64_t rng = 4242 + (uintptr_t)arg, tag = (uint64_t)((uintptr_t)arg + 1) << 40;
	unsigned seen = 0;
	static void *big[DR_WORKERS][6000];
	void **v = big[(uintptr_t)arg];
	while (!atomic_load(&dr_stop)) {
		unsigned g = atomic_load(&dr_gen);
		if (g != seen) { /* a new cache: use it, free everything, report */
			struct slub_cache *c = atomic_load(&dr_cache);
			size_t n = 1 + rng_below(&rng, 3000);
			alloc_some(c, v, n, &rng);
			shuffle(v, n, &rng);
			free_some(c, v, n, (unsigned)rng_below(&rng, 4));
			seen = g;
			atomic_fetch_add(&dr_done, 1);
		}
		/* the kept cache, busy all the time: small batches, sometimes a big bulk */
		if (rng_below(&rng, 64) == 0) {
			size_t n = 1000 + rng_below(&rng, 5000);
			CHECK(slub_cache_alloc_bulk(dr_keep, n, v) == n, "big bulk of the kept cache");
			slub_cache_free_bulk(dr_keep, n, v);
		}
		struct dr_batch *b = malloc(sizeof *b);
		CHECK(b, "malloc");
		b->n = 1 + rng_below(&rng, 32);
		b->tag0 = tag;
		tag += b->n;
		alloc_some(dr_keep, b->v, b->n, &rng);
		for (size_t i = 0; i < b->n; i++)
			pat_fill(b->v[i], 128, b->tag0 + i);
		b = atomic_exchange(&dr_swap, b); /* take the other worker's batch, if any */
		if (b)
			dr_release(b, &rng);
	}
	return NULL;
}

static void *dr_short_lived(void *arg)
{
	uint64_t rng = (uintptr_t)arg;
	void *v[100];
	alloc_some(dr_keep, v, 100, &rng);
	free_some(dr_keep, v, 100, (unsigned)(uintptr_t)arg);
	return NULL;
}

static void case_destroy_racing(void)
{
	dr_keep = slub_cache_create("kept", 128, 0, 0, NULL);
	CHECK(dr_keep, "create");
	pthread_t t[DR_WORKERS];
	for (unsigned i = 0; i < DR_WORKERS; i++)
		CHECK(pthread_create(&t[i], NULL, dr_worker, (void *)(uintptr_t)i) == 0, "create");
	uint64_t rng = 77;
	unsigned reports = 0;
	char *first = NULL;
	for (unsigned r = 1; r <= DR_ROUNDS; r++) {
		struct slub_cache *c = slub_cache_create("raced", 16 + rng_below(&rng, 2000), 0,
							 (unsigned)rng_below(&rng, 3), NULL);
		CHECK(c, "round %u: slub_cache_create failed with errno %d (at most two typed caches "
		      "exist at a time)", r, errno);
		atomic_store(&dr_cache, c);
		atomic_store(&dr_gen, r);
		while (atomic_load(&dr_done) < r * DR_WORKERS) /* every worker used it and freed all */
			sched_yield();
		pthread_t sl;
		int with_sl = r % 5 == 0; /* a thread starts and exits while the cache is destroyed */
		if (with_sl)
			CHECK(pthread_create(&sl, NULL, dr_short_lived, (void *)(uintptr_t)r) == 0, "create");
		struct capture cap;
		capture_start(&cap);
		slub_cache_destroy(c);
		char *err = capture_end(&cap);
		if (with_sl)
			pthread_join(sl, NULL);
		if (strstr(err, "slubmalloc:") && reports++ == 0)
			first = strdup(err);
		free(err);
	}
	atomic_store(&dr_stop, 1);
	for (unsigned i = 0; i < DR_WORKERS; i++)
		pthread_join(t[i], NULL);
	struct dr_batch *b = atomic_exchange(&dr_swap, NULL);
	if (b)
		dr_release(b, &rng);
	CHECK(reports == 0, "%u of %d destroys reported objects although the workers had freed "
	      "them all; first: %s", reports, DR_ROUNDS, first);
	struct capture cap;
	capture_start(&cap);
	slub_cache_destroy(dr_keep);
	char *err = capture_end(&cap);
	CHECK(!strstr(err, "slubmalloc:"), "destroy of the kept cache reported: \"%s\"", err);
	free(err);
	check_all_ids_free("after caches were destroyed while other threads were busy");
	printf("  %d caches destroyed while %d threads kept allocating\n", DR_ROUNDS, DR_WORKERS);
}

/* ---- a thread past its exit destructor: typed objects from the orphan cache, whose ctor
 * mallocs, so the orphan cache is entered again by the thread that holds it (thread.c) ---- */
#define LATE_OBJS 300
static struct slub_cache *late_cache;
static atomic_int late_done;

static void malloc_ctor(void *obj)
{
	char *p = malloc(40);
	CHECK(p, "malloc(40) in a ctor");
	memset(p, 0x5a, 40);
	free(p);
	memset(obj, 0, 64);
}

/* Runs after the library's own exit destructor: its key was created later. */
static void late_destructor(void *arg)
{
	(void)arg;
	void **v = malloc(LATE_OBJS * sizeof *v);
	CHECK(v, "malloc after the thread's exit destructor");
	for (int i = 0; i < LATE_OBJS; i++) {
		v[i] = slub_cache_alloc(late_cache);
		CHECK(v[i], "slub_cache_alloc after exit, object %d", i);
		CHECK(!((char *)v[i])[63], "a constructed object");
	}
	for (int i = 0; i < LATE_OBJS; i++)
		slub_cache_free(late_cache, v[i]);
	free(v);
	atomic_store(&late_done, 1);
}

static void *late_thread(void *arg)
{
	pthread_key_t *key = arg;
	CHECK(pthread_setspecific(*key, key) == 0, "pthread_setspecific");
	void *p = slub_cache_alloc(late_cache); /* the thread gets a cache of its own first */
	CHECK(p, "slub_cache_alloc");
	slub_cache_free(late_cache, p);
	return NULL;
}

static void case_after_exit(void)
{
	late_cache = slub_cache_create("late", 64, 0, 0, malloc_ctor);
	CHECK(late_cache, "slub_cache_create");
	pthread_key_t key;
	CHECK(pthread_key_create(&key, late_destructor) == 0, "pthread_key_create");
	pthread_t t;
	CHECK(pthread_create(&t, NULL, late_thread, &key) == 0, "pthread_create");
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	CHECK(atomic_load(&late_done), "the late destructor ran to its end");
	slub_cache_destroy(late_cache);
}

/* ---- malloc_trim in one thread: another thread gives back its typed state at its next
 * malloc (the trim pokes it), and the next trim frees those slabs (before 2026-12-07 that
 * thread kept its stacks and active slab for the cache). The same when that thread makes only
 * typed calls, on a second cache it used before: slub_cache_alloc stops at the poke and drains
 * the first cache's state too (before 2026-12-07 a thread on the typed fastpaths kept it). ---- */
enum { TRIM_N = 20000 };
static struct slub_cache *trim_cache, *busy_cache;
static atomic_int trim_step; /* 1: the worker freed all; 2: trimmed; 3: the worker called again;
			     * 4: checked (the worker's exit would drain it too) */

static void wait_step(int step)
{
	while (atomic_load(&trim_step) < step)
		sched_yield();
}

/* The worker's part before and after its call: TRIM_N objects of trim_cache allocated and freed,
 * then, once trimmed, call(); then it stays alive until the check. */
static void trim_worker_around(void (*call)(void))
{
	static void *v[TRIM_N];
	for (size_t i = 0; i < TRIM_N; i++)
		CHECK((v[i] = slub_cache_alloc(trim_cache)), "slub_cache_alloc: errno %d", errno);
	for (size_t i = 0; i < TRIM_N; i++)
		slub_cache_free(trim_cache, v[i]);
	atomic_store(&trim_step, 1);
	wait_step(2);
	call();
	atomic_store(&trim_step, 3);
	wait_step(4);
}

static void call_malloc(void)
{
	free(malloc(32)); /* poked: drains before its refill */
}

static void *trim_worker(void *arg)
{
	(void)arg;
	trim_worker_around(call_malloc);
	return NULL;
}

static void busy_round(void)
{
	void *b = slub_cache_alloc(busy_cache); /* poked: the first one drains */
	CHECK(b, "slub_cache_alloc: errno %d", errno);
	slub_cache_free(busy_cache, b);
}

static void call_typed(void)
{
	for (int i = 0; i < 100; i++)
		busy_round();
}

static void *typed_only_worker(void *arg)
{
	(void)arg;
	busy_round(); /* busy_cache's stacks set up before the trim */
	trim_worker_around(call_typed);
	return NULL;
}

/* Runs worker; after its call and a trim, trim_cache must have no slab left. */
static void trim_case(void *(*worker)(void *), const char *what)
{
	trim_cache = slub_cache_create("trim-other", 200, 0, 0, NULL);
	busy_cache = slub_cache_create("trim-busy", 96, 0, 0, NULL);
	CHECK(trim_cache && busy_cache, "slub_cache_create: errno %d", errno);
	atomic_store(&trim_step, 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, worker, NULL) == 0, "pthread_create");
	wait_step(1);
	size_t before = stats_row("trim-other").num_slabs;
	CHECK(before > 0, "no slabs before the trims: the case proves nothing");
	malloc_trim(0);
	atomic_store(&trim_step, 2);
	wait_step(3);
	malloc_trim(0);
	struct slub_cache_stats r = stats_row("trim-other");
	atomic_store(&trim_step, 4);
	CHECK(r.num_slabs == 0, "after the worker's %s and a trim: %zu of %zu slabs left "
	      "(%zu held by a thread)", what, r.num_slabs, before, r.active_slabs);
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	slub_cache_destroy(trim_cache);
	slub_cache_destroy(busy_cache);
}

static void case_trim_other_thread(void)
{
	trim_case(trim_worker, "malloc");
}

static void case_trim_typed_only(void)
{
	trim_case(typed_only_worker, "typed calls");
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{"threads", case_threads},
		{"threads_ctor", case_threads_ctor},
		{"destroy_users_alive", case_destroy_users_alive},
		{"destroy_racing", case_destroy_racing},
		{"after_exit", case_after_exit},
		{"trim_other_thread", case_trim_other_thread},
		{"trim_typed_only", case_trim_typed_only},
	};
	int failed = run_cases(argc, argv, cases, sizeof cases / sizeof cases[0], 50);
	failed |= rerun_without_avx2(argv);
	return failed != 0;
}
