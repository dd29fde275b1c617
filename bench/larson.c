/* larson: server simulation in the manner of Larson and Krishnan's benchmark. The live objects
 * are kept in 2*THREADS slot sets; a worker claims a free set, does a batch of operations on it
 * (free the object in a random slot, allocate a new one of 8..1000 bytes, write it), releases
 * the set and claims another, so most objects are freed by a different thread than the one
 * that allocated them. Like the original, a worker retires after a number of batches and hands
 * on to a new thread it creates (thread churn: the objects outlive the thread that made them).
 * Runs for a fixed duration and measures throughput: ops_per_s, one op = one free plus one
 * malloc (higher is better).
 * Validation: every object carries its slot number and size at both ends, checked before it is
 * freed (exit 3 on a mismatch).
 * Usage: larson [THREADS [DURATION_MS [SLOTS_PER_SET]]]   (built with -D_GNU_SOURCE)
 * Prints: RESULT name=larson ops_per_s=... threads=... ops=... ms=... thread_starts=... */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

#define DEFAULT_THREADS 2
#define DEFAULT_DURATION_MS 1000
#define DEFAULT_SLOTS 4000
#define MIN_SIZE 8
#define MAX_SIZE 1000
#define BATCH 256             /* operations per claim of a set */
#define BATCHES_PER_THREAD 96 /* then the worker starts its successor and exits */

struct slot_set {
	atomic_int busy;
	unsigned char **obj;
	uint32_t *size;
};

struct worker {
	uint64_t rng;
	unsigned home;
	unsigned long ops; /* carried from predecessor to successor */
};

static struct slot_set *sets;
static unsigned nsets;
static unsigned long nslots;
static atomic_int stop;
static atomic_int live_lineages;
static atomic_ulong total_ops;
static atomic_ulong thread_starts;
static atomic_ulong bad_objects;

/* First byte and last byte encode the slot and the size. */
static inline void tag_object(unsigned char *p, size_t size, unsigned long slot)
{
	p[0] = (unsigned char)(slot ^ size);
	if (size >= 4) {
		p[1] = (unsigned char)(size & 0xff);
		p[2] = (unsigned char)(size >> 8);
	}
	p[size - 1] = (unsigned char)(0xa5 ^ slot);
}

static inline int tag_ok(const unsigned char *p, size_t size, unsigned long slot)
{
	if (p[0] != (unsigned char)(slot ^ size) || p[size - 1] != (unsigned char)(0xa5 ^ slot))
		return 0;
	return size < 4 || (p[1] == (unsigned char)(size & 0xff) && p[2] == (unsigned char)(size >> 8));
}

static unsigned char *new_object(uint64_t *rng, unsigned long slot, uint32_t *size_out)
{
	size_t size = (size_t)rng_range(rng, MIN_SIZE, MAX_SIZE);
	unsigned char *p = xmalloc_or_die(size);
	tag_object(p, size, slot);
	*size_out = (uint32_t)size;
	return p;
}

static struct slot_set *claim_set(unsigned start)
{
	unsigned spins = 0;
	for (unsigned i = start;; i++) {
		struct slot_set *s = &sets[i % nsets];
		if (atomic_load_explicit(&s->busy, memory_order_relaxed) == 0 &&
		    atomic_exchange_explicit(&s->busy, 1, memory_order_acquire) == 0)
			return s;
		if (++spins % nsets == 0)
			sched_yield();
	}
}

static void *worker_main(void *arg);

/* Starts a detached worker thread on w. */
static void spawn_worker(struct worker *w)
{
	pthread_attr_t attr;
	pthread_t tid;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&tid, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		fatal(EXIT_SYSTEM, "pthread_create failed (%d)", rc);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long bad = 0;
	atomic_fetch_add_explicit(&thread_starts, 1, memory_order_relaxed);

	for (unsigned b = 0; b < BATCHES_PER_THREAD; b++) {
		if (atomic_load_explicit(&stop, memory_order_relaxed)) {
			atomic_fetch_add(&total_ops, w->ops);
			atomic_fetch_add(&bad_objects, bad);
			atomic_fetch_sub(&live_lineages, 1);
			free(w);
			return NULL;
		}
		struct slot_set *s = claim_set(w->home + b);
		for (unsigned i = 0; i < BATCH; i++) {
			unsigned long slot = (unsigned long)(rng_next(&w->rng) % nslots);
			if (!tag_ok(s->obj[slot], s->size[slot], slot))
				bad++;
			free(s->obj[slot]);
			s->obj[slot] = new_object(&w->rng, slot, &s->size[slot]);
		}
		atomic_store_explicit(&s->busy, 0, memory_order_release);
		w->ops += BATCH;
	}
	atomic_fetch_add(&bad_objects, bad);

	/* retire: a new thread continues this lineage with the same state (freed by it) */
	spawn_worker(w);
	return NULL;
}

int main(int argc, char **argv)
{
	bench_name = "larson";
	if (argc > 4)
		fatal(EXIT_USAGE, "usage: larson [THREADS [DURATION_MS [SLOTS_PER_SET]]]");
	unsigned threads = (unsigned)arg_ulong(argc, argv, 1, DEFAULT_THREADS, 1, 256);
	unsigned long duration_ms = arg_ulong(argc, argv, 2, DEFAULT_DURATION_MS, 1, 3600000);
	nslots = arg_ulong(argc, argv, 3, DEFAULT_SLOTS, 1, 1UL << 24);

	nsets = 2 * threads;
	sets = calloc(nsets, sizeof(*sets));
	if (sets == NULL)
		fatal(EXIT_SYSTEM, "calloc failed");
	uint64_t rng = 0x1a450b0e;
	for (unsigned i = 0; i < nsets; i++) {
		sets[i].obj = xmalloc_or_die(nslots * sizeof(*sets[i].obj));
		sets[i].size = xmalloc_or_die(nslots * sizeof(*sets[i].size));
		for (unsigned long j = 0; j < nslots; j++)
			sets[i].obj[j] = new_object(&rng, j, &sets[i].size[j]);
	}

	atomic_store(&live_lineages, (int)threads);
	uint64_t t0 = now_ns();
	for (unsigned t = 0; t < threads; t++) {
		struct worker *w = xmalloc_or_die(sizeof(*w));
		w->rng = 0x5eed0000ULL + t;
		w->home = 2 * t;
		w->ops = 0;
		spawn_worker(w);
	}
	struct timespec ts = { (time_t)(duration_ms / 1000), (long)(duration_ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
	atomic_store(&stop, 1);
	while (atomic_load(&live_lineages) > 0) {
		struct timespec tick = { 0, 200000 };
		nanosleep(&tick, NULL);
	}
	uint64_t t1 = now_ns();

	unsigned long bad = atomic_load(&bad_objects);
	for (unsigned i = 0; i < nsets; i++) {
		for (unsigned long j = 0; j < nslots; j++) {
			if (!tag_ok(sets[i].obj[j], sets[i].size[j], j))
				bad++;
			free(sets[i].obj[j]);
		}
		free(sets[i].obj);
		free(sets[i].size);
	}
	free(sets);
	if (bad != 0)
		fatal(EXIT_CORRUPT, "%lu corrupted objects", bad);
	unsigned long ops = atomic_load(&total_ops);
	double secs = (double)(t1 - t0) / 1e9;
	printf("RESULT name=larson ops_per_s=%.0f threads=%u ops=%lu ms=%.1f thread_starts=%lu\n",
	       (double)ops / secs, threads, ops, secs * 1e3, atomic_load(&thread_starts));
	return 0;
}
