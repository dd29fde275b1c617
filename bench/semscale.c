/* semscale: the ipc/sem.c cache-line seed's benchmark (Manfred Spraul's semscale), in user
 * space. Each thread operates on its own small object, as each semop did on its own semaphore:
 * take the object's spinlock (an atomic exchange), change its value and its last pid, release.
 * Objects that share a cache line make the threads pass that line back and forth (false
 * sharing); the seed gave each semaphore a line of its own (____cacheline_aligned_in_smp).
 * The objects are 32 bytes (a lock, a value, a pid, a list head: struct sem's fields), taken
 * one of five ways (MODE):
 *   array         one packed array: two objects to a 64-byte line (the seed's "before")
 *   malloc        malloc'd one by one by the main thread, under whatever allocator is preloaded
 *   malloc-own    malloc'd by each thread for itself
 *   cache         slub_cache_create("sem", 32, 0, 0): packed in a typed cache's slabs
 *   cache-hwalign the same with SLUB_HWCACHE_ALIGN, whose rule is the kernel's: a line, halved
 *                 while the object fits in half, so 32-byte objects still share lines
 *   cache-align   slub_cache_create("sem", 32, 64, 0): a line each, as the seed's
 *                 ____cacheline_aligned_in_smp gives (its "after")
 * The cache modes need libslubmalloc (preloaded, or linked): found with dlsym.
 * Threads are pinned the seed's way, "interleave 2": thread i on CPU (2i) mod n, then the odd
 * ones, so the full cores come first.
 * Run one thread count per process (semscale.sh does) to compare layouts: a later run's
 * objects follow the earlier runs' in memory, so which of them share a line shifts.
 * Usage: semscale [-s SECS] [-t THREADS,...] MODE. Prints, per thread count, the seed's line
 *   Cpus N, interleave 2 delay 0: OPS in SECS secs
 * and a RESULT line. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXT 64

struct sem {
	atomic_int lock;
	int semval;
	int sempid;
	int pad;
	void *pending[2]; /* struct list_head sem_pending */
};

static struct sem *obj[MAXT];
static struct sem packed[MAXT] __attribute__((aligned(64)));
static atomic_int go, stop;
static unsigned long ops[MAXT];
static const char *mode;
static int ncpu;

static void *(*cache_alloc)(void *);
static void *cache;

static void pin(int i)
{
	int half = (ncpu + 1) / 2, cpu = i % ncpu;
	cpu = cpu < half ? 2 * cpu : 2 * (cpu - half) + 1; /* interleave 2: even CPUs first */
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu % ncpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *worker(void *arg)
{
	int i = (int)(intptr_t)arg;
	pin(i);
	if (!strcmp(mode, "malloc-own")) {
		obj[i] = malloc(sizeof(struct sem));
		memset(obj[i], 0, sizeof(struct sem));
	}
	struct sem *s = obj[i];
	int pid = (int)getpid();
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	unsigned long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int k = 0; k < 64; k++) {
			while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
				;
			s->semval++;
			s->sempid = pid;
			atomic_store_explicit(&s->lock, 0, memory_order_release);
		}
		n += 64;
	}
	ops[i] = n;
	return NULL;
}

/* One run with t threads: operations in secs seconds. */
static unsigned long run(int t, double secs)
{
	atomic_store(&go, 0);
	atomic_store(&stop, 0);
	for (int i = 0; i < t; i++) {
		if (!strcmp(mode, "array")) {
			obj[i] = &packed[i];
		} else if (!strcmp(mode, "malloc")) {
			obj[i] = malloc(sizeof(struct sem));
		} else if (!strncmp(mode, "cache", 5)) {
			obj[i] = cache_alloc(cache);
		}
		if (obj[i] && strcmp(mode, "malloc-own"))
			memset(obj[i], 0, sizeof(struct sem));
	}
	pthread_t th[MAXT];
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	usleep(20000);
	atomic_store_explicit(&go, 1, memory_order_release);
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	unsigned long total = 0;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		total += ops[i];
	}
	return total; /* (the objects are left allocated: each run gets fresh ones, as a new array) */
}

int main(int argc, char **argv)
{
	double secs = 10;
	char tlist[256] = "";
	int opt;
	while ((opt = getopt(argc, argv, "s:t:")) != -1) {
		if (opt == 's')
			secs = atof(optarg);
		else if (opt == 't')
			snprintf(tlist, sizeof tlist, "%s", optarg);
		else
			goto usage;
	}
	if (optind != argc - 1)
		goto usage;
	mode = argv[optind];
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (!strncmp(mode, "cache", 5)) {
		void *(*create)(const char *, size_t, size_t, unsigned, void (*)(void *)) =
			(void *(*)(const char *, size_t, size_t, unsigned, void (*)(void *)))dlsym(
				RTLD_DEFAULT, "slub_cache_create");
		cache_alloc = (void *(*)(void *))dlsym(RTLD_DEFAULT, "slub_cache_alloc");
		if (!create || !cache_alloc) {
			fprintf(stderr, "semscale: %s needs libslubmalloc (LD_PRELOAD)\n", mode);
			return 2;
		}
		cache = create("sem", sizeof(struct sem), !strcmp(mode, "cache-align") ? 64 : 0,
			       !strcmp(mode, "cache-hwalign") ? 1u : 0u, NULL); /* 1: SLUB_HWCACHE_ALIGN */
		if (strcmp(mode, "cache") && strcmp(mode, "cache-hwalign") && strcmp(mode, "cache-align"))
			goto usage;
	} else if (strcmp(mode, "array") && strcmp(mode, "malloc") && strcmp(mode, "malloc-own")) {
		goto usage;
	}
	if (!*tlist) { /* 1 to the CPUs */
		int k = 0;
		for (int t = 1; t <= ncpu && t <= MAXT; t++)
			k += snprintf(tlist + k, sizeof tlist - (size_t)k, "%s%d", t > 1 ? "," : "", t);
	}
	for (char *p = tlist; *p;) {
		int t = atoi(p);
		if (t < 1 || t > MAXT)
			goto usage;
		unsigned long n = run(t, secs);
		printf("Cpus %d, interleave 2 delay 0: %lu in %g secs\n", t, n, secs);
		printf("RESULT name=semscale mode=%s threads=%d ops=%lu secs=%g\n", mode, t, n, secs);
		fflush(stdout);
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return 0;
usage:
	fprintf(stderr, "usage: semscale [-s SECS] [-t THREADS,...] "
			"array|malloc|malloc-own|cache|cache-hwalign|cache-align\n");
	return 1;
}
