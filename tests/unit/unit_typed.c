/* unit_typed.c: the typed object caches (slub_cache_*) through the public API (linked with
 * libslubmalloc.so, as a user program is): the ctor runs once per object, when it is first
 * carved, and a freed object keeps its constructed state; SLUB_ZERO zeroes; SLUB_HWCACHE_ALIGN
 * and explicit alignments are honoured for many sizes; free() and free_bulk() take typed
 * objects; freeing to the wrong cache is reported (child: SIGABRT and a `slubmalloc:` line);
 * destroying a cache with live objects reports them and later frees still work; create and
 * destroy many times; the 32-cache limit; bad arguments give EINVAL; several threads sharing
 * caches with cross-thread frees; destroying a cache after live threads freed all its objects;
 * destroying caches while other threads are inside slub_cache_* calls and threads come and go;
 * typed objects, whose ctor mallocs, allocated by a thread past its exit destructor.
 * Each case runs in a child of its own; `unit_typed NAME...` runs only the named cases. */
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
static struct slot *slot_of(uintptr_t a)
{
	size_t i = (size_t)((a * 0x9E3779B97F4A7C15ULL) >> (64 - TABLE_BITS));
	while (table[i].key && table[i].key != a)
		i = (i + 1) & ((1u << TABLE_BITS) - 1);
	table[i].key = a;
	return &table[i];
}

static void ctor(void *obj)
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
static void check_constructed(void *obj, uint64_t new_user, int strict, const char *what)
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
static void free_some(struct slub_cache *c, void **v, size_t n, unsigned how)
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
static void alloc_some(struct slub_cache *c, void **v, size_t n, uint64_t *rng)
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

static void case_ctor(void)
{
	enum { N = 4000, ROUNDS = 6, MAXPIN = 4096 };
	struct slub_cache *c = slub_cache_create("ctor-test", CTOR_SIZE, 0, 0, ctor);
	CHECK(c, "slub_cache_create with a ctor: errno %d", errno);
	static void *v[N], *keep[MAXPIN];
	static uintptr_t pinned[MAXPIN];
	size_t nkeep = 0, reused = 0;
	uint64_t rng = 11, user = 1;
	for (unsigned r = 0; r < ROUNDS; r++) {
		alloc_some(c, v, N, &rng);
		check_disjoint(v, N, CTOR_SIZE, "ctor");
		for (size_t i = 0; i < N; i++) {
			pthread_mutex_lock(&table_mu);
			reused += slot_of((uintptr_t)v[i])->seen;
			pthread_mutex_unlock(&table_mu);
			check_constructed(v[i], user++, 1, r ? "ctor (round > 0)" : "ctor (round 0)");
		}
		/* keep one object of every 64 KiB page seen, so the slabs of objects the user has
		 * had are never empty and released: a reused object must not be constructed again
		 */
		size_t m = 0;
		for (size_t i = 0; i < N; i++) {
			uintptr_t page = (uintptr_t)v[i] >> 16;
			size_t j = 0;
			while (j < nkeep && pinned[j] != page)
				j++;
			if (j == nkeep) {
				CHECK(nkeep < MAXPIN, "too many pages");
				pinned[nkeep] = page;
				keep[nkeep++] = v[i];
			} else {
				v[m++] = v[i];
			}
		}
		shuffle(v, m, &rng);
		for (size_t i = 0; i < m;) {
			size_t k = 1 + rng_below(&rng, 300);
			if (k > m - i)
				k = m - i;
			free_some(c, v + i, k, (unsigned)rng_below(&rng, 4));
			i += k;
		}
	}
	CHECK(reused > N, "only %zu objects were reused: the test did not exercise reuse", reused);
	for (size_t i = 0; i < nkeep; i++)
		check_constructed(keep[i], 0, 1, "ctor (kept)");
	free_some(c, keep, nkeep, 2);
	printf("  ctor ran %lu times; %zu reused objects checked; %zu objects kept to pin slabs\n",
	       atomic_load(&ctor_calls), reused, nkeep);
	slub_cache_destroy(c);
}

/* ---- SLUB_ZERO ---- */
static void case_zero(void)
{
	static const size_t sizes[] = {1, 8, 24, 64, 100, 1000, 4096, 10000, 32768};
	static void *v[2000];
	uint64_t rng = 3;
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		for (unsigned fl = 0; fl < 2; fl++) {
			size_t size = sizes[si];
			unsigned flags = SLUB_ZERO | (fl ? SLUB_HWCACHE_ALIGN : 0);
			struct slub_cache *c = slub_cache_create("zero", size, 0, flags, NULL);
			CHECK(c, "slub_cache_create(%zu, SLUB_ZERO) errno %d", size, errno);
			size_t n = 8 * 1024 * 1024 / size;
			if (n > 2000)
				n = 2000;
			for (unsigned r = 0; r < 4; r++) {
				alloc_some(c, v, n, &rng);
				for (size_t i = 0; i < n; i++) {
					const unsigned char *b = v[i];
					for (size_t j = 0; j < size; j++)
						CHECK(b[j] == 0, "SLUB_ZERO cache of %zu: byte %zu of %p is %#x "
						      "(round %u)", size, j, v[i], b[j], r);
					memset(v[i], 0xFF, size);
				}
				shuffle(v, n, &rng);
				free_some(c, v, n, r);
			}
			slub_cache_destroy(c);
		}
	}
}

/* ---- alignment: SLUB_HWCACHE_ALIGN and explicit ---- */
/* The kernel's rule for SLAB_HWCACHE_ALIGN: a 64-byte line, halved while the object fits in
 * half of it. */
static size_t hw_align(size_t size)
{
	size_t a = 64;
	while (size <= a / 2 && a > 8)
		a /= 2;
	return a;
}

static void case_align(void)
{
	static const size_t sizes[] = {1,   7,   8,    9,    15,   16,   17,   24,    31,   32,   33,
				       48,  63,  64,   65,   96,   100,  127,  128,   129,  200,  255,
				       256, 500, 1000, 1500, 4095, 4096, 5000, 10000, 16385, 32767, 32768};
	static const size_t aligns[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 8192, 32768};
	static void *v[300];
	uint64_t rng = 5;
	unsigned made = 0;
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
		for (size_t ai = 0; ai < sizeof aligns / sizeof aligns[0]; ai++)
			for (unsigned hw = 0; hw < 2; hw++) {
				size_t size = sizes[si], align = aligns[ai];
				size_t want = align < 8 ? 8 : align;
				if (hw && hw_align(size) > want)
					want = hw_align(size);
				size_t osize = (size + want - 1) / want * want;
				errno = 0;
				struct slub_cache *c = slub_cache_create(
					"align", size, align, hw ? SLUB_HWCACHE_ALIGN : 0, NULL);
				if (osize > 32768) {
					CHECK(!c && errno == EINVAL, "size %zu align %zu%s: an object of %zu "
					      "bytes: want EINVAL, got %p errno %d", size, align,
					      hw ? " HWCACHE" : "", osize, (void *)c, errno);
					continue;
				}
				CHECK(c, "slub_cache_create(size %zu, align %zu%s) failed: errno %d", size,
				      align, hw ? ", HWCACHE" : "", errno);
				made++;
				size_t n = 4 * 1024 * 1024 / osize;
				if (n > 300)
					n = 300;
				alloc_some(c, v, n, &rng);
				for (size_t i = 0; i < n; i++) {
					uintptr_t a = (uintptr_t)v[i];
					CHECK(a % want == 0, "size %zu align %zu%s: %p not aligned to %zu",
					      size, align, hw ? " HWCACHE" : "", v[i], want);
					if (hw && size <= 64)
						CHECK(a / 64 == (a + size - 1) / 64,
						      "size %zu HWCACHE: %p straddles a cache line", size, v[i]);
				}
				check_disjoint(v, n, size, "align");
				for (size_t i = 0; i < n; i++)
					pat_fill(v[i], size, i);
				for (size_t i = 0; i < n; i++)
					CHECK(pat_bad(v[i], size, i) == SIZE_MAX,
					      "size %zu align %zu: object %zu overwritten", size, align, i);
				free_some(c, v, n, (unsigned)(si + ai + hw));
				slub_cache_destroy(c);
			}
	printf("  %u caches created and checked\n", made);
}

/* ---- free() and free_bulk() of typed objects, mixed with malloc objects ---- */
static void case_free_plain(void)
{
	struct slub_cache *a = slub_cache_create("plain-a", 72, 0, 0, NULL);
	struct slub_cache *b = slub_cache_create("plain-b", 72, 64, 0, NULL);
	CHECK(a && b, "create");
	static void *v[6000];
	uint64_t rng = 8;
	for (unsigned r = 0; r < 10; r++) {
		size_t n = 0;
		for (size_t i = 0; i < 2000; i++) {
			v[n++] = slub_cache_alloc(a);
			v[n++] = slub_cache_alloc(b);
			v[n++] = malloc(72);
		}
		for (size_t i = 0; i < n; i++)
			CHECK(v[i], "allocation %zu", i);
		check_disjoint(v, n, 72, "plain");
		for (size_t i = 0; i < n; i++)
			pat_fill(v[i], 72, i);
		for (size_t i = 0; i < n; i++)
			CHECK(pat_bad(v[i], 72, i) == SIZE_MAX, "object %zu corrupted", i);
		shuffle(v, n, &rng);
		if (r & 1) {
			for (size_t i = 0; i < n; i++)
				free(v[i]);
		} else {
			free_bulk(n, v);
		}
	}
	slub_cache_destroy(a);
	slub_cache_destroy(b);
}

/* ---- freeing to the wrong cache is reported ---- */
static void wrong_single(void *arg)
{
	(void)arg;
	struct slub_cache *a = slub_cache_create("wrong-a", 64, 0, 0, NULL);
	struct slub_cache *b = slub_cache_create("wrong-b", 64, 0, 0, NULL);
	CHECK(a && b, "create");
	void *p = slub_cache_alloc(a);
	CHECK(p, "alloc");
	slub_cache_free(b, p);
}

static void wrong_malloc_obj(void *arg)
{
	(void)arg;
	struct slub_cache *a = slub_cache_create("wrong-m", 64, 0, 0, NULL);
	CHECK(a, "create");
	void *p = malloc(64);
	CHECK(p, "malloc");
	slub_cache_free(a, p);
}

static void wrong_bulk(void *arg)
{
	(void)arg;
	struct slub_cache *a = slub_cache_create("wrong-ba", 128, 0, 0, NULL);
	struct slub_cache *b = slub_cache_create("wrong-bb", 128, 0, 0, NULL);
	CHECK(a && b, "create");
	void *v[6];
	CHECK(slub_cache_alloc_bulk(b, 5, v) == 5, "alloc_bulk");
	v[5] = slub_cache_alloc(a);
	CHECK(v[5], "alloc");
	slub_cache_free_bulk(b, 6, v);
}

/* The last pointer of one slub_cache_free_bulk again, first of a short array (2 or 3: *arg)
 * in the next call: a double free, the stack's top. */
static void again_short(void *arg)
{
	size_t n = *(const size_t *)arg;
	struct slub_cache *a = slub_cache_create("again-short", 64, 0, 0, NULL);
	CHECK(a, "create");
	void *v[8], *w[3];
	CHECK(slub_cache_alloc_bulk(a, 8, v) == 8, "alloc_bulk");
	slub_cache_free_bulk(a, 8, v);
	w[0] = v[7];
	for (size_t i = 1; i < n; i++)
		CHECK((w[i] = slub_cache_alloc(a)), "alloc");
	slub_cache_free_bulk(a, n, w);
}

static void wrong_stack(void *arg)
{
	(void)arg;
	struct slub_cache *a = slub_cache_create("wrong-s", 64, 0, 0, NULL);
	CHECK(a, "create");
	char local[64];
	slub_cache_free(a, local);
}

/* slub_cache_free_bulk with a bad pointer at position j of n: another cache's object, a
 * malloc object, an interior pointer, the pointer before it again; kind 0: none (no report). */
static void wrong_at(void *arg)
{
	const struct bad_at *w = arg;
	struct slub_cache *a = slub_cache_create("wrong-pa", 96, 0, 0, NULL);
	struct slub_cache *b = slub_cache_create("wrong-pb", 96, 0, 0, NULL);
	CHECK(a && b, "create");
	void *v[64];
	CHECK(slub_cache_alloc_bulk(b, w->n, v) == w->n, "alloc_bulk(%zu)", w->n);
	if (w->kind == 1)
		v[w->j] = slub_cache_alloc(a);
	else if (w->kind == 2)
		v[w->j] = malloc(96);
	else if (w->kind == 3)
		v[w->j] = (char *)v[w->j] + 32;
	else if (w->kind == 4)
		v[w->j] = v[w->j - 1];
	slub_cache_free_bulk(b, w->n, v);
	if (w->kind == 0)
		exit(0);
}

static void case_wrong_positions(void)
{
	static const size_t lens[] = {1, 2, 3, 4, 7, 8, 17, 33};
	static const char *const kind[] = {"", "another cache's object", "a malloc object",
					   "an interior pointer", "the previous pointer again"};
	expect_bad_everywhere(wrong_at, lens, sizeof lens / sizeof lens[0], 4, kind,
			      "slub_cache_free_bulk");
}

/* slub_cache_free_bulk of two or three pointers, from one page or two, with a NULL among
 * them, then the rest one by one: each object is freed once (no report), none is lost (the
 * destroy reports no live object). */
static void short_arrays_child(void *arg)
{
	(void)arg;
	enum { N = 64 };
	struct slub_cache *c = slub_cache_create("short-arrays", 4096, 0, 0, NULL);
	CHECK(c, "create");
	void *v[N];
	CHECK(slub_cache_alloc_bulk(c, N, v) == N, "alloc_bulk(%d)", N);
	size_t far = 1; /* 16 objects per 64 KiB page */
	while (far < N && !(((uintptr_t)v[far] ^ (uintptr_t)v[0]) >> 16))
		far++;
	CHECK(far < N, "%d objects of 4 KiB in one 64 KiB page", N);
	size_t r[N], nr = 0;
	for (size_t i = 1; i < N; i++)
		if (i != far)
			r[nr++] = i;
	void *sets[][3] = {
		{v[0], v[far], NULL},
		{v[r[0]], v[r[1]], NULL},
		{v[r[2]], v[r[3]], v[r[4]]},
		{NULL, v[r[5]], v[r[6]]},
		{v[r[7]], NULL, v[r[8]]},
	};
	static const size_t lens[] = {2, 2, 3, 3, 3};
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
		slub_cache_free_bulk(c, lens[k], sets[k]);
	for (size_t i = 9; i < nr; i++)
		slub_cache_free(c, v[r[i]]);
	slub_cache_destroy(c);
}

static void case_short_arrays(void)
{
	char *err;
	int st = run_in_child(short_arrays_child, NULL, &err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !*err,
	      "short slub_cache_free_bulk arrays: status %d, stderr \"%s\"", st, err);
	free(err);
}

static void case_wrong_cache(void)
{
	expect_report(wrong_single, NULL, "slub_cache_free of another cache's object");
	expect_report(wrong_malloc_obj, NULL, "slub_cache_free of a malloc object");
	expect_report(wrong_bulk, NULL, "slub_cache_free_bulk with another cache's object");
	static const size_t two = 2, three = 3;
	expect_report(again_short, (void *)&two,
		      "slub_cache_free_bulk(2) starting with the last pointer of the call before");
	expect_report(again_short, (void *)&three,
		      "slub_cache_free_bulk(3) starting with the last pointer of the call before");
	expect_report(wrong_stack, NULL, "slub_cache_free of a stack address");
}

/* ---- destroy with live objects ---- */
/* All NO_CACHES ids can be had at once (then they are destroyed again). */
static void check_all_ids_free(const char *what)
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

static void case_destroy_live(void)
{
	struct slub_cache *c = slub_cache_create("live-objects", 256, 0, 0, NULL);
	CHECK(c, "create");
	void *live[10], *tmp[500];
	CHECK(slub_cache_alloc_bulk(c, 500, tmp) == 500, "alloc_bulk");
	for (size_t i = 0; i < 10; i++) {
		live[i] = slub_cache_alloc(c);
		CHECK(live[i], "alloc");
		pat_fill(live[i], 256, i);
	}
	slub_cache_free_bulk(c, 500, tmp);
	struct capture cap;
	capture_start(&cap);
	slub_cache_destroy(c);
	char *err = capture_end(&cap);
	printf("  destroy said: %s%s", err, strchr(err, '\n') ? "" : "(nothing)\n");
	CHECK(strstr(err, "slubmalloc:") && strstr(err, "live-objects"),
	      "destroy with live objects: no report naming the cache on stderr (got \"%s\")", err);
	CHECK(strstr(err, " 10 "), "destroy with 10 live objects: the report does not say 10 (\"%s\")",
	      err);
	free(err);
	/* the live objects are intact and can still be freed, in every way */
	for (size_t i = 0; i < 10; i++)
		CHECK(pat_bad(live[i], 256, i) == SIZE_MAX, "live object %zu corrupted by destroy", i);
	free(live[0]);
	free(live[1]);
	free_bulk(3, live + 2);
	slub_cache_free(c, live[5]);
	slub_cache_free_bulk(c, 4, live + 6);
	/* the heap is fine, and the cache is gone now that its objects are: every id is free */
	void *v[100];
	CHECK(malloc_bulk(256, 100, v) == 100, "malloc_bulk after destroy");
	check_disjoint(v, 100, 256, "after destroy");
	free_bulk(100, v);
	check_all_ids_free("after the live objects of a destroyed cache were freed");
}

/* ---- create and destroy many times ---- */
static void case_create_destroy_many(void)
{
	uint64_t rng = 17;
	static void *v[1000];
	struct capture cap;
	capture_start(&cap);
	for (unsigned i = 0; i < 200; i++) {
		size_t size = 8 + rng_below(&rng, 3000);
		unsigned flags = (unsigned)rng_below(&rng, 3); /* 0, HWCACHE, ZERO */
		errno = 0;
		struct slub_cache *c = slub_cache_create("many", size, 0, flags, NULL);
		if (!c) {
			char *err = capture_end(&cap);
			CHECK(0, "create #%u (size %zu) failed: errno %d (stderr: %s)", i, size, errno, err);
		}
		size_t n = 1 + rng_below(&rng, 1000);
		alloc_some(c, v, n, &rng);
		check_disjoint(v, n, size, "many");
		free_some(c, v, n, i);
		slub_cache_destroy(c);
	}
	char *err = capture_end(&cap);
	CHECK(!strstr(err, "slubmalloc:"), "destroying caches with no live objects reported: \"%s\"",
	      err);
	free(err);
	check_all_ids_free("after 200 create/destroy cycles");
	/* 32 at once is the limit: the 33rd fails with ENOMEM, and destroying one frees a place */
	struct slub_cache *c[NO_CACHES + 1];
	for (unsigned i = 0; i < NO_CACHES; i++)
		CHECK((c[i] = slub_cache_create("limit", 64, 0, 0, NULL)), "create %u", i);
	errno = 0;
	c[NO_CACHES] = slub_cache_create("limit", 64, 0, 0, NULL);
	CHECK(!c[NO_CACHES] && errno == ENOMEM, "cache #33: want NULL with ENOMEM, got %p errno %d",
	      (void *)c[NO_CACHES], errno);
	slub_cache_destroy(c[7]);
	c[7] = slub_cache_create("limit", 64, 0, 0, NULL);
	CHECK(c[7], "create after destroying one of 32");
	for (unsigned i = 0; i < NO_CACHES; i++)
		slub_cache_destroy(c[i]);
}

/* ---- bad arguments ---- */
static void case_bad_args(void)
{
	static const struct {
		const char *name;
		size_t size, align;
		unsigned flags;
		int with_ctor;
	} bad[] = {
		{NULL, 64, 0, 0, 0},                 /* no name */
		{"x", 0, 0, 0, 0},                   /* size 0 */
		{"x", 32769, 0, 0, 0},               /* above 32 KiB */
		{"x", (size_t)1 << 40, 0, 0, 0},     /* far above */
		{"x", SIZE_MAX, 0, 0, 0},            /* overflow bait */
		{"x", 64, 3, 0, 0},                  /* not a power of two */
		{"x", 64, 48, 0, 0},                 /* not a power of two */
		{"x", 64, 65536, 0, 0},              /* align above 32 KiB */
		{"x", 64, (size_t)1 << 63, 0, 0},    /* absurd align */
		{"x", 32768, 32768 * 2, 0, 0},       /* absurd align */
		{"x", 64, 0, 0x4, 0},                /* unknown flag */
		{"x", 64, 0, 0x80000000u, 0},        /* unknown flag */
		{"x", 64, 0, SLUB_ZERO, 1},          /* ZERO with a ctor */
		{"x", 20000, 65536, 0, 0},           /* align above 32 KiB */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errno = 0;
		struct slub_cache *c = slub_cache_create(bad[i].name, bad[i].size, bad[i].align,
							 bad[i].flags, bad[i].with_ctor ? ctor : NULL);
		CHECK(!c && errno == EINVAL,
		      "slub_cache_create(%s, size %zu, align %zu, flags %#x%s): want NULL with EINVAL, "
		      "got %p errno %d", bad[i].name ? "\"x\"" : "NULL", bad[i].size, bad[i].align,
		      bad[i].flags, bad[i].with_ctor ? ", ctor" : "", (void *)c, errno);
	}
	/* the largest valid ones work */
	struct slub_cache *c20 = slub_cache_create("x", 20000, 32768, 0, NULL);
	CHECK(c20, "slub_cache_create(20000, align 32768) failed: errno %d", errno);
	void *p20 = slub_cache_alloc(c20);
	CHECK(p20 && (uintptr_t)p20 % 32768 == 0, "object %p not 32 KiB aligned", p20);
	slub_cache_free(c20, p20);
	slub_cache_destroy(c20);
	struct slub_cache *c = slub_cache_create("max", 32768, 32768, SLUB_HWCACHE_ALIGN, NULL);
	CHECK(c, "slub_cache_create(32768, 32768, HWCACHE) errno %d", errno);
	void *v[3] = {(void *)1, (void *)2, (void *)3};
	errno = 0;
	CHECK(slub_cache_alloc_bulk(c, 0, v) == 0 && v[0] == (void *)1, "alloc_bulk(n = 0)");
	errno = 0;
	CHECK(slub_cache_alloc_bulk(c, 2, NULL) == 0 && errno == EINVAL,
	      "slub_cache_alloc_bulk(c, 2, NULL): want 0 with EINVAL, errno %d", errno);
	CHECK(slub_cache_alloc_bulk(c, 3, v) == 3, "alloc_bulk(3) of 32 KiB objects");
	check_disjoint(v, 3, 32768, "max");
	slub_cache_free_bulk(c, 0, v); /* nothing */
	slub_cache_free(c, NULL);
	void *w[5] = {NULL, v[0], NULL, v[1], v[2]};
	slub_cache_free_bulk(c, 5, w); /* NULL entries skipped */
	slub_cache_destroy(c);
	slub_cache_destroy(NULL);
	/* a long name is fine */
	c = slub_cache_create("a-rather-long-cache-name-well-beyond-thirty-two-characters", 40, 0, 0,
			      NULL);
	CHECK(c, "long name");
	slub_cache_destroy(c);
}

/* ---- ENOMEM, all or nothing, under an RLIMIT_AS cap ---- */
static void typed_enomem_child(void *arg)
{
	(void)arg;
	const size_t cap_bytes = 200UL << 20, size = 4096;
	size_t n_fail = 2 * cap_bytes / size, n_ok = cap_bytes * 5 / 8 / size;
	struct slub_cache *c = slub_cache_create("enomem", size, 0, 0, NULL);
	CHECK(c, "create");
	void **v = malloc(n_fail * sizeof *v);
	CHECK(v, "malloc");
	CHECK(slub_cache_alloc_bulk(c, 8, v) == 8, "warm-up");
	slub_cache_free_bulk(c, 8, v);
	long vm = proc_status_kb("VmSize");
	struct rlimit rl = {(rlim_t)vm * 1024 + cap_bytes, (rlim_t)vm * 1024 + cap_bytes};
	CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit");
	long rss0 = proc_status_kb("VmRSS");
	errno = 0;
	size_t got = slub_cache_alloc_bulk(c, n_fail, v);
	CHECK(got == 0 && errno == ENOMEM, "slub_cache_alloc_bulk(%zu x 4 KiB) under a 200 MiB cap: "
	      "%zu, errno %d (want 0, ENOMEM)", n_fail, got, errno);
	long rss1 = proc_status_kb("VmRSS");
	CHECK(rss1 - rss0 < 50 * 1024, "RSS grew by %ld KiB after the failed bulk", rss1 - rss0);
	got = slub_cache_alloc_bulk(c, n_ok, v);
	CHECK(got == n_ok, "after the failure, slub_cache_alloc_bulk(%zu) = %zu, errno %d", n_ok, got,
	      errno);
	check_disjoint(v, n_ok, size, "typed enomem");
	slub_cache_free_bulk(c, n_ok, v);
	/* single allocations until failure, then everything back: a bulk fits again */
	size_t k = 0;
	while (k < n_fail && (v[k] = slub_cache_alloc(c)))
		k++;
	CHECK(k < n_fail && errno == ENOMEM, "slub_cache_alloc never failed under the cap");
	free_bulk(k, v);
	CHECK(slub_cache_alloc_bulk(c, n_ok, v) == n_ok, "bulk after single allocations failed");
	slub_cache_free_bulk(c, n_ok, v);
	fprintf(stderr, "  typed ENOMEM: RSS %+ld KiB after the failed bulk; %zu singles fit\n",
		rss1 - rss0, k);
}

static void case_enomem(void)
{
	char *err;
	int st = run_in_child(typed_enomem_child, NULL, &err);
	fputs(err, stdout);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "typed ENOMEM child failed");
	free(err);
}

/* ---- several threads sharing caches, with cross-thread frees ---- */
enum { MT_THREADS = 4, MT_CACHES = 3, MT_ITERS = 20000, MT_Q = 64, MT_BATCH = 48 };

struct tbatch {
	void *v[MT_BATCH];
	size_t n;
	unsigned cache;
	uint64_t tag0;
};

struct mailbox {
	pthread_mutex_t mu;
	struct tbatch *q[MT_Q];
	size_t head, tail;
};

static struct slub_cache *mt_cache[MT_CACHES];
static const size_t mt_size[MT_CACHES] = {48, CTOR_SIZE, 1000};
static struct mailbox box[MT_THREADS];
static atomic_ulong mt_alloc, mt_freed;
static atomic_int mt_running;
static int mt_ctor; /* cache 1 has the ctor (case threads_ctor) */

static void mt_release(struct tbatch *b, uint64_t *rng)
{
	struct slub_cache *c = mt_cache[b->cache];
	size_t size = mt_size[b->cache];
	for (size_t i = 0; i < b->n; i++) {
		if (mt_ctor && b->cache == 1) { /* the ctor cache: the user field holds the tag */
			CHECK(((uint64_t *)b->v[i])[1] == b->tag0 + i, "mt: ctor object %p lost its tag",
			      b->v[i]);
		} else {
			size_t bad = pat_bad(b->v[i], size, b->tag0 + i);
			CHECK(bad == SIZE_MAX, "mt: object %p of cache %u corrupted at byte %zu",
			      b->v[i], b->cache, bad);
		}
	}
	free_some(c, b->v, b->n, (unsigned)rng_below(rng, 4));
	atomic_fetch_add(&mt_freed, b->n);
	free(b);
}

static int mt_drain(unsigned id, uint64_t *rng)
{
	int any = 0;
	for (;;) {
		pthread_mutex_lock(&box[id].mu);
		struct tbatch *b = box[id].head != box[id].tail ? box[id].q[box[id].head++ % MT_Q] : NULL;
		pthread_mutex_unlock(&box[id].mu);
		if (!b)
			return any;
		mt_release(b, rng);
		any = 1;
	}
}

static void *mt_main(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 500 + id, tag = (uint64_t)(id + 1) << 40;
	for (unsigned it = 0; it < MT_ITERS; it++) {
		struct tbatch *b = malloc(sizeof *b);
		CHECK(b, "malloc");
		b->cache = (unsigned)rng_below(&rng, MT_CACHES);
		b->n = 1 + rng_below(&rng, MT_BATCH);
		b->tag0 = tag;
		tag += b->n;
		alloc_some(mt_cache[b->cache], b->v, b->n, &rng);
		atomic_fetch_add(&mt_alloc, b->n);
		for (size_t i = 0; i < b->n; i++) {
			if (mt_ctor && b->cache == 1)
				check_constructed(b->v[i], b->tag0 + i, 0, "mt ctor");
			else
				pat_fill(b->v[i], mt_size[b->cache], b->tag0 + i);
		}
		unsigned to = (unsigned)rng_below(&rng, MT_THREADS);
		int sent = 0;
		while (!sent) {
			pthread_mutex_lock(&box[to].mu);
			if (box[to].tail - box[to].head < MT_Q) {
				box[to].q[box[to].tail++ % MT_Q] = b;
				sent = 1;
			}
			pthread_mutex_unlock(&box[to].mu);
			if (!sent && !mt_drain(id, &rng))
				sched_yield();
		}
		mt_drain(id, &rng);
	}
	atomic_fetch_sub(&mt_running, 1);
	while (atomic_load(&mt_running) > 0)
		if (!mt_drain(id, &rng))
			sched_yield();
	mt_drain(id, &rng);
	return NULL;
}

static void run_threads(void)
{
	for (unsigned i = 0; i < MT_CACHES; i++) {
		mt_cache[i] = slub_cache_create("mt", mt_size[i], 0, i == 2 ? SLUB_HWCACHE_ALIGN : 0,
						mt_ctor && i == 1 ? ctor : NULL);
		CHECK(mt_cache[i], "create");
	}
	for (unsigned i = 0; i < MT_THREADS; i++)
		pthread_mutex_init(&box[i].mu, NULL);
	atomic_store(&mt_running, MT_THREADS);
	pthread_t t[MT_THREADS];
	for (unsigned i = 0; i < MT_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, mt_main, (void *)(uintptr_t)i) == 0, "create");
	for (unsigned i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(atomic_load(&mt_alloc) == atomic_load(&mt_freed), "%lu allocated, %lu freed",
	      atomic_load(&mt_alloc), atomic_load(&mt_freed));
	printf("  %lu objects passed between %d threads\n", atomic_load(&mt_alloc), MT_THREADS);
	/* every object was freed and the threads are gone: destroy reports nothing */
	struct capture cap;
	capture_start(&cap);
	for (unsigned i = 0; i < MT_CACHES; i++)
		slub_cache_destroy(mt_cache[i]);
	char *err = capture_end(&cap);
	CHECK(!strstr(err, "slubmalloc:"), "destroy after all objects were freed and the threads "
	      "exited reported: \"%s\"", err);
	free(err);
	check_all_ids_free("after the multithreaded caches were destroyed");
}

static void case_threads(void)
{
	mt_ctor = 0;
	run_threads();
}

/* the same with a ctor on one cache: objects keep their constructed state across threads */
static void case_threads_ctor(void)
{
	mt_ctor = 1;
	run_threads();
}

/* ---- destroy after other, still running threads freed every object of the cache ---- */
static pthread_barrier_t dl_bar;
static struct slub_cache *dl_cache;

static void *dl_worker(void *arg)
{
	uint64_t rng = 900 + (uintptr_t)arg;
	static void *vv[2][3000];
	void **v = vv[(uintptr_t)arg];
	for (unsigned r = 0; r < 40; r++) {
		pthread_barrier_wait(&dl_bar); /* main created dl_cache */
		size_t n = 1 + rng_below(&rng, 3000);
		alloc_some(dl_cache, v, n, &rng);
		free_some(dl_cache, v, n, r);
		pthread_barrier_wait(&dl_bar); /* every object freed: main destroys */
		pthread_barrier_wait(&dl_bar);
	}
	return NULL;
}

static void case_destroy_users_alive(void)
{
	pthread_t t[2];
	CHECK(pthread_barrier_init(&dl_bar, NULL, 3) == 0, "barrier");
	for (unsigned i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, dl_worker, (void *)(uintptr_t)i) == 0, "create");
	char *first_report = NULL;
	unsigned reports = 0, failed_create = 40;
	for (unsigned r = 0; r < 40; r++) {
		dl_cache = slub_cache_create("users-alive", 64 + 8 * r, 0, 0, NULL);
		if (!dl_cache) {
			failed_create = r;
			break;
		}
		pthread_barrier_wait(&dl_bar);
		pthread_barrier_wait(&dl_bar);
		struct capture cap;
		capture_start(&cap);
		slub_cache_destroy(dl_cache);
		char *err = capture_end(&cap);
		if (strstr(err, "slubmalloc:")) {
			reports++;
			if (!first_report)
				first_report = strdup(err);
		}
		free(err);
		pthread_barrier_wait(&dl_bar);
	}
	if (failed_create < 40) { /* the workers wait at a barrier: leave without them */
		fprintf(stderr, "unit_typed.c: destroy_users_alive: slub_cache_create failed at cycle "
			"%u of 40 with ENOMEM although at most one typed cache was alive at a time (each "
			"destroyed after all its objects were freed); destroy reported live objects %u "
			"times, first: %s", failed_create, reports, first_report ? first_report : "-\n");
		fflush(stderr);
		_exit(1);
	}
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(reports == 0, "%u of 40 destroys reported objects although every object had been "
	      "freed (by two threads that are still running); first: %s", reports, first_report);
	check_all_ids_free("after 40 caches were destroyed while their users live on");
}

/* ---- destroy racing with other threads' calls: workers keep using a long-lived cache (and
 * hand its objects to each other) while the main thread destroys, one after another, caches
 * the workers had used and emptied; threads start and exit meanwhile ---- */
enum { DR_WORKERS = 2, DR_ROUNDS = 150 };

static struct slub_cache *dr_keep;
static struct slub_cache *_Atomic dr_cache;
static atomic_uint dr_gen, dr_done, dr_stop;
static void *_Atomic dr_swap; /* a batch of dr_keep objects handed to the other worker */

struct dr_batch {
	size_t n;
	uint64_t tag0;
	void *v[32];
};

static void dr_release(struct dr_batch *b, uint64_t *rng)
{
	for (size_t i = 0; i < b->n; i++) {
		size_t bad = pat_bad(b->v[i], 128, b->tag0 + i);
		CHECK(bad == SIZE_MAX, "destroy race: object %p of the kept cache corrupted at byte %zu",
		      b->v[i], bad);
	}
	free_some(dr_keep, b->v, b->n, (unsigned)rng_below(rng, 4));
	free(b);
}

static void *dr_worker(void *arg)
{
	uint64_t rng = 4242 + (uintptr_t)arg, tag = (uint64_t)((uintptr_t)arg + 1) << 40;
	unsigned seen = 0;
	static void *big[DR_WORKERS][6000];
	void **v = big[(uintptr_t)arg];
	while (!atomic_load(&dr_stop)) {
		unsigned g = atomic_load(&dr_gen);
		if (g != seen) { /* a new cache: use it, free everything, report */
			struct slub_cache *c = atomic_load(&dr_cache);
			size_t n = 1 + rng_below(&rng, 3000);
			alloc_some(c, v, n, &rng);
			shuffle(v, n, &rng);
			free_some(c, v, n, (unsigned)rng_below(&rng, 4));
			seen = g;
			atomic_fetch_add(&dr_done, 1);
		}
		/* the kept cache, busy all the time: small batches, sometimes a big bulk */
		if (rng_below(&rng, 64) == 0) {
			size_t n = 1000 + rng_below(&rng, 5000);
			CHECK(slub_cache_alloc_bulk(dr_keep, n, v) == n, "big bulk of the kept cache");
			slub_cache_free_bulk(dr_keep, n, v);
		}
		struct dr_batch *b = malloc(sizeof *b);
		CHECK(b, "malloc");
		b->n = 1 + rng_below(&rng, 32);
		b->tag0 = tag;
		tag += b->n;
		alloc_some(dr_keep, b->v, b->n, &rng);
		for (size_t i = 0; i < b->n; i++)
			pat_fill(b->v[i], 128, b->tag0 + i);
		b = atomic_exchange(&dr_swap, b); /* take the other worker's batch, if any */
		if (b)
			dr_release(b, &rng);
	}
	return NULL;
}

static void *dr_short_lived(void *arg)
{
	uint64_t rng = (uintptr_t)arg;
	void *v[100];
	alloc_some(dr_keep, v, 100, &rng);
	free_some(dr_keep, v, 100, (unsigned)(uintptr_t)arg);
	return NULL;
}

static void case_destroy_racing(void)
{
	dr_keep = slub_cache_create("kept", 128, 0, 0, NULL);
	CHECK(dr_keep, "create");
	pthread_t t[DR_WORKERS];
	for (unsigned i = 0; i < DR_WORKERS; i++)
		CHECK(pthread_create(&t[i], NULL, dr_worker, (void *)(uintptr_t)i) == 0, "create");
	uint64_t rng = 77;
	unsigned reports = 0;
	char *first = NULL;
	for (unsigned r = 1; r <= DR_ROUNDS; r++) {
		struct slub_cache *c = slub_cache_create("raced", 16 + rng_below(&rng, 2000), 0,
							 (unsigned)rng_below(&rng, 3), NULL);
		CHECK(c, "round %u: slub_cache_create failed with errno %d (at most two typed caches "
		      "exist at a time)", r, errno);
		atomic_store(&dr_cache, c);
		atomic_store(&dr_gen, r);
		while (atomic_load(&dr_done) < r * DR_WORKERS) /* every worker used it and freed all */
			sched_yield();
		pthread_t sl;
		int with_sl = r % 5 == 0; /* a thread starts and exits while the cache is destroyed */
		if (with_sl)
			CHECK(pthread_create(&sl, NULL, dr_short_lived, (void *)(uintptr_t)r) == 0, "create");
		struct capture cap;
		capture_start(&cap);
		slub_cache_destroy(c);
		char *err = capture_end(&cap);
		if (with_sl)
			pthread_join(sl, NULL);
		if (strstr(err, "slubmalloc:") && reports++ == 0)
			first = strdup(err);
		free(err);
	}
	atomic_store(&dr_stop, 1);
	for (unsigned i = 0; i < DR_WORKERS; i++)
		pthread_join(t[i], NULL);
	struct dr_batch *b = atomic_exchange(&dr_swap, NULL);
	if (b)
		dr_release(b, &rng);
	CHECK(reports == 0, "%u of %d destroys reported objects although the workers had freed "
	      "them all; first: %s", reports, DR_ROUNDS, first);
	struct capture cap;
	capture_start(&cap);
	slub_cache_destroy(dr_keep);
	char *err = capture_end(&cap);
	CHECK(!strstr(err, "slubmalloc:"), "destroy of the kept cache reported: \"%s\"", err);
	free(err);
	check_all_ids_free("after caches were destroyed while other threads were busy");
	printf("  %d caches destroyed while %d threads kept allocating\n", DR_ROUNDS, DR_WORKERS);
}

/* ---- a thread past its exit destructor: typed objects from the orphan cache, whose ctor
 * mallocs, so the orphan cache is entered again by the thread that holds it (thread.c) ---- */
#define LATE_OBJS 300
static struct slub_cache *late_cache;
static atomic_int late_done;

static void malloc_ctor(void *obj)
{
	char *p = malloc(40);
	CHECK(p, "malloc(40) in a ctor");
	memset(p, 0x5a, 40);
	free(p);
	memset(obj, 0, 64);
}

/* Runs after the library's own exit destructor: its key was created later. */
static void late_destructor(void *arg)
{
	(void)arg;
	void **v = malloc(LATE_OBJS * sizeof *v);
	CHECK(v, "malloc after the thread's exit destructor");
	for (int i = 0; i < LATE_OBJS; i++) {
		v[i] = slub_cache_alloc(late_cache);
		CHECK(v[i], "slub_cache_alloc after exit, object %d", i);
		CHECK(!((char *)v[i])[63], "a constructed object");
	}
	for (int i = 0; i < LATE_OBJS; i++)
		slub_cache_free(late_cache, v[i]);
	free(v);
	atomic_store(&late_done, 1);
}

static void *late_thread(void *arg)
{
	pthread_key_t *key = arg;
	CHECK(pthread_setspecific(*key, key) == 0, "pthread_setspecific");
	void *p = slub_cache_alloc(late_cache); /* the thread gets a cache of its own first */
	CHECK(p, "slub_cache_alloc");
	slub_cache_free(late_cache, p);
	return NULL;
}

static void case_after_exit(void)
{
	late_cache = slub_cache_create("late", 64, 0, 0, malloc_ctor);
	CHECK(late_cache, "slub_cache_create");
	pthread_key_t key;
	CHECK(pthread_key_create(&key, late_destructor) == 0, "pthread_key_create");
	pthread_t t;
	CHECK(pthread_create(&t, NULL, late_thread, &key) == 0, "pthread_create");
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	CHECK(atomic_load(&late_done), "the late destructor ran to its end");
	slub_cache_destroy(late_cache);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{"ctor", case_ctor},
		{"zero", case_zero},
		{"align", case_align},
		{"free_plain", case_free_plain},
		{"wrong_cache", case_wrong_cache},
		{"wrong_positions", case_wrong_positions},
		{"short_arrays", case_short_arrays},
		{"destroy_live", case_destroy_live},
		{"create_destroy_many", case_create_destroy_many},
		{"bad_args", case_bad_args},
		{"enomem", case_enomem},
		{"threads", case_threads},
		{"threads_ctor", case_threads_ctor},
		{"destroy_users_alive", case_destroy_users_alive},
		{"destroy_racing", case_destroy_racing},
		{"after_exit", case_after_exit},
	};
	int failed = run_cases(argc, argv, cases, sizeof cases / sizeof cases[0], 50);
	failed |= rerun_without_avx2(argv);
	return failed != 0;
}
