/* xmalloc: asymmetric producer/consumer in the manner of xmalloc-test. PRODUCERS threads only
 * allocate: each fills batches (a malloc'd array of 256 pointers) with objects of 16..128 bytes
 * (a few up to 1 KiB) and pushes them on a shared bounded queue; CONSUMERS threads only free:
 * they pop batches, check and free every object and the batch itself. The allocating side never
 * gets its memory back locally, so the allocator must move freed memory from the consumers to
 * the producers. A fixed number of objects; measures the time (lower is better; compare.sh
 * times the whole process) and reports ns_per_obj.
 * Validation: every object carries its size and producer number at both ends, checked by the
 * consumer before free (exit 3 on a mismatch).
 * Usage: xmalloc [OBJECTS [PRODUCERS [CONSUMERS]]]
 * Prints: RESULT name=xmalloc ns_per_obj=... objs=... producers=... consumers=... ms=... */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define DEFAULT_OBJECTS 8000000UL
#define DEFAULT_PRODUCERS 2
#define DEFAULT_CONSUMERS 1
#define BATCH_OBJS 256
#define QUEUE_MAX 64 /* batches in flight; producers wait beyond that */

struct batch {
	struct batch *next;
	unsigned count;
	unsigned char *obj[BATCH_OBJS];
};

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_nonempty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t queue_nonfull = PTHREAD_COND_INITIALIZER;
static struct batch *queue_head, *queue_tail;
static unsigned queue_len;
static unsigned producers_left;
static unsigned long objects_total;
static unsigned producers, consumers;

static unsigned long bad_total; /* under queue_lock */

static inline void tag_object(unsigned char *p, size_t size, unsigned producer)
{
	p[0] = (unsigned char)size;
	p[1] = (unsigned char)(size >> 8);
	p[2] = (unsigned char)producer;
	p[size - 1] = (unsigned char)(0x5a ^ producer);
}

static inline int tag_ok(const unsigned char *p)
{
	size_t size = (size_t)p[0] | ((size_t)p[1] << 8);
	return size >= 16 && size <= 1024 && p[size - 1] == (unsigned char)(0x5a ^ p[2]);
}

static void push_batch(struct batch *b)
{
	pthread_mutex_lock(&queue_lock);
	while (queue_len >= QUEUE_MAX)
		pthread_cond_wait(&queue_nonfull, &queue_lock);
	b->next = NULL;
	if (queue_tail)
		queue_tail->next = b;
	else
		queue_head = b;
	queue_tail = b;
	queue_len++;
	pthread_cond_signal(&queue_nonempty);
	pthread_mutex_unlock(&queue_lock);
}

/* Returns NULL when the queue is empty and every producer is done. */
static struct batch *pop_batch(void)
{
	pthread_mutex_lock(&queue_lock);
	while (queue_head == NULL && producers_left > 0)
		pthread_cond_wait(&queue_nonempty, &queue_lock);
	struct batch *b = queue_head;
	if (b != NULL) {
		queue_head = b->next;
		if (queue_head == NULL)
			queue_tail = NULL;
		queue_len--;
		pthread_cond_signal(&queue_nonfull);
	}
	pthread_mutex_unlock(&queue_lock);
	return b;
}

static void *producer_main(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0x7a110c00ULL + id;
	unsigned long mine = objects_total / producers + (id < objects_total % producers);

	while (mine > 0) {
		struct batch *b = xmalloc_or_die(sizeof(*b));
		b->count = mine < BATCH_OBJS ? (unsigned)mine : BATCH_OBJS;
		for (unsigned i = 0; i < b->count; i++) {
			uint64_t r = rng_next(&rng);
			/* mostly small (16..128), one in 32 up to 1 KiB */
			size_t size = (r & 31) == 0 ? 129 + (size_t)((r >> 8) % 896) : 16 + (size_t)((r >> 8) % 113);
			unsigned char *p = xmalloc_or_die(size);
			tag_object(p, size, id);
			b->obj[i] = p;
		}
		mine -= b->count;
		push_batch(b);
	}
	pthread_mutex_lock(&queue_lock);
	producers_left--;
	pthread_cond_broadcast(&queue_nonempty);
	pthread_mutex_unlock(&queue_lock);
	return NULL;
}

static void *consumer_main(void *arg)
{
	(void)arg;
	unsigned long bad = 0;
	struct batch *b;
	while ((b = pop_batch()) != NULL) {
		for (unsigned i = 0; i < b->count; i++) {
			if (!tag_ok(b->obj[i]))
				bad++;
			free(b->obj[i]);
		}
		free(b);
	}
	pthread_mutex_lock(&queue_lock);
	bad_total += bad;
	pthread_mutex_unlock(&queue_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	bench_name = "xmalloc";
	if (argc > 4)
		fatal(EXIT_USAGE, "usage: xmalloc [OBJECTS [PRODUCERS [CONSUMERS]]]");
	objects_total = arg_ulong(argc, argv, 1, DEFAULT_OBJECTS, 1, 1UL << 40);
	producers = (unsigned)arg_ulong(argc, argv, 2, DEFAULT_PRODUCERS, 1, 64);
	consumers = (unsigned)arg_ulong(argc, argv, 3, DEFAULT_CONSUMERS, 1, 64);
	producers_left = producers;

	pthread_t tid[128];
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < consumers; i++)
		if (pthread_create(&tid[i], NULL, consumer_main, NULL) != 0)
			fatal(EXIT_SYSTEM, "pthread_create failed");
	for (unsigned i = 0; i < producers; i++)
		if (pthread_create(&tid[consumers + i], NULL, producer_main, (void *)(uintptr_t)i) != 0)
			fatal(EXIT_SYSTEM, "pthread_create failed");
	for (unsigned i = 0; i < consumers + producers; i++)
		pthread_join(tid[i], NULL);
	uint64_t t1 = now_ns();

	if (bad_total != 0)
		fatal(EXIT_CORRUPT, "%lu corrupted objects", bad_total);
	printf("RESULT name=xmalloc ns_per_obj=%.2f objs=%lu producers=%u consumers=%u ms=%.1f\n",
	       (double)(t1 - t0) / (double)objects_total, objects_total, producers, consumers,
	       (double)(t1 - t0) / 1e6);
	return 0;
}
