/* xchurn: many threads, random lifetimes, objects crossing threads. ROUNDS times, THREADS new
 * threads run at once; each does ITERATIONS steps on a local array of objects: allocate one of
 * a size spread over powers of two (16 B to 8 KiB, one in a hundred up to 256 KiB), fill it,
 * and put it in a random local slot, checking and freeing what was there; one step in four
 * swaps the object with a slot of a shared array instead (an atomic exchange), so it is freed
 * by whichever thread takes it next. At its end a thread frees its local objects; after each
 * round half of the shared slots are freed by the main thread, the rest survive into the next
 * round. Fixed work; compare.sh times the whole process.
 * Validation: every object carries its size and a pattern checked before it is freed (exit 3).
 * Usage: xchurn [THREADS [ROUNDS [ITERATIONS]]]
 * Prints: RESULT name=xchurn ms=... threads=... rounds=... objects=... */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define DEFAULT_THREADS 8
#define DEFAULT_ROUNDS 20
#define DEFAULT_ITERATIONS 100000
#define LOCAL_SLOTS 512
#define SHARED_SLOTS 4096

struct obj {
	uint64_t size; /* bytes, this header included */
	uint64_t seal; /* size ^ a constant: a corrupted or foreign block fails it */
};
#define SEAL 0x9e3779b97f4a7c15ULL

static _Atomic(struct obj *) shared[SHARED_SLOTS];
static unsigned long iterations;
static atomic_ulong bad, made;

static size_t pick_size(uint64_t *rng)
{
	uint64_t r = rng_next(rng);
	if (r % 100 == 0)
		return 16384 + (size_t)((r >> 8) % (256 * 1024 - 16384));
	unsigned lg = 4 + (unsigned)((r >> 8) % 10); /* 16 B .. 8 KiB */
	size_t lo = (size_t)1 << lg;
	return lo + (size_t)((r >> 16) % lo);
}

static struct obj *make(uint64_t *rng)
{
	size_t size = pick_size(rng);
	struct obj *o = xmalloc_or_die(size);
	o->size = size;
	o->seal = size ^ SEAL;
	unsigned char *b = (unsigned char *)o;
	if (size > sizeof *o)
		b[size - 1] = (unsigned char)size;
	if (size >= 64)
		memset(b + sizeof *o, 0x5c, 32);
	return o;
}

static void check_free(struct obj *o)
{
	if (!o)
		return;
	const unsigned char *b = (const unsigned char *)o;
	if (o->seal != (o->size ^ SEAL) ||
	    (o->size > sizeof *o && b[o->size - 1] != (unsigned char)o->size) ||
	    (o->size >= 64 && b[sizeof *o] != 0x5c))
		atomic_fetch_add(&bad, 1);
	free(o);
}

static void *worker(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	struct obj *local[LOCAL_SLOTS] = {0};
	for (unsigned long i = 0; i < iterations; i++) {
		struct obj *o = make(&rng);
		uint64_t r = rng_next(&rng);
		if (r % 4 == 0) { /* swap it through the shared array: another thread may free it */
			o = atomic_exchange_explicit(&shared[(r >> 8) % SHARED_SLOTS], o,
						     memory_order_acq_rel);
		}
		unsigned s = (unsigned)((r >> 20) % LOCAL_SLOTS);
		check_free(local[s]);
		local[s] = o;
	}
	for (unsigned s = 0; s < LOCAL_SLOTS; s++)
		check_free(local[s]);
	atomic_fetch_add(&made, iterations);
	return NULL;
}

int main(int argc, char **argv)
{
	bench_name = "xchurn";
	if (argc > 4)
		fatal(EXIT_USAGE, "usage: xchurn [THREADS [ROUNDS [ITERATIONS]]]");
	unsigned threads = (unsigned)arg_ulong(argc, argv, 1, DEFAULT_THREADS, 1, 1024);
	unsigned rounds = (unsigned)arg_ulong(argc, argv, 2, DEFAULT_ROUNDS, 1, 100000);
	iterations = arg_ulong(argc, argv, 3, DEFAULT_ITERATIONS, 1, 1UL << 32);
	pthread_t *tid = xmalloc_or_die(threads * sizeof *tid);
	uint64_t t0 = now_ns();
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned t = 0; t < threads; t++)
			if (pthread_create(&tid[t], NULL, worker, (void *)(uintptr_t)(r * threads + t + 1)))
				fatal(EXIT_SYSTEM, "pthread_create failed");
		for (unsigned t = 0; t < threads; t++)
			pthread_join(tid[t], NULL);
		for (unsigned s = r % 2; s < SHARED_SLOTS; s += 2) /* half survive the round */
			check_free(atomic_exchange(&shared[s], NULL));
	}
	for (unsigned s = 0; s < SHARED_SLOTS; s++)
		check_free(atomic_exchange(&shared[s], NULL));
	uint64_t t1 = now_ns();
	free(tid);
	if (atomic_load(&bad))
		fatal(EXIT_CORRUPT, "%lu corrupted objects", atomic_load(&bad));
	printf("RESULT name=xchurn ms=%.1f threads=%u rounds=%u objects=%lu\n", (double)(t1 - t0) / 1e6,
	       threads, rounds, atomic_load(&made));
	return 0;
}
