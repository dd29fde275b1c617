/* cache_scratch: false sharing induced by the allocator, in the manner of Berger's
 * cache-scratch (passive) and cache-thrash (active) benchmarks.
 *   passive: the main thread allocates THREADS small objects one after the other (so they are
 *            likely neighbours on one cache line) and hands one to each thread; each thread
 *            frees it, then repeatedly allocates an object of the same size, writes it many
 *            times and frees it. An allocator that gives the freed neighbour back to the
 *            thread makes the threads write one cache line.
 *   active:  each thread repeatedly allocates a small object, writes it many times and frees
 *            it. An allocator that hands out neighbouring objects to different threads makes
 *            them share cache lines.
 * Fixed work; measures the time (lower is better; compare.sh times the whole process).
 * Each write pass increments every byte of the object and reads its first word back (see
 * thread_main), so a shared cache line costs a transfer per pass.
 * Validation: each thread checks the bytes it wrote before freeing (exit 3 on a mismatch).
 * Usage: cache_scratch passive|active [THREADS [ITERATIONS [WRITES [OBJECT_SIZE]]]]
 * Prints: RESULT name=cache_scratch|cache_thrash ms=... threads=... */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define DEFAULT_THREADS 2
#define DEFAULT_ITERATIONS 2000
#define DEFAULT_WRITES 20000
#define DEFAULT_OBJECT_SIZE 8

struct job {
	pthread_t tid;
	unsigned id;
	unsigned char *initial; /* passive mode: the object to free first */
	unsigned long bad;
	uint64_t checksum; /* of the words read back; keeps the reads */
};

static int passive;
static unsigned long iterations, writes;
static size_t object_size;
static pthread_barrier_t start_barrier;

/* One write pass increments every byte of the object, then reads its first word back as a
 * whole: the word load cannot be forwarded from the pending byte stores, so each pass needs the
 * cache line in this core (with plain stores alone the store buffer would hide the sharing). */
static void *thread_main(void *arg)
{
	struct job *job = arg;
	size_t word_bytes = object_size < sizeof(uint64_t) ? object_size : sizeof(uint64_t);
	uint64_t sum = 0;
	pthread_barrier_wait(&start_barrier);
	if (passive)
		free(job->initial);
	for (unsigned long it = 0; it < iterations; it++) {
		unsigned char *obj = xmalloc_or_die(object_size);
		volatile unsigned char *p = obj;
		for (size_t k = 0; k < object_size; k++)
			p[k] = (unsigned char)(job->id + k);
		for (unsigned long w = 0; w < writes; w++) {
			for (size_t k = 0; k < object_size; k++)
				p[k]++;
			uint64_t word = 0;
			escape(obj);
			memcpy(&word, obj, word_bytes);
			sum += word;
		}
		for (size_t k = 0; k < object_size; k++)
			if (p[k] != (unsigned char)(job->id + k + writes))
				job->bad++;
		free(obj);
	}
	job->checksum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	bench_name = "cache_scratch";
	if (argc < 2 || argc > 6 || (strcmp(argv[1], "passive") != 0 && strcmp(argv[1], "active") != 0))
		fatal(EXIT_USAGE,
		      "usage: cache_scratch passive|active [THREADS [ITERATIONS [WRITES [OBJECT_SIZE]]]]");
	passive = strcmp(argv[1], "passive") == 0;
	unsigned threads = (unsigned)arg_ulong(argc, argv, 2, DEFAULT_THREADS, 1, 256);
	iterations = arg_ulong(argc, argv, 3, DEFAULT_ITERATIONS, 1, 1UL << 40);
	writes = arg_ulong(argc, argv, 4, DEFAULT_WRITES, 1, 1UL << 40);
	object_size = arg_ulong(argc, argv, 5, DEFAULT_OBJECT_SIZE, 1, 4096);

	struct job *jobs = calloc(threads, sizeof(*jobs));
	if (jobs == NULL)
		fatal(EXIT_SYSTEM, "calloc failed");
	for (unsigned i = 0; i < threads; i++) {
		jobs[i].id = i;
		if (passive) {
			jobs[i].initial = xmalloc_or_die(object_size);
			memset(jobs[i].initial, 0, object_size);
		}
	}
	pthread_barrier_init(&start_barrier, NULL, threads + 1);
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&jobs[i].tid, NULL, thread_main, &jobs[i]) != 0)
			fatal(EXIT_SYSTEM, "pthread_create failed");
	uint64_t t0 = now_ns();
	pthread_barrier_wait(&start_barrier);
	unsigned long bad = 0;
	uint64_t checksum = 0;
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(jobs[i].tid, NULL);
		bad += jobs[i].bad;
		checksum += jobs[i].checksum;
	}
	uint64_t t1 = now_ns();
	pthread_barrier_destroy(&start_barrier);
	free(jobs);
	if (bad != 0)
		fatal(EXIT_CORRUPT, "%lu corrupted bytes", bad);
	printf("RESULT name=%s ms=%.1f threads=%u iterations=%lu writes=%lu object_size=%zu "
	       "checksum=%llx\n",
	       passive ? "cache_scratch" : "cache_thrash", (double)(t1 - t0) / 1e6, threads,
	       iterations, writes, object_size, (unsigned long long)(checksum & 0xffffffff));
	return 0;
}
