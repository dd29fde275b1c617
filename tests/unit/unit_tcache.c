/* unit_tcache.c: a thread's two stacks per size class and how they grow (tcache.c: sm_flush,
 * burst_stacks). Rounds of "malloc case_n objects, free them all", case_n above the grown
 * stacks' room, for 256-byte objects (case_n 250) and for 48-byte ones, below a cache line
 * (case_n 1000): the stacks move to arrays of cap_burst slots (tc->burst) once the free stack
 * overflows with only the thread's own objects on it, and from then on a round is served from
 * the stacks alone (no refill), every object distinct and intact; malloc_trim shrinks them
 * back and the next rounds grow them again in the same arrays; a thread whose frees are of
 * another thread's objects never gets burst arrays, nor one that frees its own objects in
 * random order (a cached object in every other slab would keep the slabs from emptying:
 * tests/preload/rss.c); threads that exit with burst arrays give them back; a thread's burst
 * stacks together stay within TCACHE_BURST_BUDGET. Every stack's slots in the thread's block
 * that fit in a 4 KiB page lie in one (thread.c: the bulk calls' 32-byte moves never split a
 * page), behind a NULL guard, and the free stacks of the classes up to 256 bytes start at
 * different lines of their pages. */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "engine.h"
#include "sizeclass.h"
#include "stack.h"
#include "tcache.h"
#include "types.h"

#define N_MAX 1000
static size_t case_size;  /* the case's object size and round length (main) */
static unsigned case_n;

/* One round: case_n mallocs, each object filled and checked distinct from the others, then
 * freed. */
static void round_trip(unsigned tag)
{
	void *p[N_MAX];
	for (unsigned i = 0; i < case_n; i++) {
		p[i] = malloc(case_size);
		CHECK(p[i], "malloc(%zu)", case_size);
		memset(p[i], (int)(tag + i) & 0xff, case_size);
	}
	for (unsigned i = 0; i < case_n; i++) {
		const unsigned char *c = p[i];
		for (unsigned k = 0; k < case_size; k++)
			CHECK(c[k] == ((tag + i) & 0xff), "object %u of round %u changed at byte %u", i,
			      tag, k);
	}
	for (unsigned i = 0; i < case_n; i++)
		free(p[i]);
}

static unsigned cls_of_size(void)
{
	unsigned cls = sm_size_to_class(case_size);
	struct cache *c = &sm_g.caches[cls];
	CHECK(c->cap_grown < case_n && c->cap_burst >= 2 * case_n,
	      "class of %zu bytes: cap_grown %u, cap_burst %u: the test needs cap_grown < %u <= "
	      "cap_burst / 2", case_size, c->cap_grown, c->cap_burst, case_n);
	return cls;
}

/* Bursts of the thread's own objects: burst arrays, then rounds without refills; malloc_trim
 * shrinks the stacks, the next rounds grow them again into the same arrays. */
static void *own_bursts(void *arg)
{
	(void)arg;
	unsigned cls = cls_of_size();
	struct cache *c = &sm_g.caches[cls];
	for (unsigned r = 0; r < 4; r++)
		round_trip(r);
	void **burst = sm_tcp->burst[cls];
	CHECK(burst, "own bursts of %u objects: no burst arrays (stacks of %u)", case_n,
	      stack_cap(&sm_tcp->free_stack[cls]));
	CHECK(stack_cap(&sm_tcp->alloc_stack[cls]) == c->cap_burst && stack_cap(&sm_tcp->free_stack[cls]) == c->cap_burst,
	      "burst stacks hold %u and %u, not cap_burst %u", stack_cap(&sm_tcp->alloc_stack[cls]),
	      stack_cap(&sm_tcp->free_stack[cls]), c->cap_burst);
	uint32_t refills = sm_tcp->source[cls].refills;
	for (unsigned r = 4; r < 12; r++)
		round_trip(r);
	CHECK(sm_tcp->source[cls].refills == refills, "rounds after the burst growth refilled %u times",
	      sm_tcp->source[cls].refills - refills);

	malloc_trim(0); /* drains the calling thread's stacks at once */
	CHECK(stack_count(&sm_tcp->alloc_stack[cls]) == 0 && stack_count(&sm_tcp->free_stack[cls]) == 0 &&
		      stack_cap(&sm_tcp->free_stack[cls]) == c->cap,
	      "after malloc_trim: stacks of %u and %u objects, room %u (cap %u)",
	      stack_count(&sm_tcp->alloc_stack[cls]), stack_count(&sm_tcp->free_stack[cls]), stack_cap(&sm_tcp->free_stack[cls]),
	      c->cap);
	for (unsigned r = 12; r < 18; r++)
		round_trip(r);
	CHECK(sm_tcp->burst[cls] == burst && stack_cap(&sm_tcp->free_stack[cls]) == c->cap_burst,
	      "after malloc_trim, bursts did not grow the stacks again in the same arrays");
	return NULL;
}

/* A consumer: frees, in bursts, objects another thread allocated. */
struct handoff {
	void *p[4][N_MAX];
};

static void *consumer(void *arg)
{
	struct handoff *h = arg;
	unsigned cls = cls_of_size();
	for (unsigned r = 0; r < 4; r++)
		for (unsigned i = 0; i < case_n; i++)
			free(h->p[r][i]);
	CHECK(!sm_tcp->burst[cls], "a thread freeing another thread's objects got burst arrays");
	return NULL;
}

static void others_no_burst(void)
{
	static struct handoff h;
	for (unsigned r = 0; r < 4; r++)
		for (unsigned i = 0; i < case_n; i++) {
			h.p[r][i] = malloc(case_size);
			CHECK(h.p[r][i], "malloc(%zu)", case_size);
		}
	pthread_t t;
	CHECK(pthread_create(&t, NULL, consumer, &h) == 0, "pthread_create");
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
}

/* Frees of the thread's own objects, in random order, many slabs' worth. */
static void *random_frees(void *arg)
{
	(void)arg;
	unsigned cls = cls_of_size();
	enum { M = 8192 };
	static void *p[M]; /* one thread at a time runs this */
	for (unsigned i = 0; i < M; i++) {
		p[i] = malloc(case_size);
		CHECK(p[i], "malloc(%zu)", case_size);
	}
	uint64_t x = 88172645463325252ULL; /* xorshift */
	for (unsigned i = M - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned j = (unsigned)(x % (i + 1));
		void *t = p[i];
		p[i] = p[j], p[j] = t;
	}
	for (unsigned i = 0; i < M; i++)
		free(p[i]);
	CHECK(!sm_tcp->burst[cls], "frees in random order got burst arrays");
	return NULL;
}

/* Own bursts in more classes than the thread's burst budget holds: classes get burst arrays
 * in the order they burst while their objects fit in TCACHE_BURST_BUDGET, the rest keep their
 * grown stacks (and still work). */
static void *budget_bursts(void *arg)
{
	(void)arg;
	static const size_t sizes[] = {256, 320, 384, 448, 512, 640, 768, 896};
	uint64_t expect = 0;
	unsigned with = 0, without = 0;
	case_n = 250;
	for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		case_size = sizes[k];
		unsigned cls = sm_size_to_class(case_size);
		struct cache *c = &sm_g.caches[cls];
		CHECK(c->cap_grown < case_n, "class of %zu bytes: cap_grown %u, not below %u", case_size,
		      c->cap_grown, case_n);
		for (unsigned r = 0; r < 4; r++)
			round_trip(r);
		uint64_t held = (uint64_t)c->cap_burst * c->size;
		bool fits = expect + held <= TCACHE_BURST_BUDGET;
		CHECK(!!sm_tcp->burst[cls] == fits,
		      "class of %zu bytes (%llu bytes of burst stacks, %llu held before): burst "
		      "arrays %s, budget %u", case_size, (unsigned long long)held,
		      (unsigned long long)expect, sm_tcp->burst[cls] ? "given" : "refused",
		      TCACHE_BURST_BUDGET);
		if (fits)
			expect += held, with++;
		else
			without++;
		CHECK(sm_burst_held(sm_tcp) == expect, "burst stacks hold %llu bytes, expected %llu",
		      (unsigned long long)sm_burst_held(sm_tcp), (unsigned long long)expect);
	}
	CHECK(with && without, "the budget was not reached (%u classes with arrays, %u without)",
	      with, without);
	printf("  burst budget: %u classes with burst arrays (%llu bytes), %u without\n", with,
	       (unsigned long long)expect, without);
	return NULL;
}

/* The slot arrays of a new thread's block: each one's slots inside one 4 KiB page when they fit
 * in one, and slots[-1] NULL. */
static void *block_layout(void *arg)
{
	void *volatile p = malloc(16); /* set the thread up (volatile: the pair is not elided) */
	free(p);
	CHECK(sm_tcp->state == T_LIVE, "the thread is not set up");
	unsigned split = 0, checked = 0;
	for (unsigned i = 0; i < NCLASS; i++) {
		struct stack *st[3] = {&sm_tcp->alloc_stack[i], &sm_tcp->free_stack[i],
				       &sm_tcp->remote_stack[i]};
		for (unsigned k = 0; k < 3; k++) {
			uintptr_t a = (uintptr_t)st[k]->slots;
			size_t room = (k < 2 ? sm_g.caches[i].cap_grown : sm_g.caches[i].cap) *
				      sizeof(void *);
			if (!room || sm_tcp->burst[i])
				continue;
			checked++;
			CHECK(st[k]->slots[-1] == NULL, "class %u stack %u: no NULL guard", i, k);
			if (room <= 4096 && a / 4096 != (a + room - 1) / 4096)
				split++;
		}
	}
	CHECK(checked && !split, "%u of %u slot arrays straddle a 4 KiB page", split, checked);
	/* the free stacks of the classes up to 256 bytes: malloc pops and free pushes their
	 * slots[0] in turn when a program cycles through sizes; two at one line of their pages
	 * make the loads wait on the stores (4K aliasing: st_churn loop 1.4x slower) */
	uint64_t lines = 0;
	unsigned same = 0, small = 0;
	for (unsigned i = 0; i < NCLASS && sm_g.caches[i].size <= 256; i++, small++) {
		unsigned line = (unsigned)((uintptr_t)sm_tcp->free_stack[i].slots % 4096 / 64);
		same += lines >> line & 1;
		lines |= 1ull << line;
	}
	CHECK(small > 4 && !same, "%u of %u small classes' free stacks share a line offset of "
	      "their pages", same, small);
	printf("  block layout: %u slot arrays, none straddles a page; %u small classes' free "
	       "stacks at %u page offsets\n", checked, small, small - same);
	return arg;
}

static void run_thread(void *(*fn)(void *))
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, fn, NULL) == 0, "pthread_create");
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
}

int main(void)
{
	free(malloc(1)); /* set the engine up */
	static const struct {
		size_t size;
		unsigned n;
	} cases[] = {{256, 250}, {48, N_MAX}};
	for (unsigned k = 0; k < 2; k++) {
		case_size = cases[k].size, case_n = cases[k].n;
		printf("objects of %zu bytes, rounds of %u\n", case_size, case_n);
		run_thread(own_bursts);
		others_no_burst();
		run_thread(random_frees);
		for (unsigned i = 0; i < 20; i++) /* exits with burst arrays: their teardown */
			run_thread(own_bursts);
		round_trip(99); /* the exited threads' objects are back for this one */
	}
	run_thread(budget_bursts);
	run_thread(block_layout);
	printf("unit_tcache: all checks passed\n");
	return 0;
}
