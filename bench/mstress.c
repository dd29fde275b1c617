/* mstress: thread churn with objects that outlive their threads, and realloc growth (the family
 * of mimalloc-bench's mstress). ROUNDS times, THREADS threads are started and joined; each
 * thread first frees the objects a thread of the previous round left behind, then does
 * ITERATIONS random steps on a local array of objects (itself grown with realloc):
 * allocate (mostly 16..256 bytes, some up to 8 KiB, a few up to 256 KiB), free a random one,
 * grow a random one with realloc, or swap one with a shared transfer table (so objects move
 * between threads and rounds). At exit a thread frees half of its objects and leaves the rest
 * to the next round. Fixed work; measures the time (lower is better; compare.sh times the
 * whole process).
 * Validation: every object carries its size at the start and a marker at the end, checked
 * against the size its owner recorded before free, before handing it on and after realloc
 * (which must keep the old contents); exit 3 on a mismatch.
 * Usage: mstress [THREADS [ROUNDS [ITERATIONS]]]
 * Prints: RESULT name=mstress ms=... threads=... rounds=... reallocs=... */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define DEFAULT_THREADS 4
#define DEFAULT_ROUNDS 50
#define DEFAULT_ITERATIONS 100000
#define TRANSFER_SLOTS 1024
#define MAX_GROW 65536
#define ITEM_MAGIC 0x6d737472657373ULL

/* Objects with the size each was allocated with (kept apart from the object, so an object
 * that another allocation overwrote cannot pass for a valid one). */
typedef struct item_list {
	unsigned char **item;
	size_t *size;
	size_t count, cap;
} item_list;

struct job {
	pthread_t tid;
	unsigned round, id;
};

static atomic_uintptr_t transfer[TRANSFER_SLOTS]; /* unsigned char * */
static pthread_mutex_t leftover_lock = PTHREAD_MUTEX_INITIALIZER;
static item_list *leftovers; /* one list per thread slot, left by the previous round */
static unsigned threads;
static unsigned long iterations;
static atomic_ulong bad_items, realloc_count;

static inline void item_tag(unsigned char *p, size_t size)
{
	uint64_t h = ITEM_MAGIC ^ size;
	memcpy(p, &h, sizeof(h));
	p[size - 1] = (unsigned char)(0x3c ^ size);
}

static inline size_t item_size(const unsigned char *p)
{
	uint64_t h;
	memcpy(&h, p, sizeof(h));
	return (size_t)(h ^ ITEM_MAGIC);
}

/* Returns 1 if the item is intact and has the expected size (0: take it from the header, for
 * objects that come through the transfer table); counts a corrupted one. */
static int item_check(const unsigned char *p, size_t expected)
{
	size_t size = item_size(p);
	if (size < 16 || size > 4 * 1024 * 1024 || (expected != 0 && size != expected) ||
	    p[size - 1] != (unsigned char)(0x3c ^ size)) {
		atomic_fetch_add(&bad_items, 1);
		return 0;
	}
	return 1;
}

static void item_free(unsigned char *p, size_t expected)
{
	if (p != NULL) {
		item_check(p, expected);
		free(p);
	}
}

static unsigned char *item_new(uint64_t *rng, size_t *size_out)
{
	uint64_t r = rng_next(rng);
	size_t size;
	if (r % 1000 == 0)
		size = 8193 + (size_t)((r >> 16) % (256 * 1024 - 8192));
	else if (r % 50 == 1)
		size = 257 + (size_t)((r >> 16) % (8192 - 256));
	else
		size = 16 + (size_t)((r >> 16) % 241);
	unsigned char *p = xmalloc_or_die(size);
	item_tag(p, size);
	*size_out = size;
	return p;
}

static void list_push(item_list *l, unsigned char *p, size_t size)
{
	if (l->count == l->cap) { /* realloc growth of the arrays */
		size_t cap = l->cap ? l->cap * 2 : 16;
		unsigned char **grown = realloc(l->item, cap * sizeof(*grown));
		if (grown == NULL)
			fatal(EXIT_SYSTEM, "realloc(%zu) failed", cap * sizeof(*grown));
		l->item = grown;
		size_t *grown_size = realloc(l->size, cap * sizeof(*grown_size));
		if (grown_size == NULL)
			fatal(EXIT_SYSTEM, "realloc(%zu) failed", cap * sizeof(*grown_size));
		l->size = grown_size;
		l->cap = cap;
	}
	l->item[l->count] = p;
	l->size[l->count++] = size;
}

static unsigned char *list_take(item_list *l, size_t idx, size_t *size_out)
{
	unsigned char *p = l->item[idx];
	*size_out = l->size[idx];
	l->count--;
	l->item[idx] = l->item[l->count];
	l->size[idx] = l->size[l->count];
	return p;
}

static void list_free(item_list *l)
{
	for (size_t i = 0; i < l->count; i++)
		item_free(l->item[i], l->size[i]);
	free(l->item);
	free(l->size);
	*l = (item_list){ NULL, NULL, 0, 0 };
}

static void *thread_main(void *arg)
{
	struct job *job = arg;
	uint64_t rng = ((uint64_t)job->round << 32) ^ (0x3e55ULL + job->id);
	item_list local = { NULL, NULL, 0, 0 };
	unsigned long reallocs = 0;
	size_t size;

	/* free what a thread of the previous round left behind */
	pthread_mutex_lock(&leftover_lock);
	item_list old = leftovers[job->id];
	leftovers[job->id] = (item_list){ NULL, NULL, 0, 0 };
	pthread_mutex_unlock(&leftover_lock);
	list_free(&old);

	for (unsigned long it = 0; it < iterations; it++) {
		uint64_t r = rng_next(&rng);
		unsigned op = (unsigned)(r % 100);
		if (op < 40 && local.count > 0) {
			unsigned char *p = list_take(&local, (size_t)((r >> 8) % local.count), &size);
			item_free(p, size);
		} else if (op < 50) {
			unsigned char *give = local.count > 0
						      ? list_take(&local, (size_t)((r >> 8) % local.count), &size)
						      : item_new(&rng, &size);
			if (!item_check(give, size))
				continue;
			unsigned char *got = (unsigned char *)atomic_exchange(
				&transfer[(r >> 32) % TRANSFER_SLOTS], (uintptr_t)give);
			if (got != NULL && item_check(got, 0))
				list_push(&local, got, item_size(got));
		} else if (op < 56 && local.count > 0) {
			size_t idx = (size_t)((r >> 8) % local.count);
			unsigned char *p = local.item[idx];
			size = local.size[idx];
			if (!item_check(p, size) || size >= MAX_GROW)
				continue;
			size_t grown_size = size + size / 2 + 16;
			unsigned char *q = realloc(p, grown_size);
			if (q == NULL)
				fatal(EXIT_SYSTEM, "realloc(%zu) failed", grown_size);
			if (item_size(q) != size || q[size - 1] != (unsigned char)(0x3c ^ size))
				atomic_fetch_add(&bad_items, 1); /* realloc lost the contents */
			item_tag(q, grown_size);
			local.item[idx] = q;
			local.size[idx] = grown_size;
			reallocs++;
		} else {
			unsigned char *p = item_new(&rng, &size);
			list_push(&local, p, size);
		}
	}

	/* exit: free half, leave the rest to the next round */
	item_list keep = { NULL, NULL, 0, 0 };
	for (size_t i = 0; i < local.count; i++) {
		if (i & 1)
			item_free(local.item[i], local.size[i]);
		else
			list_push(&keep, local.item[i], local.size[i]);
	}
	free(local.item);
	free(local.size);
	pthread_mutex_lock(&leftover_lock);
	leftovers[(job->id + 1) % threads] = keep; /* freed by another thread slot */
	pthread_mutex_unlock(&leftover_lock);
	atomic_fetch_add(&realloc_count, reallocs);
	return NULL;
}

int main(int argc, char **argv)
{
	bench_name = "mstress";
	if (argc > 4)
		fatal(EXIT_USAGE, "usage: mstress [THREADS [ROUNDS [ITERATIONS]]]");
	threads = (unsigned)arg_ulong(argc, argv, 1, DEFAULT_THREADS, 1, 256);
	unsigned rounds = (unsigned)arg_ulong(argc, argv, 2, DEFAULT_ROUNDS, 1, 1000000);
	iterations = arg_ulong(argc, argv, 3, DEFAULT_ITERATIONS, 1, 1UL << 40);

	leftovers = calloc(threads, sizeof(*leftovers));
	struct job *jobs = calloc(threads, sizeof(*jobs));
	if (leftovers == NULL || jobs == NULL)
		fatal(EXIT_SYSTEM, "calloc failed");
	uint64_t t0 = now_ns();
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < threads; i++) {
			jobs[i].round = r;
			jobs[i].id = i;
			if (pthread_create(&jobs[i].tid, NULL, thread_main, &jobs[i]) != 0)
				fatal(EXIT_SYSTEM, "pthread_create failed");
		}
		for (unsigned i = 0; i < threads; i++)
			pthread_join(jobs[i].tid, NULL);
	}
	for (unsigned i = 0; i < threads; i++)
		list_free(&leftovers[i]);
	for (unsigned i = 0; i < TRANSFER_SLOTS; i++)
		item_free((unsigned char *)atomic_exchange(&transfer[i], (uintptr_t)0), 0);
	uint64_t t1 = now_ns();
	free(leftovers);
	free(jobs);

	unsigned long bad = atomic_load(&bad_items);
	if (bad != 0)
		fatal(EXIT_CORRUPT, "%lu corrupted objects", bad);
	printf("RESULT name=mstress ms=%.1f threads=%u rounds=%u iterations=%lu reallocs=%lu\n",
	       (double)(t1 - t0) / 1e6, threads, rounds, iterations, atomic_load(&realloc_count));
	return 0;
}
