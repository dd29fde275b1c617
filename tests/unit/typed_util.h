/* typed_util.h: helpers shared by unit_typed.c and unit_typed_mt.c, the tests of the typed
 * object caches (slub_cache_*). A constructor that records, per object address, how often it
 * ran and what the user last wrote (the slot table); check_constructed, which checks that an
 * object handed out again kept its constructed state; alloc_some and free_some, which allocate
 * and free a cache's objects in the several ways the API offers; check_all_ids_free, which
 * checks that every typed cache id can be had again.
 * Header-only, all functions static inline. */
#ifndef UNIT_TYPED_UTIL_H
#define UNIT_TYPED_UTIL_H

#include <pthread.h>
#include <stdatomic.h>

#include "api_util.h"
#include "slubmalloc.h"

#define NO_CACHES 32 /* typed caches that may exist at once (slubmalloc.h) */

/* ---- the constructor's bookkeeping: per address, how often it ran and the user's state ---- */
#define TABLE_BITS 20
#define CTOR_SIZE 200
#define CTOR_MAGIC 0xC0FFEE0DDBA11ULL

struct slot {
	uintptr_t key;
	unsigned ctor_runs;
	int seen;      /* handed to the user at least once */
	uint64_t user; /* what the user last wrote into the object's user field */
};

static struct slot table[1u << TABLE_BITS];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_ulong ctor_calls;

/* Constructed object: word 0 = magic ^ address, word 1 = user field (0 after the ctor),
 * bytes 16.. = 0xC5. */
static inline struct slot *slot_of(uintptr_t a)
{
	size_t i = (size_t)((a * 0x9E3779B97F4A7C15ULL) >> (64 - TABLE_BITS));
	while (table[i].key && table[i].key != a)
		i = (i + 1) & ((1u << TABLE_BITS) - 1);
	table[i].key = a;
	return &table[i];
}

static inline void ctor(void *obj)
{
	uint64_t *w = obj;
	w[0] = CTOR_MAGIC ^ (uintptr_t)obj;
	w[1] = 0;
	memset(w + 2, 0xC5, CTOR_SIZE - 16);
	pthread_mutex_lock(&table_mu);
	struct slot *s = slot_of((uintptr_t)obj);
	s->ctor_runs++;
	s->user = 0;
	pthread_mutex_unlock(&table_mu);
	atomic_fetch_add(&ctor_calls, 1);
}

/* An object just allocated must be in the state it was freed in (or, when new, the state the
 * ctor gave it). strict: the object's slab cannot have been released since the user last had
 * the object, so the ctor must not have run again. Then the user changes its user field. */
static inline void check_constructed(void *obj, uint64_t new_user, int strict, const char *what)
{
	uint64_t *w = obj;
	pthread_mutex_lock(&table_mu);
	struct slot s = *slot_of((uintptr_t)obj);
	pthread_mutex_unlock(&table_mu);
	CHECK(s.ctor_runs >= 1, "%s: %p: handed out but never constructed", what, obj);
	if (strict && s.seen)
		CHECK(s.ctor_runs == 1, "%s: %p: the ctor ran %u times on an object reused from a "
		      "slab that was never released (want exactly once)", what, obj, s.ctor_runs);
	CHECK(w[0] == (CTOR_MAGIC ^ (uintptr_t)obj),
	      "%s: %p: constructed word 0 lost: %#llx, want %#llx (a freed object must keep its "
	      "constructed state)", what, obj, (unsigned long long)w[0],
	      (unsigned long long)(CTOR_MAGIC ^ (uintptr_t)obj));
	CHECK(w[1] == s.user, "%s: %p: user field %#llx, the object was freed with %#llx", what, obj,
	      (unsigned long long)w[1], (unsigned long long)s.user);
	const unsigned char *b = obj;
	for (size_t i = 16; i < CTOR_SIZE; i++)
		CHECK(b[i] == 0xC5, "%s: %p: constructed byte %zu is %#x", what, obj, i, b[i]);
	w[1] = new_user;
	pthread_mutex_lock(&table_mu);
	struct slot *sp = slot_of((uintptr_t)obj);
	sp->user = new_user;
	sp->seen = 1;
	pthread_mutex_unlock(&table_mu);
}

/* Frees v[0..n) of cache c in one of several ways. */
static inline void free_some(struct slub_cache *c, void **v, size_t n, unsigned how)
{
	switch (how % 4) {
	case 0:
		for (size_t i = 0; i < n; i++)
			slub_cache_free(c, v[i]);
		break;
	case 1:
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		break;
	case 2:
		slub_cache_free_bulk(c, n, v);
		break;
	default:
		free_bulk(n, v);
		break;
	}
}

/* Allocates n objects of c into v, singly or in bulks of random lengths. */
static inline void alloc_some(struct slub_cache *c, void **v, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i < n;) {
		if (rng_below(rng, 2)) {
			v[i] = slub_cache_alloc(c);
			CHECK(v[i], "slub_cache_alloc failed, errno %d", errno);
			i++;
		} else {
			size_t k = 1 + rng_below(rng, 200);
			if (k > n - i)
				k = n - i;
			size_t got = slub_cache_alloc_bulk(c, k, v + i);
			CHECK(got == k, "slub_cache_alloc_bulk(%zu) = %zu, errno %d", k, got, errno);
			i += k;
		}
	}
}

/* All NO_CACHES ids can be had at once (then they are destroyed again). */
static inline void check_all_ids_free(const char *what)
{
	struct slub_cache *c[NO_CACHES];
	for (unsigned i = 0; i < NO_CACHES; i++) {
		errno = 0;
		c[i] = slub_cache_create("probe", 32 + 16 * i, 0, 0, NULL);
		CHECK(c[i], "%s: only %u typed caches could be created at once (errno %d); want %d: "
		      "a destroyed cache was not released", what, i, errno, NO_CACHES);
	}
	for (unsigned i = 0; i < NO_CACHES; i++)
		slub_cache_destroy(c[i]);
}

#endif
