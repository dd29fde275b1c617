/* bulk_common.h: what bench/bulk and bench/bulk_fallback share, so the fallback loop measured
 * under slubmalloc and under the peers (LD_PRELOAD) is the same code: the bulk sizes of the
 * kernel's slab_bulk_test01 (Brouer 2015), rdtsc and CLOCK_MONOTONIC, CPU pinning, the
 * fallback loop (allocate n objects with malloc, then free them with free) and its timing
 * (per object: one allocation plus one free), the median of several runs.
 * Built with -D_GNU_SOURCE (sched_setaffinity, dladdr). */
#ifndef BENCH_BULK_COMMON_H
#define BENCH_BULK_COMMON_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

#define BULK_MAX_N 256
#define BULK_NOINLINE __attribute__((noinline))
/* Placement. A timed loop of 4-12 cycles per object moves by up to 10% with where its code
 * sits against the 64-byte lines and 32-byte fetch windows, and not alike for every allocator
 * it calls (measured: the helper's loop 16 bytes further on turned slubmalloc's n=250 figure
 * against mimalloc's from -1% to +10%). So every timed loop is built BULK_PLACES times: each
 * copy starts on a line of its own (BULK_LOOP) and runs a sled of nops (BULK_SLED, once per
 * call, before the clock starts) that puts its loop 0, 16, 32 or 48 bytes into its line; the
 * figures are medians over all placements, and comparisons pair runs of the same placement. */
#define BULK_LOOP __attribute__((noinline, aligned(64)))
#define BULK_PLACES 4
#define BULK_STR(x) #x
#define BULK_SLED(bytes)                                                                        \
	__asm__ volatile(".if " BULK_STR(bytes) "\n.skip " BULK_STR(bytes) ", 0x90\n.endif")
/* name_0 .. name_48: body(args) placed 4 ways, and name[BULK_PLACES] pointing at them */
#define BULK_PLACED1(ret, name, shift, params, body, args)                                      \
	static BULK_LOOP ret name##_##shift params                                              \
	{                                                                                       \
		BULK_SLED(shift);                                                               \
		return body args;                                                               \
	}
#define BULK_PLACED(ret, name, params, body, args)                                              \
	BULK_PLACED1(ret, name, 0, params, body, args)                                          \
	BULK_PLACED1(ret, name, 16, params, body, args)                                         \
	BULK_PLACED1(ret, name, 32, params, body, args)                                         \
	BULK_PLACED1(ret, name, 48, params, body, args)                                         \
	static ret (*const name[BULK_PLACES]) params = {name##_0, name##_16, name##_32, name##_48};

static const size_t bulk_ns_list[] = {1, 2, 3, 4, 8, 16, 30, 32, 34, 48, 64, 128, 158, 250};
#define BULK_NN (sizeof bulk_ns_list / sizeof bulk_ns_list[0])

/* Pins the process to the last CPU it may run on (children inherit it); returns it or -1. */
static inline int pin_last_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return -1;
	int cpu = -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpu = c;
	if (cpu < 0)
		return -1;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set) == 0 ? cpu : -1;
}

struct cost {
	double cycles, ns; /* per object: one allocation and one free */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static inline double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Rounds so that one timed run handles about `objects` objects. */
static inline size_t bulk_loops(size_t objects, size_t n)
{
	size_t l = objects / n;
	return l ? l : 1;
}

static BULK_NOINLINE void bulk_die(const char *what, size_t size)
{
	fprintf(stderr, "bench/bulk: %s(%zu) failed\n", what, size);
	exit(2);
}

/* The fallback: n objects with malloc, then the same n freed with free. */
static inline __attribute__((always_inline)) struct cost fallback_body(size_t size, size_t n,
								       size_t loops)
{
	void *p[BULK_MAX_N];
	uint64_t t0 = now_ns(), c0 = read_tsc();
	for (size_t l = 0; l < loops; l++) {
		for (size_t i = 0; i < n; i++)
			if (!(p[i] = malloc(size)))
				bulk_die("malloc", size);
		escape(p);
		for (size_t i = 0; i < n; i++)
			free(p[i]);
	}
	uint64_t c1 = read_tsc(), t1 = now_ns();
	double k = (double)loops * (double)n;
	return (struct cost){(double)(c1 - c0) / k, (double)(t1 - t0) / k};
}
BULK_PLACED(struct cost, fallback_at, (size_t size, size_t n, size_t loops), fallback_body,
	    (size, n, loops))

/* Median over reps runs of the fallback, placed `place` (0..BULK_PLACES-1), for every bulk size,
 * after a warm-up run each. */
static inline void fallback_all(size_t size, size_t objects, unsigned reps, unsigned place,
				struct cost *out)
{
	double cyc[64], ns[64];
	if (reps > 64)
		reps = 64;
	struct cost (*run)(size_t, size_t, size_t) = fallback_at[place % BULK_PLACES];
	for (size_t j = 0; j < BULK_NN; j++) {
		size_t n = bulk_ns_list[j], loops = bulk_loops(objects, n);
		run(size, n, loops / 8 + 1);
		for (unsigned r = 0; r < reps; r++) {
			struct cost c = run(size, n, loops);
			cyc[r] = c.cycles;
			ns[r] = c.ns;
		}
		out[j] = (struct cost){median(cyc, reps), median(ns, reps)};
	}
}

#endif
