/* rss: resident memory over time through a grow / free-90% / idle cycle of small objects.
 * The program allocates objects of a realistic small-size mix (55% 16..128 B, 25% 129..512,
 * 15% 513..1024, 5% 1025..8192) until MIB MiB have been requested, writes every byte of each,
 * keeps them in an array, frees 90% of them in a random order (fixed seed), then sleeps IDLE_S
 * seconds without touching the allocator. A sampler thread records the RSS (the second field of
 * /proc/self/statm, read with pread(2) into a stack buffer, parsed by hand) every PERIOD_MS ms
 * from the start, into a static array; the main thread adds one marker sample at each phase
 * change (grow_start, grow_end, free_start, free_end, idle_end). Neither thread calls anything
 * allocator-specific: the program runs unchanged under LD_PRELOAD of any malloc. The bookkeeping
 * arrays (pointers, sizes, free order) are mmap'd, not malloc'd, so they weigh the same under
 * every allocator; the sampler never allocates.
 * Validation: every object carries its index in its first 8 bytes and a check byte at its end,
 * checked before it is freed (exit 3 on a mismatch).
 * Usage: rss CSV_FILE [MIB [IDLE_S [PERIOD_MS]]]   (defaults 1024 MiB, 3 s, 25 ms)
 * Writes CSV_FILE: `t_ms,rss_kib,phase` (phase = start/grow/free/idle for periodic samples, the
 * marker name for marker samples), and prints
 * RESULT name=rss peak_kib=... final_kib=... after_free_kib=... live_mib=... (and more keys:
 * base_kib, grow_end_kib, objects, grow_ms, free_ms, samples). peak_kib is the larger of the
 * sampled maximum and getrusage's ru_maxrss (the true high-water mark); final_kib is the RSS at
 * the end of the idle phase; after_free_kib the RSS right after the last free. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#define DEFAULT_MIB 1024
#define DEFAULT_IDLE_S 3
#define DEFAULT_PERIOD_MS 25
#define SAMPLES_MAX 65536 /* 27 minutes at 25 ms; sampling stops (and says so) when full */
#define MIN_OBJ 16
#define MAX_OBJ 8192
#define SEED 0x5eed5eedULL

enum phase { PH_START, PH_GROW, PH_FREE, PH_IDLE, PH_END, NPHASE };
static const char *const phase_name[NPHASE] = {"start", "grow", "free", "idle", "end"};

enum marker { MK_NONE, MK_GROW_START, MK_GROW_END, MK_FREE_START, MK_FREE_END, MK_IDLE_END, NMARK };
static const char *const marker_name[NMARK] = {"", "grow_start", "grow_end", "free_start",
					       "free_end", "idle_end"};

struct sample {
	uint64_t t_ns;   /* since the start of main */
	int64_t rss_kib; /* -1: statm could not be read */
	uint8_t phase;   /* enum phase at the time of the sample */
	uint8_t marker;  /* enum marker, MK_NONE for a periodic sample */
};

static struct sample samples[SAMPLES_MAX];
static atomic_uint nsamples;     /* slots taken (may exceed SAMPLES_MAX: those are dropped) */
static atomic_int cur_phase;     /* enum phase */
static atomic_int stop_sampler;  /* set by main at the end */
static uint64_t t0_ns;
static int statm_fd = -1;
static long page_kib;
static uint64_t period_ns;

/* RSS in KiB from /proc/self/statm ("size resident shared ..."), or -1. No allocation. */
static int64_t read_rss_kib(void)
{
	char buf[256];
	ssize_t n = pread(statm_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *s = buf;
	while (*s >= '0' && *s <= '9') /* skip the first field (size) */
		s++;
	if (*s != ' ')
		return -1;
	s++;
	if (*s < '0' || *s > '9')
		return -1;
	int64_t pages = 0;
	while (*s >= '0' && *s <= '9')
		pages = pages * 10 + (*s++ - '0');
	return pages * page_kib;
}

/* Takes one sample now; returns its RSS. Thread-safe (a slot per call). */
static int64_t take_sample(enum marker mk)
{
	int64_t rss = read_rss_kib();
	unsigned i = atomic_fetch_add_explicit(&nsamples, 1, memory_order_relaxed);
	if (i < SAMPLES_MAX) {
		samples[i].t_ns = now_ns() - t0_ns;
		samples[i].rss_kib = rss;
		samples[i].phase = (uint8_t)atomic_load_explicit(&cur_phase, memory_order_relaxed);
		samples[i].marker = (uint8_t)mk;
	}
	return rss;
}

static void *sampler(void *arg)
{
	(void)arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!atomic_load_explicit(&stop_sampler, memory_order_acquire)) {
		take_sample(MK_NONE);
		uint64_t ns = (uint64_t)next.tv_nsec + period_ns;
		next.tv_sec += (time_t)(ns / 1000000000ULL);
		next.tv_nsec = (long)(ns % 1000000000ULL);
		/* late (the machine is busy): skip the missed ticks rather than burst */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return NULL;
}

/* Marks a phase change: a marker sample, then the new phase for the periodic samples. */
static int64_t mark(enum marker mk, enum phase next)
{
	int64_t rss = take_sample(mk);
	atomic_store_explicit(&cur_phase, (int)next, memory_order_relaxed);
	return rss;
}

static void *map_array(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (p == MAP_FAILED)
		fatal(EXIT_SYSTEM, "mmap(%zu) failed", bytes);
	return p;
}

/* The size mix: mostly small, a tail up to 8 KiB. */
static size_t pick_size(uint64_t *rng)
{
	uint64_t r = rng_next(rng) % 100;
	if (r < 55)
		return (size_t)rng_range(rng, 16, 128);
	if (r < 80)
		return (size_t)rng_range(rng, 129, 512);
	if (r < 95)
		return (size_t)rng_range(rng, 513, 1024);
	return (size_t)rng_range(rng, 1025, MAX_OBJ);
}

static inline unsigned char check_byte(uint64_t i)
{
	return (unsigned char)(0xa5 ^ i ^ (i >> 8));
}

static void check_object(const unsigned char *p, size_t size, uint64_t i)
{
	uint64_t tag;
	memcpy(&tag, p, sizeof tag);
	if (tag != i || p[size - 1] != check_byte(i))
		fatal(EXIT_CORRUPT, "object %llu (%zu bytes at %p) was overwritten", (unsigned long long)i,
		      size, (const void *)p);
}

/* Sorts the samples by time (insertion sort: they are nearly sorted already). */
static void sort_samples(unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		struct sample s = samples[i];
		unsigned j = i;
		while (j > 0 && samples[j - 1].t_ns > s.t_ns) {
			samples[j] = samples[j - 1];
			j--;
		}
		samples[j] = s;
	}
}

int main(int argc, char **argv)
{
	bench_name = "rss";
	if (argc < 2 || argc > 5 || argv[1][0] == '-')
		fatal(EXIT_USAGE, "usage: rss CSV_FILE [MIB [IDLE_S [PERIOD_MS]]] (defaults %d MiB, %d s, %d ms)",
		      DEFAULT_MIB, DEFAULT_IDLE_S, DEFAULT_PERIOD_MS);
	const char *csv_path = argv[1];
	unsigned long mib = arg_ulong(argc, argv, 2, DEFAULT_MIB, 1, 1UL << 20);
	unsigned long idle_s = arg_ulong(argc, argv, 3, DEFAULT_IDLE_S, 0, 3600);
	unsigned long period_ms = arg_ulong(argc, argv, 4, DEFAULT_PERIOD_MS, 1, 10000);

	t0_ns = now_ns();
	period_ns = period_ms * 1000000ULL;
	page_kib = sysconf(_SC_PAGESIZE) / 1024;
	statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (statm_fd < 0 || read_rss_kib() < 0)
		fatal(EXIT_SYSTEM, "cannot read /proc/self/statm: %s", strerror(errno));

	/* the plan, made before the sampler starts: every object's size (until the target is
	 * requested) and the free order (a Fisher-Yates shuffle; the first 90% are freed) */
	uint64_t target = (uint64_t)mib << 20;
	size_t max_objs = (size_t)(target / MIN_OBJ) + 1;
	unsigned char **objs = map_array(max_objs * sizeof *objs);
	uint16_t *sizes = map_array(max_objs * sizeof *sizes);
	uint64_t rng = SEED;
	uint64_t requested = 0;
	size_t n = 0;
	while (requested < target) {
		size_t size = pick_size(&rng);
		sizes[n++] = (uint16_t)size;
		requested += size;
	}
	if (n > UINT32_MAX)
		fatal(EXIT_USAGE, "too many objects (%zu); use a smaller MIB", n);
	uint32_t *order = map_array(n * sizeof *order);
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)rng_range(&rng, 0, i);
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	size_t nfree = n - n / 10;

	pthread_t tid;
	int err = pthread_create(&tid, NULL, sampler, NULL);
	if (err)
		fatal(EXIT_SYSTEM, "pthread_create: %s", strerror(err));
	struct timespec base_wait = {.tv_sec = (time_t)(2 * period_ms / 1000),
				     .tv_nsec = (long)(2 * period_ms % 1000) * 1000000L};
	while (nanosleep(&base_wait, &base_wait) == -1 && errno == EINTR) /* a baseline first */
		;

	int64_t base_kib = mark(MK_GROW_START, PH_GROW);
	uint64_t t_grow = now_ns();
	for (size_t i = 0; i < n; i++) {
		size_t size = sizes[i];
		unsigned char *p = malloc(size);
		if (p == NULL)
			fatal(EXIT_SYSTEM, "malloc(%zu) failed after %zu objects", size, i);
		memset(p, (int)(i & 0xff), size); /* a program writes what it allocates */
		uint64_t tag = i;
		memcpy(p, &tag, sizeof tag);
		p[size - 1] = check_byte(i);
		objs[i] = p;
	}
	uint64_t grow_ms = (now_ns() - t_grow) / 1000000;
	int64_t grow_end_kib = mark(MK_GROW_END, PH_FREE);

	mark(MK_FREE_START, PH_FREE);
	uint64_t t_free = now_ns();
	for (size_t k = 0; k < nfree; k++) {
		size_t i = order[k];
		check_object(objs[i], sizes[i], i);
		free(objs[i]);
		objs[i] = NULL;
	}
	uint64_t free_ms = (now_ns() - t_free) / 1000000;
	int64_t after_free_kib = mark(MK_FREE_END, PH_IDLE);

	uint64_t live = 0;
	for (size_t k = nfree; k < n; k++)
		live += sizes[order[k]];

	struct timespec idle = {.tv_sec = (time_t)idle_s, .tv_nsec = 0};
	while (nanosleep(&idle, &idle) == -1 && errno == EINTR)
		;
	int64_t final_kib = mark(MK_IDLE_END, PH_END);
	atomic_store_explicit(&stop_sampler, 1, memory_order_release);
	pthread_join(tid, NULL);

	unsigned ns = atomic_load(&nsamples);
	if (ns > SAMPLES_MAX) {
		fprintf(stderr, "rss: %u samples did not fit (kept the first %d)\n", ns - SAMPLES_MAX,
			SAMPLES_MAX);
		ns = SAMPLES_MAX;
	}
	sort_samples(ns);
	int64_t peak_kib = peak_rss_kib();
	for (unsigned i = 0; i < ns; i++)
		if (samples[i].rss_kib > peak_kib)
			peak_kib = samples[i].rss_kib;

	/* after the measurement: the survivors must be intact too */
	for (size_t k = nfree; k < n; k++) {
		size_t i = order[k];
		check_object(objs[i], sizes[i], i);
		free(objs[i]);
	}

	FILE *f = fopen(csv_path, "w");
	if (f == NULL)
		fatal(EXIT_SYSTEM, "cannot write %s: %s", csv_path, strerror(errno));
	fprintf(f, "t_ms,rss_kib,phase\n");
	for (unsigned i = 0; i < ns; i++) {
		const struct sample *s = &samples[i];
		fprintf(f, "%.1f,%lld,%s\n", (double)s->t_ns / 1e6, (long long)s->rss_kib,
			s->marker != MK_NONE ? marker_name[s->marker] : phase_name[s->phase]);
	}
	if (fclose(f) != 0)
		fatal(EXIT_SYSTEM, "writing %s failed", csv_path);

	printf("RESULT name=rss peak_kib=%lld final_kib=%lld after_free_kib=%lld live_mib=%.1f "
	       "base_kib=%lld grow_end_kib=%lld objects=%zu freed=%zu grow_ms=%llu free_ms=%llu "
	       "samples=%u\n",
	       (long long)peak_kib, (long long)final_kib, (long long)after_free_kib,
	       (double)live / (1 << 20), (long long)base_kib, (long long)grow_end_kib, n, nfree,
	       (unsigned long long)grow_ms, (unsigned long long)free_ms, ns);
	return 0;
}
