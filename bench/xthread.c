/* Two-thread cross-thread free benchmark: a producer mallocs objects (16..512 B)
 * and hands them in batches through a lock-free single-producer single-consumer
 * ring to a consumer thread, which checks and frees them. "pin" puts the two threads on
 * the first two CPUs of the affinity mask so every handoff crosses cores; "auto" (default)
 * pins only when at least 4 CPUs are available, since on a busy 2-CPU machine a pinned
 * thread cannot escape a competing process and the figure degrades tenfold.
 * Uses only the standard malloc API; run it under LD_PRELOAD of each allocator.
 * Usage: xthread [OBJECTS [auto|pin|nopin]]   (built with -D_GNU_SOURCE for CPU affinity)
 * Prints: RESULT name=xthread ns_per_obj=... cycles_per_obj=... */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

#define DEFAULT_OBJECTS 4000000UL
#define RING_SIZE 4096UL /* power of two */
#define BATCH 64UL       /* objects published per release store */
#define MIN_SIZE 16
#define MAX_SIZE 512
#define CACHE_LINE 64

struct ring {
	alignas(CACHE_LINE) atomic_ulong head; /* written by the producer */
	alignas(CACHE_LINE) atomic_ulong tail; /* written by the consumer */
	alignas(CACHE_LINE) atomic_int start;
	alignas(CACHE_LINE) unsigned char *slot[RING_SIZE];
};

static struct ring ring;
static unsigned long total_objects;
static unsigned long bad_objects;
static int thread_cpu[2] = { -1, -1 }; /* producer, consumer; -1 = not pinned */

/* Picks the first two CPUs this process may run on; returns 0 if there are fewer than
 * min_cpus available. */
static int choose_cpus(int min_cpus)
{
	cpu_set_t set;
	int found = 0;
	if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) < min_cpus)
		return 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
		if (CPU_ISSET(cpu, &set))
			thread_cpu[found++] = cpu;
	if (found < 2)
		thread_cpu[0] = thread_cpu[1] = -1;
	return found == 2;
}

static void pin_self(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Spin briefly, then yield: the machine may have fewer free cores than threads. */
static inline void backoff(unsigned *spins)
{
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		asm volatile("pause");
#endif
	} else {
		sched_yield();
	}
}

/* Objects carry their size in the first two bytes and a marker in the last byte. */
static inline void tag_object(unsigned char *p, size_t size)
{
	p[0] = (unsigned char)(size & 0xff);
	p[1] = (unsigned char)(size >> 8);
	p[size - 1] = 0xa5;
}

static inline int tag_ok(const unsigned char *p)
{
	size_t size = (size_t)p[0] | ((size_t)p[1] << 8);
	return size >= MIN_SIZE && size <= MAX_SIZE && p[size - 1] == 0xa5;
}

static void *producer(void *arg)
{
	(void)arg;
	uint64_t rng = 0x2545f4914f6cdd1dULL;
	unsigned long head = 0, tail_seen = 0;
	unsigned spins = 0;

	pin_self(thread_cpu[0]);
	while (!atomic_load_explicit(&ring.start, memory_order_acquire))
		backoff(&spins);
	while (head < total_objects) {
		unsigned long n = total_objects - head < BATCH ? total_objects - head : BATCH;
		spins = 0;
		while (head + n - tail_seen > RING_SIZE) {
			tail_seen = atomic_load_explicit(&ring.tail, memory_order_acquire);
			if (head + n - tail_seen > RING_SIZE)
				backoff(&spins);
		}
		for (unsigned long i = 0; i < n; i++) {
			size_t size = MIN_SIZE + (size_t)(xorshift64(&rng) % (MAX_SIZE - MIN_SIZE + 1));
			unsigned char *p = malloc(size);
			if (p == NULL) {
				fprintf(stderr, "xthread: malloc(%zu) failed\n", size);
				exit(2);
			}
			tag_object(p, size);
			ring.slot[(head + i) & (RING_SIZE - 1)] = p;
		}
		head += n;
		atomic_store_explicit(&ring.head, head, memory_order_release);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	unsigned long tail = 0;
	unsigned long bad = 0;
	unsigned spins = 0;

	pin_self(thread_cpu[1]);

	while (tail < total_objects) {
		unsigned long head = atomic_load_explicit(&ring.head, memory_order_acquire);
		if (head == tail) {
			backoff(&spins);
			continue;
		}
		spins = 0;
		while (tail != head) {
			unsigned char *p = ring.slot[tail & (RING_SIZE - 1)];
			if (!tag_ok(p))
				bad++;
			free(p);
			tail++;
		}
		atomic_store_explicit(&ring.tail, tail, memory_order_release);
	}
	bad_objects = bad;
	return NULL;
}

int main(int argc, char **argv)
{
	total_objects = DEFAULT_OBJECTS;
	int pinned = 0;
	const char *pin_mode = argc == 3 ? argv[2] : "auto";
	if (argc > 3 || (strcmp(pin_mode, "auto") != 0 && strcmp(pin_mode, "pin") != 0 &&
			 strcmp(pin_mode, "nopin") != 0)) {
		fprintf(stderr, "usage: %s [OBJECTS [auto|pin|nopin]]\n", argv[0]);
		return 1;
	}
	if (strcmp(pin_mode, "pin") == 0)
		pinned = choose_cpus(2);
	else if (strcmp(pin_mode, "auto") == 0)
		pinned = choose_cpus(4);
	if (argc >= 2) {
		char *end;
		total_objects = strtoul(argv[1], &end, 10);
		if (argv[1][0] == '\0' || *end != '\0' || total_objects == 0) {
			fprintf(stderr, "xthread: bad object count '%s'\n", argv[1]);
			return 1;
		}
	}

	pthread_t prod, cons;
	if (pthread_create(&cons, NULL, consumer, NULL) != 0 ||
	    pthread_create(&prod, NULL, producer, NULL) != 0) {
		fprintf(stderr, "xthread: pthread_create failed\n");
		return 2;
	}
	uint64_t t0 = now_ns();
	uint64_t c0 = read_tsc();
	atomic_store_explicit(&ring.start, 1, memory_order_release);
	pthread_join(prod, NULL);
	pthread_join(cons, NULL);
	uint64_t c1 = read_tsc();
	uint64_t t1 = now_ns();

	if (bad_objects != 0) {
		fprintf(stderr, "xthread: %lu corrupted objects\n", bad_objects);
		return 3;
	}
	printf("RESULT name=xthread ns_per_obj=%.3f cycles_per_obj=%.2f objs=%lu total_ms=%.1f pinned=%d\n",
	       (double)(t1 - t0) / (double)total_objects,
	       (double)(c1 - c0) / (double)total_objects, total_objects, (double)(t1 - t0) / 1e6,
	       pinned);
	return 0;
}
