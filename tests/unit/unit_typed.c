/* unit_typed.c: the typed object caches (slub_cache_*) through the public API, in one thread
 * (linked with libslubmalloc.so, as a user program is). It checks that the ctor runs once per
 * object, when it is first carved, and that a freed object keeps its constructed state. It
 * checks that SLUB_ZERO zeroes, and that SLUB_HWCACHE_ALIGN and explicit alignments are
 * honoured for many sizes. free() and free_bulk() take typed objects. Freeing to the wrong
 * cache is reported (child: SIGABRT and a `slubmalloc:` line). Destroying a cache with live
 * objects reports them, and later frees still work. Caches are created and destroyed many
 * times; the 32-cache limit holds; bad arguments give EINVAL; ENOMEM is all or nothing.
 * Constructed state survives the drain of a thread's exit, whatever it holds. malloc_trim
 * gives a typed cache's slabs back, and leaves a refill alone when its ctor calls it.
 * The threaded cases are in unit_typed_mt.c; the helpers both use in typed_util.h.
 * Each case runs in a child of its own; `unit_typed NAME...` runs only the named cases. */
#include <malloc.h>

#include "api_util.h"
#include "slubmalloc.h"
#include "typed_util.h"

/* ---- the ctor runs once per object; a reused object keeps its constructed state ---- */
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

/* ---- a double free of a typed object is reported, however it comes ----
 * A cache with a constructor (its key lies past the object) and one without (word 1), objects
 * of 48 bytes. The object freed twice: by slub_cache_free with another free between, by free(),
 * by slub_cache_free_bulk twice, twice in one slub_cache_free_bulk (not side by side), and by
 * slub_cache_free then free(). */
static void ctor48(void *p)
{
	memset(p, 0x5c, 48);
}

struct twice_case {
	int ctor; /* 0, 1 */
	int how;  /* 0..4, as above */
	size_t n; /* bulk lengths */
};

static void typed_twice(void *arg)
{
	const struct twice_case *t = arg;
	struct slub_cache *c = slub_cache_create("twice", 48, 0, 0, t->ctor ? ctor48 : NULL);
	CHECK(c, "slub_cache_create");
	enum { MAXN = 40 };
	void *v[MAXN + 1];
	size_t n = t->n;
	CHECK(slub_cache_alloc_bulk(c, n, v) == n, "slub_cache_alloc_bulk(%zu)", n);
	switch (t->how) {
	case 0:
		slub_cache_free(c, v[0]);
		slub_cache_free(c, v[1]);
		slub_cache_free(c, v[0]);
		break;
	case 1:
		free(v[0]);
		free(v[1]);
		free(v[0]);
		break;
	case 2:
		slub_cache_free_bulk(c, n, v);
		slub_cache_free_bulk(c, n, v);
		break;
	case 3:
		v[n] = v[n / 2];
		slub_cache_free_bulk(c, n + 1, v);
		break;
	case 4:
		slub_cache_free(c, v[n - 1]);
		slub_cache_free(c, v[0]);
		free(v[n - 1]);
		break;
	}
}

/* The object freed twice, the second time inside another cache's constructor (a nested call):
 * the thread's own stack holds it. */
static struct slub_cache *nest_outer, *nest_inner;
static void *nest_victim;
static int nest_how; /* 0: slub_cache_free, 1: free() */
static void refreeing_ctor(void *p)
{
	memset(p, 0x5c, 48);
	if (nest_victim) {
		void *v = nest_victim;
		nest_victim = NULL;
		if (nest_how)
			free(v);
		else
			slub_cache_free(nest_inner, v);
	}
}

static void typed_twice_nested(void *arg)
{
	nest_how = *(const int *)arg;
	nest_inner = slub_cache_create("twice-inner", 48, 0, 0, NULL);
	nest_outer = slub_cache_create("twice-outer", 48, 0, 0, refreeing_ctor);
	CHECK(nest_inner && nest_outer, "slub_cache_create");
	void *v = slub_cache_alloc(nest_inner), *w = slub_cache_alloc(nest_inner);
	CHECK(v && w, "slub_cache_alloc");
	slub_cache_free(nest_inner, v);
	slub_cache_free(nest_inner, w); /* v is not the stack's top */
	nest_victim = v;
	CHECK(slub_cache_alloc(nest_outer), "slub_cache_alloc"); /* its ctor frees v again */
}

static void case_double_free(void)
{
	for (int how = 0; how <= 1; how++)
		expect_report(typed_twice_nested, &how, how ? "typed double free by free() in a ctor"
							    : "typed double free in a ctor");
	static const size_t lens[] = {2, 3, 8, 33};
	for (int ctor = 0; ctor <= 1; ctor++)
		for (int how = 0; how <= 4; how++)
			for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
				struct twice_case t = {ctor, how, lens[li]};
				char what[96];
				snprintf(what, sizeof what, "typed double free (ctor %d, case %d, n %zu)",
					 ctor, how, t.n);
				expect_report(typed_twice, &t, what);
			}
	/* a word 1 that starts with the key's byte (0xb9: the program's data) is no double free */
	struct slub_cache *k = slub_cache_create("lookalike", 64, 0, 0, NULL);
	CHECK(k, "slub_cache_create");
	void *u[33], *w[132];
	CHECK(slub_cache_alloc_bulk(k, 33, u) == 33, "slub_cache_alloc_bulk");
	((unsigned char *)u[0])[8] = 0xb9;
	((unsigned char *)u[16])[8] = 0xb9;
	slub_cache_free_bulk(k, 33, u);
	CHECK(slub_cache_alloc_bulk(k, 132, w) == 132, "slub_cache_alloc_bulk");
	qsort(w, 132, sizeof *w, cmp_ptr);
	for (size_t i = 1; i < 132; i++)
		CHECK(w[i - 1] != w[i], "%p handed out twice", w[i]);
	slub_cache_free_bulk(k, 132, w);
	slub_cache_destroy(k);
	/* the constructed state survives a free and the next allocation, with the key past it */
	struct slub_cache *c = slub_cache_create("kept", 48, 0, 0, ctor48);
	CHECK(c, "slub_cache_create");
	for (int round = 0; round < 3; round++) {
		void *v[64];
		CHECK(slub_cache_alloc_bulk(c, 64, v) == 64, "slub_cache_alloc_bulk");
		for (int i = 0; i < 64; i++)
			for (int k = 0; k < 48; k++)
				CHECK(((unsigned char *)v[i])[k] == 0x5c, "round %d: object %d byte %d not the ctor's",
				      round, i, k);
		slub_cache_free_bulk(c, 64, v);
	}
	slub_cache_destroy(c);
}

/* ---- constructed state survives a thread's exit ----
 * A thread exit drains the thread's typed allocation stack to the slabs. The size classes'
 * drain rekeys carved objects that read as zero (their word 1 is the allocator's); a typed
 * object's word 1 is its constructed state and must come back as the ctor left it, even when
 * it holds that key's value (harden.h's ZERO_KEY). */
#define ZERO_KEY_VALUE 0xffffffff85ebcab9ull
static void ctor_word1(void *p)
{
	memset(p, 0x3c, 48);
	((uint64_t *)p)[1] = ZERO_KEY_VALUE;
}

static void *alloc_one_and_exit(void *c)
{
	void *p = slub_cache_alloc(c);
	slub_cache_free(c, p); /* the rest of the carved batch stays on the allocation stack */
	return NULL;
}

static void case_ctor_exit(void)
{
	enum { N = 2000 };
	struct slub_cache *c = slub_cache_create("ctor-exit", 48, 0, 0, ctor_word1);
	CHECK(c, "slub_cache_create: errno %d", errno);
	for (int r = 0; r < 4; r++) {
		pthread_t t;
		CHECK(pthread_create(&t, NULL, alloc_one_and_exit, c) == 0, "pthread_create");
		pthread_join(t, NULL);
	}
	static void *v[N];
	for (size_t i = 0; i < N; i++) {
		v[i] = slub_cache_alloc(c);
		CHECK(v[i], "slub_cache_alloc: errno %d", errno);
		CHECK(((uint64_t *)v[i])[1] == ZERO_KEY_VALUE && ((unsigned char *)v[i])[47] == 0x3c,
		      "object %zu lost its constructed state (word 1 %#llx)", i,
		      (unsigned long long)((uint64_t *)v[i])[1]);
	}
	for (size_t i = 0; i < N; i++)
		slub_cache_free(c, v[i]);
	slub_cache_destroy(c);
}

/* ---- malloc_trim gives a typed cache's memory back (before 2026-12-07 the calling thread's
 * stacks and active slab for it stayed, and so did the cache's reserve of empty slabs) ---- */
static void case_trim(void)
{
	enum { N = 20000 };
	static void *v[N];
	struct slub_cache *c = slub_cache_create("trim-me", 200, 0, 0, NULL);
	CHECK(c, "slub_cache_create: errno %d", errno);
	for (size_t i = 0; i < N; i++)
		CHECK((v[i] = slub_cache_alloc(c)), "slub_cache_alloc: errno %d", errno);
	for (size_t i = 0; i < N; i++)
		slub_cache_free(c, v[i]);
	struct slub_cache_stats r = stats_row("trim-me");
	CHECK(r.num_slabs > 0 && r.active_objs == 0, "before malloc_trim: %zu slabs, %zu objects",
	      r.num_slabs, r.active_objs);
	malloc_trim(0);
	r = stats_row("trim-me");
	CHECK(r.num_slabs == 0, "after malloc_trim: %zu slabs left (%zu held by a thread)",
	      r.num_slabs, r.active_slabs);
	slub_cache_destroy(c);
}

/* A ctor that calls malloc_trim runs inside the cache's refill: the drain must leave the
 * state that refill is using alone. */
static void trimming_ctor(void *p)
{
	memset(p, 0x6d, 64);
	static unsigned n;
	if (++n % 50 == 0)
		malloc_trim(0);
}

/* The same ctor after a typed call of its own, on another cache: the nested call must not end
 * the outer one's protection. */
static struct slub_cache *inner_cache;
static void nesting_ctor(void *p)
{
	void *q = slub_cache_alloc(inner_cache);
	CHECK(q, "slub_cache_alloc in a ctor: errno %d", errno);
	slub_cache_free(inner_cache, q);
	trimming_ctor(p);
}

static void trim_in_ctor_with(void (*ctor)(void *))
{
	enum { N = 5000 };
	static void *v[N];
	struct slub_cache *c = slub_cache_create("trim-ctor", 64, 0, 0, ctor);
	CHECK(c, "slub_cache_create: errno %d", errno);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < N; i++) {
			CHECK((v[i] = slub_cache_alloc(c)), "slub_cache_alloc: errno %d", errno);
			const unsigned char *b = v[i];
			CHECK(b[16] == 0x6d && b[63] == 0x6d, "object %zu not constructed", i);
			for (size_t j = 0; j < i; j += 997)
				CHECK(v[j] != v[i], "object %zu handed out twice (%zu)", i, j);
		}
		for (size_t i = 0; i < N; i++)
			slub_cache_free(c, v[i]);
	}
	malloc_trim(0);
	struct slub_cache_stats r = stats_row("trim-ctor");
	CHECK(r.active_objs == 0 && r.num_slabs == 0, "all freed and trimmed: %zu objects in use, "
	      "%zu slabs", r.active_objs, r.num_slabs);
	slub_cache_destroy(c);
}

static void case_trim_in_ctor(void)
{
	trim_in_ctor_with(trimming_ctor);
}

static void case_trim_in_nested_ctor(void)
{
	inner_cache = slub_cache_create("trim-inner", 32, 0, 0, NULL);
	CHECK(inner_cache, "slub_cache_create: errno %d", errno);
	trim_in_ctor_with(nesting_ctor);
	slub_cache_destroy(inner_cache);
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
		{"double_free", case_double_free},
		{"ctor_exit", case_ctor_exit},
		{"trim", case_trim},
		{"trim_in_ctor", case_trim_in_ctor},
		{"trim_in_nested_ctor", case_trim_in_nested_ctor},
	};
	int failed = run_cases(argc, argv, cases, sizeof cases / sizeof cases[0], 50);
	failed |= rerun_without_avx2(argv);
	return failed != 0;
}
