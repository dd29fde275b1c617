/* unit_bulk_mt.c: malloc_bulk and free_bulk through the public API, used by several threads
 * (linked with libslubmalloc.so, as a user program is). Pointers mixed across classes,
 * allocation functions and threads (some of them exited) are freed in bulk by other threads.
 * Cross-thread bulk frees race with the owner's own bulk calls; nothing is lost or corrupted.
 * Objects smaller than a cache line that another thread allocated are not reused by the
 * thread that freed them (passive false sharing); larger ones are. free_bulk'ed objects stay
 * double frees when another thread freezes their slab. The single-threaded cases
 * are in unit_bulk.c; the helpers both use in bulk_util.h.
 * Each case runs in a child of its own; `unit_bulk_mt NAME...` runs only the named cases. */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "api_util.h"
#include "bulk_util.h"
#include "slubmalloc.h"

/* ---- pointers mixed across classes, allocation functions and threads ---- */
enum { MT_THREADS = 4, MT_PER = 3000, MT_ROUNDS = 8, MT_EPHEMERAL = 1500 };

struct entry {
	void *p;
	size_t size;
	uint64_t tag;
};

static struct entry pool[MT_THREADS * MT_PER + MT_EPHEMERAL];
static size_t pool_n;
static pthread_barrier_t mt_bar;

/* Allocates n entries of mixed kinds into e (thread-local choices from seed). */
static void alloc_mixed(struct entry *e, size_t n, uint64_t seed, uint64_t tag0)
{
	uint64_t rng = seed;
	void *tmp[64];
	for (size_t i = 0; i < n;) {
		unsigned kind = (unsigned)rng_below(&rng, 7);
		size_t size = rng_below(&rng, 8) ? 1 + rng_below(&rng, 1024)
						 : 1 + rng_below(&rng, rng_below(&rng, 4) ? 32768 : 200000);
		if (kind <= 2) { /* a bulk of 1..64 */
			size_t k = 1 + rng_below(&rng, 64);
			if (k > n - i)
				k = n - i;
			CHECK(malloc_bulk(size, k, tmp) == k, "mixed: malloc_bulk(%zu, %zu)", size, k);
			for (size_t j = 0; j < k; j++)
				e[i + j] = (struct entry){tmp[j], size, tag0 + i + j};
			i += k;
			continue;
		}
		void *p = NULL;
		if (kind == 3)
			p = malloc(size);
		else if (kind == 4)
			p = calloc(size, 1);
		else if (kind == 5)
			CHECK(posix_memalign(&p, 256, size) == 0, "posix_memalign");
		else
			p = realloc(malloc(size / 2 + 1), size);
		CHECK(p, "mixed: allocation of %zu (kind %u)", size, kind);
		e[i] = (struct entry){p, size, tag0 + i};
		i++;
	}
	for (size_t i = 0; i < n; i++)
		pat_fill(e[i].p, e[i].size, e[i].tag);
}

static void *ephemeral_main(void *arg)
{
	alloc_mixed(pool + MT_THREADS * MT_PER, MT_EPHEMERAL, (uintptr_t)arg, 900000000);
	return NULL; /* exits: its objects are freed by the others after it is gone */
}

static void *mixed_main(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 77 + id;
	void **batch = malloc((pool_n / MT_THREADS + 64) * sizeof *batch);
	CHECK(batch, "malloc");
	for (unsigned r = 0; r < MT_ROUNDS; r++) {
		alloc_mixed(pool + id * MT_PER, MT_PER, rng_next(&rng), (uint64_t)(id + 1) << 32 | r << 20);
		pthread_barrier_wait(&mt_bar); /* everyone allocated; main shuffles */
		pthread_barrier_wait(&mt_bar);
		/* free a quarter of the shuffled pool, which mixes every thread's objects */
		size_t lo = pool_n * id / MT_THREADS, hi = pool_n * (id + 1) / MT_THREADS, m = 0;
		for (size_t i = lo; i < hi; i++) {
			size_t bad = pat_bad(pool[i].p, pool[i].size, pool[i].tag);
			CHECK(bad == SIZE_MAX, "mixed: object %p (%zu B) corrupted at %zu before free",
			      pool[i].p, pool[i].size, bad);
			if (rng_below(&rng, 50) == 0)
				batch[m++] = NULL;
			batch[m++] = pool[i].p;
		}
		for (size_t i = 0; i < m;) {
			size_t k = 1 + rng_below(&rng, 400);
			if (k > m - i)
				k = m - i;
			free_bulk(k, batch + i);
			i += k;
		}
		pthread_barrier_wait(&mt_bar);
	}
	free(batch);
	return NULL;
}

static void case_mixed_threads(void)
{
	pthread_t t[MT_THREADS];
	CHECK(pthread_barrier_init(&mt_bar, NULL, MT_THREADS + 1) == 0, "barrier");
	pool_n = MT_THREADS * MT_PER + MT_EPHEMERAL;
	for (unsigned i = 0; i < MT_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, mixed_main, (void *)(uintptr_t)i) == 0, "create");
	uint64_t rng = 5;
	for (unsigned r = 0; r < MT_ROUNDS; r++) {
		pthread_t e;
		CHECK(pthread_create(&e, NULL, ephemeral_main, (void *)(uintptr_t)(r + 1000)) == 0,
		      "create");
		pthread_join(e, NULL);
		pthread_barrier_wait(&mt_bar);
		for (size_t i = pool_n; i > 1; i--) { /* shuffle the entries */
			size_t j = rng_below(&rng, i);
			struct entry x = pool[i - 1];
			pool[i - 1] = pool[j];
			pool[j] = x;
		}
		pthread_barrier_wait(&mt_bar);
		pthread_barrier_wait(&mt_bar);
	}
	for (unsigned i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	/* the heap still works and hands out distinct objects */
	void *v[5000];
	CHECK(malloc_bulk(200, 5000, v) == 5000, "malloc_bulk after the mixed frees");
	check_fresh(v, 5000, 200, 1, "after mixed");
	free_bulk(5000, v);
}

/* ---- cross-thread bulk frees racing with the owner ---- */
enum { RACE_FREERS = 2, RACE_QUEUE = 256, RACE_MAXK = 64 };

struct batch {
	void *v[RACE_MAXK];
	size_t n, size;
	uint64_t tag0;
};

static struct batch *race_q[RACE_QUEUE];
static size_t race_head, race_tail;
static int race_done;
static pthread_mutex_t race_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t race_cv = PTHREAD_COND_INITIALIZER;
static atomic_ulong race_allocated, race_freed;

static void race_free(struct batch *b, uint64_t *rng)
{
	verify(b->v, b->n, b->size, b->tag0, "race");
	unsigned how = (unsigned)rng_below(rng, 8);
	if (how == 0) {
		for (size_t i = 0; i < b->n; i++)
			free(b->v[i]);
	} else {
		if (how == 1)
			shuffle(b->v, b->n, rng);
		free_bulk(b->n, b->v);
	}
	atomic_fetch_add(&race_freed, b->n);
	free(b);
}

static void *race_freer(void *arg)
{
	uint64_t rng = 1000 + (uintptr_t)arg;
	for (;;) {
		pthread_mutex_lock(&race_mu);
		while (race_head == race_tail && !race_done)
			pthread_cond_wait(&race_cv, &race_mu);
		if (race_head == race_tail) {
			pthread_mutex_unlock(&race_mu);
			return NULL;
		}
		struct batch *b = race_q[race_head++ % RACE_QUEUE];
		pthread_cond_broadcast(&race_cv);
		pthread_mutex_unlock(&race_mu);
		race_free(b, &rng);
	}
}

static void case_cross_thread_race(void)
{
	static const size_t sizes[] = {16, 64, 256, 1024, 40000};
	pthread_t t[RACE_FREERS];
	for (unsigned i = 0; i < RACE_FREERS; i++)
		CHECK(pthread_create(&t[i], NULL, race_freer, (void *)(uintptr_t)i) == 0, "create");
	uint64_t rng = 99, tag = 1;
	struct batch *mine[16] = {0};
	double t_end = now_sec() + 4.0;
	unsigned long iters = 0;
	while (iters < 1500000 && (iters < 20000 || now_sec() < t_end)) {
		iters++;
		struct batch *b = malloc(sizeof *b);
		CHECK(b, "malloc");
		b->size = sizes[rng_below(&rng, iters % 64 == 0 ? 5 : 4)];
		b->n = 1 + rng_below(&rng, RACE_MAXK);
		b->tag0 = tag;
		tag += b->n;
		CHECK(malloc_bulk(b->size, b->n, b->v) == b->n, "race: malloc_bulk(%zu, %zu)", b->size,
		      b->n);
		atomic_fetch_add(&race_allocated, b->n);
		for (size_t i = 0; i < b->n; i++)
			pat_fill(b->v[i], b->size < 256 ? b->size : 256, b->tag0 + i);
		if (b->size > 256) /* tag the whole object only for the small ones: fast enough */
			b->size = 256;
		if (rng_below(&rng, 3) == 0) { /* the owner frees some of its objects itself */
			unsigned slot = (unsigned)rng_below(&rng, 16);
			if (mine[slot])
				race_free(mine[slot], &rng);
			mine[slot] = b;
			continue;
		}
		pthread_mutex_lock(&race_mu);
		while (race_tail - race_head == RACE_QUEUE)
			pthread_cond_wait(&race_cv, &race_mu);
		race_q[race_tail++ % RACE_QUEUE] = b;
		pthread_cond_broadcast(&race_cv);
		pthread_mutex_unlock(&race_mu);
	}
	pthread_mutex_lock(&race_mu);
	race_done = 1;
	pthread_cond_broadcast(&race_cv);
	pthread_mutex_unlock(&race_mu);
	for (unsigned i = 0; i < RACE_FREERS; i++)
		pthread_join(t[i], NULL);
	for (unsigned s = 0; s < 16; s++)
		if (mine[s])
			race_free(mine[s], &rng);
	CHECK(atomic_load(&race_allocated) == atomic_load(&race_freed), "race: %lu allocated, %lu freed",
	      atomic_load(&race_allocated), atomic_load(&race_freed));
	printf("  %lu bulk batches, %lu objects\n", iters, atomic_load(&race_allocated));
	void *v[4000];
	CHECK(malloc_bulk(64, 4000, v) == 4000, "malloc_bulk after the race");
	check_fresh(v, 4000, 64, 7, "after race");
	free_bulk(4000, v);
}

/* Passive false sharing: objects smaller than a cache line that another thread allocated (from
 * its slabs) and this thread freed are not handed out again by this thread, which allocates
 * from slabs of its own; larger objects are reused. The worker frees the main thread's
 * objects, allocates as many of the same size and counts the ones it got back. */
enum { PFS_N = 200 };
struct pfs {
	size_t size;
	void *v[PFS_N];
};

static void *pfs_worker(void *arg)
{
	struct pfs *a = arg;
	void *mine[PFS_N];
	for (size_t i = 0; i < PFS_N; i++)
		free(a->v[i]);
	for (size_t i = 0; i < PFS_N; i++)
		mine[i] = malloc(a->size);
	size_t reused = 0;
	for (size_t i = 0; i < PFS_N; i++) {
		for (size_t j = 0; j < PFS_N; j++)
			reused += mine[i] == a->v[j];
		free(mine[i]);
	}
	return (void *)reused;
}

static size_t pfs_reused(size_t size)
{
	struct pfs a = {.size = size};
	for (size_t i = 0; i < PFS_N; i++)
		CHECK((a.v[i] = malloc(size)), "malloc(%zu)", size);
	pthread_t t;
	void *reused;
	CHECK(pthread_create(&t, NULL, pfs_worker, &a) == 0, "pthread_create");
	CHECK(pthread_join(t, &reused) == 0, "pthread_join");
	return (size_t)reused;
}

static void case_small_not_reused(void)
{
	static const size_t small[] = {8, 16, 32, 48};
	for (size_t k = 0; k < sizeof small / sizeof small[0]; k++) {
		size_t n = pfs_reused(small[k]);
		CHECK(n == 0, "a thread reused %zu of %d objects of %zu bytes that another thread "
		      "allocated (passive false sharing)", n, PFS_N, small[k]);
	}
	size_t n = pfs_reused(64);
	CHECK(n == PFS_N, "a thread reused %zu of %d freed 64-byte objects of another thread "
	      "(want all: larger objects are reused)", n, PFS_N);
}

/* A free_bulk'ed object must stay a double free when free() picks another stack for it: a run
 * of 48-byte objects is free_bulk'ed, then another thread freezes their slab, so free() picks
 * the remote stack for them (free_stack_in). A free() of one of them is still a double free.
 * An earlier free_bulk left its runs without keys, behind a lowered lim of the free stack; the
 * remote stack had room, and the free went through unreported: two stacks held the object.
 * free_bulk now keys every object it pushes (bulk.c). */
enum { ZM_SIZE = 48, ZM_N = 3000 };
static void *zm_v[ZM_N], *zm_got;
static sem_t zm_go, zm_done;

static void *zm_freezer(void *arg)
{
	(void)arg;
	sem_wait(&zm_go);
	free(zm_v[12]);            /* to this thread's remote stack */
	malloc_trim(0);            /* back to its slab, which becomes partial */
	zm_got = malloc(ZM_SIZE);  /* freezes that slab, the only partial one */
	sem_post(&zm_done);
	for (;;)
		pause();
	return NULL;
}

/* The thread is made first: pthread_create mallocs. Between free_bulk and the free() the
 * calling thread makes no other call. */
static void zm_child(void *arg)
{
	(void)arg;
	pthread_t t;
	sem_init(&zm_go, 0, 0);
	sem_init(&zm_done, 0, 0);
	if (pthread_create(&t, NULL, zm_freezer, NULL))
		_exit(3);
	for (int i = 0; i < ZM_N; i++)
		zm_v[i] = malloc(ZM_SIZE);
	void *run[2] = {zm_v[10], zm_v[11]};
	free_bulk(2, run);
	sem_post(&zm_go);
	sem_wait(&zm_done);
	if (zm_got != zm_v[12]) { /* the other thread did not freeze the run's slab */
		fprintf(stderr, "setup: the other thread got %p, not %p\n", zm_got, zm_v[12]);
		_exit(4);
	}
	free(zm_v[10]); /* a double free */
}

static void case_run_owner_moves(void)
{
	expect_report(zm_child, NULL, "free() of a free_bulk'ed object after another thread froze its slab");
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{"mixed_threads", case_mixed_threads},
		{"cross_thread_race", case_cross_thread_race},
		{"small_not_reused", case_small_not_reused},
		{"run_owner_moves", case_run_owner_moves},
	};
	int failed = run_cases(argc, argv, cases, sizeof cases / sizeof cases[0], 50);
	failed |= rerun_without_avx2(argv);
	return failed != 0;
}
