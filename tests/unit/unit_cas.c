/* unit_cas.c: the 16-byte CAS under contention. An owner thread holds a frozen slab and
 * repeatedly takes its whole shared freelist (sm_slab_take_all) while remote threads push the
 * slab's objects back in chains of random length (sm_push_chain). Over many rounds every
 * object must come back exactly once, and the counters must say so: inuse returns to
 * `objects` after each take-all, never underflows, and nothing is lost or duplicated. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "check.h"
#include "engine.h"
#include "freelist.h"
#include "platform.h"
#include "sizeclass.h"
#include "slab.h"
#include "types.h"

#define PUSHERS 3
#define ROUNDS 3000

static struct slab *s;
static void **objs;
static uint32_t nobj;
static atomic_uint next_idx;
static atomic_uint round_no, done_pushers;

static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 17, *x ^= *x << 5;
	return *x;
}

static void *pusher(void *arg)
{
	uint32_t seed = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
	for (unsigned r = 1; r <= ROUNDS; r++) {
		while (atomic_load(&round_no) < r)
			sched_yield();
		for (;;) {
			uint32_t len = 1 + rnd(&seed) % 8;
			uint32_t i = atomic_fetch_add(&next_idx, len);
			if (i >= nobj)
				break;
			if (i + len > nobj)
				len = nobj - i;
			for (uint32_t k = 0; k + 1 < len; k++)
				fp_set(objs[i + k], objs[i + k + 1], 0);
			sm_push_chain(s, objs[i], objs[i + len - 1], len);
		}
		atomic_fetch_add(&done_pushers, 1);
	}
	return NULL;
}

int main(void)
{
	sm_init();
#if defined(__aarch64__) /* which CAS init chose from HWCAP_ATOMICS (tests/cross.sh runs both) */
	printf("unit_cas: the 16-byte CAS is %s\n", sm_cpu_lse ? "LSE caspal" : "ldaxp/stlxp");
#endif
	struct cache *c = &sm_g.caches[sm_size_to_class(256)];
	s = sm_slab_new(c);
	CHECK(s, "no slab");
	nobj = s->objects;
	objs = malloc(nobj * sizeof *objs);
	unsigned char *seen = malloc(nobj);
	uint32_t got = sm_slab_carve(s, objs, nobj);
	CHECK(got == nobj, "carved %u of %u", got, nobj);

	pthread_t t[PUSHERS];
	for (int i = 0; i < PUSHERS; i++)
		pthread_create(&t[i], NULL, pusher, (void *)(uintptr_t)(i + 1));
	uint64_t takes = 0;
	for (unsigned r = 1; r <= ROUNDS; r++) {
		memset(seen, 0, nobj);
		atomic_store(&next_idx, 0);
		atomic_store(&round_no, r);
		uint32_t collected = 0;
		while (collected < nobj) {
			uint32_t n = 0;
			void *h = sm_slab_take_all(s, &n);
			if (!h)
				continue;
			takes++;
			dword_t w = {.lo = 0, .hi = 0};
			cas16(&s->word, &w, w); /* an atomic snapshot of the word */
			CHECK(w.hi == (SLAB_FROZEN | nobj) || w.lo,
			      "counters after take-all: %llx", (unsigned long long)w.hi);
			uint32_t k = 0;
			for (void *p = h; p; p = fp_get(p, 0), k++) {
				uint32_t idx = slab_index(s, (uintptr_t)p);
				CHECK(idx != UINT32_MAX, "foreign pointer %p on the list", p);
				CHECK(!seen[idx], "object %u came back twice in round %u", idx, r);
				seen[idx] = 1;
			}
			CHECK(k == n, "take-all said %u objects, list has %u", n, k);
			collected += k;
		}
		while (atomic_load(&done_pushers) < r * PUSHERS)
			sched_yield();
		CHECK(collected == nobj, "round %u: %u of %u", r, collected, nobj);
		CHECK(s->word.lo == 0 && s->word.hi == (SLAB_FROZEN | nobj), "final word round %u", r);
	}
	for (int i = 0; i < PUSHERS; i++)
		pthread_join(t[i], NULL);
	printf("unit_cas: %u rounds x %u objects, %llu take-alls raced %d pushers\n", ROUNDS, nobj,
	       (unsigned long long)takes, PUSHERS);
	return 0;
}
