/* Single-thread small-object benchmark: (a) a tight malloc/free loop over a fixed
 * cycle of small sizes, (b) churn of a working set of random-sized objects, (c) bursts:
 * thousands of mallocs, then their frees, more than a thread cache holds, (d) scatter: a
 * large heap freed in random order, then built again (a tree or a hash table torn down).
 * Uses only the standard malloc API; run it under LD_PRELOAD of each allocator.
 * Usage: st_churn loop|churn|burst|scatter|all [ITERATIONS]   (all: loop and churn)
 * Prints one line per workload: RESULT name=... ns_per_op=... cycles_per_op=... */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

#define LOOP_DEFAULT_ITERS 60000000UL
#define CHURN_DEFAULT_ITERS 40000000UL
#define CHURN_SLOTS 1000
#define CHURN_MIN_SIZE 16
#define CHURN_MAX_SIZE 1024
#define BURST_DEFAULT_ITERS 40000000UL
#define BURST_OBJECTS 4096
#define BURST_SIZE 48
#define SCATTER_DEFAULT_ITERS 8000000UL
#define SCATTER_OBJECTS 200000
#define SCATTER_SIZE 48

/* Fixed size sequence of the tight loop (16..256 B), cycled in order. */
static const size_t loop_sizes[16] = {
	16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 24, 40, 56, 72,
};

static void die_oom(size_t size)
{
	fprintf(stderr, "st_churn: malloc(%zu) failed\n", size);
	exit(2);
}

/* extra: more key=value fields for the RESULT line ("" for none). */
static void report_with(const char *name, unsigned long iters, uint64_t ns, uint64_t ticks,
			const char *extra)
{
	printf("RESULT name=%s ns_per_op=%.3f cycles_per_op=%.2f iters=%lu total_ms=%.1f%s\n",
	       name, (double)ns / (double)iters, (double)ticks / (double)iters, iters,
	       (double)ns / 1e6, extra);
	fflush(stdout);
}

static void report(const char *name, unsigned long iters, uint64_t ns, uint64_t ticks)
{
	report_with(name, iters, ns, ticks, "");
}

/* (a) One op = one malloc plus one free of the next size in loop_sizes. */
static void run_loop(unsigned long iters)
{
	unsigned long warm = iters / 20 + 1;
	for (unsigned long i = 0; i < warm; i++) {
		size_t size = loop_sizes[i & 15];
		unsigned char *p = malloc(size);
		if (p == NULL)
			die_oom(size);
		p[0] = (unsigned char)i;
		escape(p);
		free(p);
	}

	uint64_t t0 = now_ns();
	uint64_t c0 = read_tsc();
	for (unsigned long i = 0; i < iters; i++) {
		size_t size = loop_sizes[i & 15];
		unsigned char *p = malloc(size);
		if (p == NULL)
			die_oom(size);
		p[0] = (unsigned char)i;
		escape(p);
		free(p);
	}
	uint64_t c1 = read_tsc();
	uint64_t t1 = now_ns();
	report("st_loop", iters, t1 - t0, c1 - c0);
}

/* Writes a tag at both ends of the object so that churn can verify it on free. */
static inline void tag_object(unsigned char *p, size_t size, unsigned tag)
{
	p[0] = (unsigned char)tag;
	p[size - 1] = (unsigned char)(tag ^ 0x5a);
}

static inline int tag_ok(const unsigned char *p, size_t size, unsigned tag)
{
	return p[0] == (unsigned char)tag && p[size - 1] == (unsigned char)(tag ^ 0x5a);
}

/* (b) One op = free a random slot of the working set and refill it with a random size. */
static void run_churn(unsigned long iters)
{
	static unsigned char *slot_ptr[CHURN_SLOTS];
	static size_t slot_size[CHURN_SLOTS];
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	unsigned long bad = 0;

	for (unsigned i = 0; i < CHURN_SLOTS; i++) {
		size_t size = CHURN_MIN_SIZE + xorshift64(&rng) % (CHURN_MAX_SIZE - CHURN_MIN_SIZE + 1);
		unsigned char *p = malloc(size);
		if (p == NULL)
			die_oom(size);
		tag_object(p, size, i);
		slot_ptr[i] = p;
		slot_size[i] = size;
	}

	uint64_t t0 = now_ns();
	uint64_t c0 = read_tsc();
	for (unsigned long i = 0; i < iters; i++) {
		uint64_t r = xorshift64(&rng);
		unsigned idx = (unsigned)(r % CHURN_SLOTS);
		size_t size = CHURN_MIN_SIZE + (size_t)((r >> 20) % (CHURN_MAX_SIZE - CHURN_MIN_SIZE + 1));
		if (!tag_ok(slot_ptr[idx], slot_size[idx], idx))
			bad++;
		free(slot_ptr[idx]);
		unsigned char *p = malloc(size);
		if (p == NULL)
			die_oom(size);
		tag_object(p, size, idx);
		slot_ptr[idx] = p;
		slot_size[idx] = size;
	}
	uint64_t c1 = read_tsc();
	uint64_t t1 = now_ns();

	for (unsigned i = 0; i < CHURN_SLOTS; i++) {
		if (!tag_ok(slot_ptr[i], slot_size[i], i))
			bad++;
		free(slot_ptr[i]);
	}
	if (bad != 0) {
		fprintf(stderr, "st_churn: %lu corrupted objects\n", bad);
		exit(3);
	}
	report("st_churn", iters, t1 - t0, c1 - c0);
}

/* (c) One op = one malloc plus one free of a BURST_SIZE object, in bursts: BURST_OBJECTS
 * mallocs (each object tagged), then their frees in the same order. A burst is larger than a
 * thread cache, so its objects go back to their slabs and come out of them again. */
static void run_burst(unsigned long iters)
{
	static unsigned char *obj[BURST_OBJECTS];
	unsigned long rounds = iters / BURST_OBJECTS ? iters / BURST_OBJECTS : 1, bad = 0;
	uint64_t t0 = 0, c0 = 0;
	for (unsigned long r = 0; r <= rounds; r++) { /* round 0 warms up */
		if (r == 1) {
			t0 = now_ns();
			c0 = read_tsc();
		}
		for (unsigned i = 0; i < BURST_OBJECTS; i++) {
			if (!(obj[i] = malloc(BURST_SIZE)))
				die_oom(BURST_SIZE);
			tag_object(obj[i], BURST_SIZE, i);
		}
		for (unsigned i = 0; i < BURST_OBJECTS; i++) {
			bad += !tag_ok(obj[i], BURST_SIZE, i);
			free(obj[i]);
		}
	}
	uint64_t c1 = read_tsc();
	uint64_t t1 = now_ns();
	if (bad != 0) {
		fprintf(stderr, "st_churn: %lu corrupted objects\n", bad);
		exit(3);
	}
	report("st_burst", rounds * BURST_OBJECTS, t1 - t0, c1 - c0);
}

/* (d) One op = one malloc plus one free of a SCATTER_SIZE object: SCATTER_OBJECTS live objects
 * (about 10 MB), each round frees all of them in one random order (the same every round, from
 * a fixed seed), then allocates them again, each tagged. Their frees land in every slab of the
 * heap at once. The RESULT line adds each phase's TSC cycles an object: free_cycles (the
 * frees, each after a read of its object) and malloc_cycles (the mallocs and their tags). */
static void run_scatter(unsigned long iters)
{
	static unsigned char *obj[SCATTER_OBJECTS];
	static uint32_t order[SCATTER_OBJECTS];
	unsigned long rounds = iters / SCATTER_OBJECTS ? iters / SCATTER_OBJECTS : 1, bad = 0;
	uint64_t x = 88172645463325252ull, t0 = 0, c0 = 0, free_ticks = 0, malloc_ticks = 0;
	for (uint32_t i = 0; i < SCATTER_OBJECTS; i++)
		order[i] = i;
	for (uint32_t i = SCATTER_OBJECTS - 1; i > 0; i--) { /* Fisher-Yates, xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t j = (uint32_t)(x % (i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (uint32_t i = 0; i < SCATTER_OBJECTS; i++) {
		if (!(obj[i] = malloc(SCATTER_SIZE)))
			die_oom(SCATTER_SIZE);
		tag_object(obj[i], SCATTER_SIZE, i);
	}
	for (unsigned long r = 0; r <= rounds; r++) { /* round 0 warms up */
		if (r == 1) {
			t0 = now_ns();
			c0 = read_tsc();
		}
		uint64_t f0 = read_tsc();
		for (uint32_t i = 0; i < SCATTER_OBJECTS; i++) {
			bad += !tag_ok(obj[order[i]], SCATTER_SIZE, order[i]);
			free(obj[order[i]]);
		}
		uint64_t f1 = read_tsc();
		for (uint32_t i = 0; i < SCATTER_OBJECTS; i++) {
			if (!(obj[i] = malloc(SCATTER_SIZE)))
				die_oom(SCATTER_SIZE);
			tag_object(obj[i], SCATTER_SIZE, i);
		}
		if (r) {
			free_ticks += f1 - f0;
			malloc_ticks += read_tsc() - f1;
		}
	}
	uint64_t c1 = read_tsc();
	uint64_t t1 = now_ns();
	for (uint32_t i = 0; i < SCATTER_OBJECTS; i++)
		free(obj[i]);
	if (bad != 0) {
		fprintf(stderr, "st_churn: %lu corrupted objects\n", bad);
		exit(3);
	}
	char extra[80];
	snprintf(extra, sizeof extra, " free_cycles=%.2f malloc_cycles=%.2f",
		 (double)free_ticks / (double)(rounds * SCATTER_OBJECTS),
		 (double)malloc_ticks / (double)(rounds * SCATTER_OBJECTS));
	report_with("st_scatter", rounds * SCATTER_OBJECTS, t1 - t0, c1 - c0, extra);
}

static unsigned long parse_iters(const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || v == 0) {
		fprintf(stderr, "st_churn: bad iteration count '%s'\n", arg);
		exit(1);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s loop|churn|burst|scatter|all [ITERATIONS]\n", argv[0]);
		return 1;
	}
	const char *mode = argv[1];
	int do_loop = strcmp(mode, "loop") == 0 || strcmp(mode, "all") == 0;
	int do_churn = strcmp(mode, "churn") == 0 || strcmp(mode, "all") == 0;
	int do_burst = strcmp(mode, "burst") == 0;
	int do_scatter = strcmp(mode, "scatter") == 0;
	if (!do_loop && !do_churn && !do_burst && !do_scatter) {
		fprintf(stderr, "st_churn: unknown mode '%s' (loop, churn, burst, scatter or all)\n",
			mode);
		return 1;
	}
	unsigned long iters = argc == 3 ? parse_iters(argv[2]) : 0;
	if (do_loop)
		run_loop(iters ? iters : LOOP_DEFAULT_ITERS);
	if (do_churn)
		run_churn(iters ? iters : CHURN_DEFAULT_ITERS);
	if (do_burst)
		run_burst(iters ? iters : BURST_DEFAULT_ITERS);
	if (do_scatter)
		run_scatter(iters ? iters : SCATTER_DEFAULT_ITERS);
	return 0;
}
