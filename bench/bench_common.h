/* Helpers shared by the benchmark programs: a monotonic clock, a fixed-seed PRNG, argument
 * parsing, fatal errors and the RESULT line conventions. Header-only (static functions) so
 * each program stays one translation unit; uses only the standard C library and POSIX. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Exit codes: 1 usage, 2 allocation or system failure, 3 corrupted object. */
enum { EXIT_USAGE = 1, EXIT_SYSTEM = 2, EXIT_CORRUPT = 3 };

static const char *bench_name = "bench";

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Time-stamp counter ticks (constant-rate reference cycles on modern x86). */
static inline uint64_t read_tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* xorshift64: a small fixed-seed generator; the state must not be 0. */
static inline uint64_t xorshift64(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/* splitmix64: full-period 64-bit generator; any seed (0 included) is fine. */
static inline uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi] (the slight modulo bias does not matter here). */
static inline uint64_t rng_range(uint64_t *state, uint64_t lo, uint64_t hi)
{
	return lo + rng_next(state) % (hi - lo + 1);
}

static inline noreturn void fatal(int code, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", bench_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static inline void *xmalloc_or_die(size_t size)
{
	void *p = malloc(size);
	if (p == NULL)
		fatal(EXIT_SYSTEM, "malloc(%zu) failed", size);
	return p;
}

/* Parses argv[i] as an unsigned integer in [lo, hi], or returns def when the argument is absent. */
static inline unsigned long arg_ulong(int argc, char **argv, int i, unsigned long def,
				      unsigned long lo, unsigned long hi)
{
	if (i >= argc)
		return def;
	char *end;
	unsigned long v = strtoul(argv[i], &end, 10);
	if (argv[i][0] == '\0' || argv[i][0] == '-' || *end != '\0' || v < lo || v > hi)
		fatal(EXIT_USAGE, "argument %d ('%s') must be an integer in [%lu, %lu]", i, argv[i], lo,
		      hi);
	return v;
}

/* Makes the compiler treat the memory as used, so stores and malloc/free pairs stay. */
static inline void escape(void *p)
{
	asm volatile("" : : "r"(p) : "memory");
}

/* Peak resident set size of this process so far, in KiB. */
static inline long peak_rss_kib(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return ru.ru_maxrss;
}

/* Current resident set size in KiB (from /proc/self/statm, 4 KiB pages on x86-64), or -1. */
static inline long current_rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages_total, pages_rss;
	if (f == NULL)
		return -1;
	int ok = fscanf(f, "%ld %ld", &pages_total, &pages_rss) == 2;
	fclose(f);
	return ok ? pages_rss * 4 : -1;
}

#endif
