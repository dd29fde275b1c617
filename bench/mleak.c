/* mleak: memory left behind by exited threads. ROUNDS times, THREADS short-lived threads are
 * started; each one frees everything a thread of the previous round left behind (those
 * threads have exited, so every free is remote to a dead thread's memory), then allocates
 * OBJECTS objects of 16..2048 bytes (mostly small), writes them, and exits without freeing
 * them. The live memory stays at about two rounds' worth, so an allocator that strands memory
 * in the caches or heaps of exited threads shows it as a peak RSS that grows with the rounds.
 * Fixed work; measures the time (compare.sh times the whole process) and the peak RSS (from
 * /usr/bin/time; the program also reports its own peak and its RSS after freeing everything).
 * Validation: every object carries its size, owner and index, checked against the ledger
 * before it is freed (exit 3 on a mismatch).
 * Usage: mleak [THREADS [ROUNDS [OBJECTS]]]
 * Prints: RESULT name=mleak ms=... peak_rss_kib=... rss_end_kib=... live_kib=... */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define DEFAULT_THREADS 2
#define DEFAULT_ROUNDS 200
#define DEFAULT_OBJECTS 20000

struct ledger {
	unsigned char **obj;
	unsigned long count;
	unsigned owner;
};

struct job {
	pthread_t tid;
	unsigned id, round;
	struct ledger *inherit; /* left by the previous round: free it */
	struct ledger *leave;   /* filled by this thread and left behind */
};

static unsigned long objects;
static atomic_ulong bad_objects;
static atomic_ulong live_bytes;

/* The owner and the object's index in its ledger are known outside the object: an object
 * that another allocation overwrote does not pass. */
static inline void tag_object(unsigned char *p, size_t size, unsigned owner, unsigned long idx)
{
	p[0] = (unsigned char)size;
	p[1] = (unsigned char)(size >> 8);
	p[2] = (unsigned char)owner;
	p[3] = (unsigned char)idx;
	p[4] = (unsigned char)(idx >> 8);
	memset(p + 5, 0x77, size > 64 ? 59 : size - 6); /* touch the first line like a user would */
	p[size - 1] = (unsigned char)(0xc3 ^ owner);
}

static inline size_t check_object(const unsigned char *p, unsigned owner, unsigned long idx)
{
	size_t size = (size_t)p[0] | ((size_t)p[1] << 8);
	if (size < 16 || size > 2048 || p[2] != (unsigned char)owner ||
	    p[3] != (unsigned char)idx || p[4] != (unsigned char)(idx >> 8) ||
	    p[size - 1] != (unsigned char)(0xc3 ^ owner)) {
		atomic_fetch_add(&bad_objects, 1);
		return 0;
	}
	return size;
}

static void free_ledger(struct ledger *l)
{
	size_t bytes = 0;
	for (unsigned long i = 0; i < l->count; i++) {
		bytes += check_object(l->obj[i], l->owner, i);
		free(l->obj[i]);
	}
	atomic_fetch_sub(&live_bytes, bytes);
	l->count = 0;
}

static void *thread_main(void *arg)
{
	struct job *job = arg;
	uint64_t rng = ((uint64_t)job->round << 20) + 0x1ea4 + job->id;
	unsigned owner = job->round * 31 + job->id;
	size_t bytes = 0;

	free_ledger(job->inherit);
	job->leave->owner = owner;
	for (unsigned long i = 0; i < objects; i++) {
		uint64_t r = rng_next(&rng);
		size_t size = (r & 7) == 0 ? 16 + (size_t)((r >> 8) % 2033) : 16 + (size_t)((r >> 8) % 241);
		unsigned char *p = xmalloc_or_die(size);
		tag_object(p, size, owner, i);
		job->leave->obj[i] = p;
		bytes += size;
	}
	job->leave->count = objects;
	atomic_fetch_add(&live_bytes, bytes);
	return NULL; /* exits with its objects still allocated */
}

int main(int argc, char **argv)
{
	bench_name = "mleak";
	if (argc > 4)
		fatal(EXIT_USAGE, "usage: mleak [THREADS [ROUNDS [OBJECTS]]]");
	unsigned threads = (unsigned)arg_ulong(argc, argv, 1, DEFAULT_THREADS, 1, 256);
	unsigned rounds = (unsigned)arg_ulong(argc, argv, 2, DEFAULT_ROUNDS, 1, 1000000);
	objects = arg_ulong(argc, argv, 3, DEFAULT_OBJECTS, 1, 1UL << 30);

	/* two ledger generations: a round frees one and fills the other */
	struct ledger *ledgers = calloc(2 * (size_t)threads, sizeof(*ledgers));
	struct job *jobs = calloc(threads, sizeof(*jobs));
	if (ledgers == NULL || jobs == NULL)
		fatal(EXIT_SYSTEM, "calloc failed");
	for (unsigned i = 0; i < 2 * threads; i++)
		ledgers[i].obj = xmalloc_or_die(objects * sizeof(*ledgers[i].obj));

	unsigned long max_live = 0;
	uint64_t t0 = now_ns();
	for (unsigned r = 0; r < rounds; r++) {
		struct ledger *fill = &ledgers[(r & 1) * threads];
		struct ledger *old = &ledgers[((r + 1) & 1) * threads];
		for (unsigned i = 0; i < threads; i++) {
			jobs[i].id = i;
			jobs[i].round = r;
			jobs[i].inherit = &old[(i + 1) % threads]; /* another lineage's objects */
			jobs[i].leave = &fill[i];
			if (pthread_create(&jobs[i].tid, NULL, thread_main, &jobs[i]) != 0)
				fatal(EXIT_SYSTEM, "pthread_create failed");
		}
		for (unsigned i = 0; i < threads; i++)
			pthread_join(jobs[i].tid, NULL);
		unsigned long live = atomic_load(&live_bytes);
		if (live > max_live)
			max_live = live;
	}
	for (unsigned i = 0; i < 2 * threads; i++)
		free_ledger(&ledgers[i]);
	uint64_t t1 = now_ns();
	long rss_end = current_rss_kib();
	for (unsigned i = 0; i < 2 * threads; i++)
		free(ledgers[i].obj);
	free(ledgers);
	free(jobs);

	unsigned long bad = atomic_load(&bad_objects);
	if (bad != 0)
		fatal(EXIT_CORRUPT, "%lu corrupted objects", bad);
	printf("RESULT name=mleak ms=%.1f peak_rss_kib=%ld rss_end_kib=%ld live_kib=%lu threads=%u "
	       "rounds=%u objects=%lu\n",
	       (double)(t1 - t0) / 1e6, peak_rss_kib(), rss_end, max_live / 1024, threads, rounds,
	       objects);
	return 0;
}
