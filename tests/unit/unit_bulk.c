/* unit_bulk.c: malloc_bulk and free_bulk through the public API, in one thread (linked with
 * libslubmalloc.so, as a user program is). It checks every size class and large sizes; n = 0,
 * 1 and large n; bad arguments; bulk objects freed one by one and single objects freed in
 * bulk; ENOMEM all-or-nothing under an RLIMIT_AS cap; no slab leaks over repeated bulk cycles;
 * that invalid pointers are reported; that short arrays are freed in order; and, over a
 * randomized sequence, that bulk calls match the equivalent single calls (same live set, same
 * usable sizes, contents intact). The threaded cases are in unit_bulk_mt.c; the helpers both
 * use in bulk_util.h.
 * Each case runs in a child of its own; `unit_bulk NAME...` runs only the named cases. */
#include <malloc.h>
#include <pthread.h>

#include "api_util.h"
#include "bulk_util.h"
#include "slubmalloc.h"

/* ---- every size class and large sizes, with every way of freeing ---- */
static void case_every_size(void)
{
	size_t sizes[200], ns = test_sizes(sizes);
	static const size_t counts_small[] = {1, 2, 3, 31, 130};
	static const size_t counts_large[] = {1, 2, 5};
	void *v[130];
	uint64_t tag = 1;
	for (size_t si = 0; si < ns; si++) {
		size_t size = sizes[si];
		int large = size > 32768;
		const size_t *counts = large ? counts_large : counts_small;
		size_t ncounts = large ? 3 : 5;
		for (size_t ci = 0; ci < ncounts; ci++) {
			size_t n = counts[ci];
			errno = 0;
			size_t got = malloc_bulk(size, n, v);
			CHECK(got == n, "malloc_bulk(%zu, %zu) = %zu, errno %d", size, n, got, errno);
			check_fresh(v, n, size, tag, "every_size");
			verify(v, n, size, tag, "every_size");
			switch ((si + ci) % 4) {
			case 0: /* all at once, with NULL entries among them */
				if (n > 1) {
					void *w[131];
					memcpy(w, v, n * sizeof *v);
					w[n] = NULL;
					void *t = w[0];
					w[0] = NULL;
					w[n] = t;
					free_bulk(n + 1, w);
				} else {
					free_bulk(n, v);
				}
				break;
			case 1: /* one by one */
				for (size_t i = 0; i < n; i++)
					free(v[n - 1 - i]);
				break;
			case 2: /* half in bulk, half one by one */
				free_bulk(n / 2, v);
				for (size_t i = n / 2; i < n; i++)
					free(v[i]);
				break;
			default: /* realloc (bigger) keeps the contents, then bulk */
				for (size_t i = 0; i < n; i++) {
					void *p = realloc(v[i], size * 2 + 1);
					CHECK(p, "realloc of a bulk object of %zu", size);
					size_t bad = pat_bad(p, size, tag + i);
					CHECK(bad == SIZE_MAX, "realloc of bulk object (%zu B) lost byte %zu",
					      size, bad);
					v[i] = p;
				}
				free_bulk(n, v);
				break;
			}
			tag += n;
		}
	}
	printf("  %zu sizes checked\n", ns);
}

/* ---- n = 0, NULL arrays, n = 1, large n ---- */
/* free_bulk(0) as a thread's first call, ptrs[0] a live object: the thread's stacks have no
 * slots yet (it read ptrs[0] and the word below the stack's top, at address -8, before
 * 2026-12-04). */
static void *free_none_first(void *v)
{
	free_bulk(0, v);
	return NULL;
}

static void case_counts(void)
{
	void *v[4] = {(void *)0x1234, (void *)0x5678, (void *)1, (void *)8};
	errno = 0;
	CHECK(malloc_bulk(64, 0, v) == 0, "malloc_bulk(64, 0) returned nonzero");
	CHECK(v[0] == (void *)0x1234 && v[1] == (void *)0x5678, "malloc_bulk(n=0) wrote to ptrs");
	CHECK(malloc_bulk(64, 0, NULL) == 0, "malloc_bulk(64, 0, NULL)");
	CHECK(malloc_bulk(100000, 0, v) == 0 && v[0] == (void *)0x1234, "malloc_bulk(large, 0)");
	errno = 0;
	CHECK(malloc_bulk(64, 3, NULL) == 0 && errno == EINVAL,
	      "malloc_bulk(64, 3, NULL) must fail with EINVAL (errno %d)", errno);
	free_bulk(0, v); /* must not look at the (invalid) entries */
	void *live[1] = {malloc(16)};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_none_first, live) == 0 && pthread_join(t, NULL) == 0,
	      "free_bulk(0) as a thread's first call");
	free(live[0]);
	free_bulk(4, (void *[4]){NULL, NULL, NULL, NULL});

	/* size 0: n distinct, freeable objects, like malloc(0) */
	void *z[8];
	CHECK(malloc_bulk(0, 8, z) == 8, "malloc_bulk(0, 8)");
	check_disjoint(z, 8, 1, "size 0");
	free_bulk(8, z);

	/* n = 1 of every class is in case_every_size; here: many single-object bulks in a row
	 * (each takes from and refills the thread's stack) */
	void *one[1000];
	for (size_t i = 0; i < 1000; i++) {
		CHECK(malloc_bulk(48, 1, &one[i]) == 1, "malloc_bulk(48, 1) #%zu", i);
		pat_fill(one[i], 48, i);
	}
	check_disjoint(one, 1000, 48, "n=1 repeated");
	for (size_t i = 0; i < 1000; i++)
		CHECK(pat_bad(one[i], 48, i) == SIZE_MAX, "n=1 object %zu corrupted", i);
	for (size_t i = 0; i < 1000; i++)
		free_bulk(1, &one[i]);

	/* large n: small, medium and large objects, twice (the second time reuses the first) */
	static const struct {
		size_t size, n;
	} big[] = {{16, 2000000}, {1000, 50000}, {32768, 2000}, {65537, 300}};
	for (int round = 0; round < 2; round++)
		for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
			size_t size = big[b].size, n = big[b].n;
			void **w = malloc(n * sizeof *w);
			CHECK(w, "malloc for %zu pointers", n);
			double t0 = now_sec();
			CHECK(malloc_bulk(size, n, w) == n, "malloc_bulk(%zu, %zu) failed: errno %d",
			      size, n, errno);
			double t1 = now_sec();
			for (size_t i = 0; i < n; i++) {
				CHECK(w[i] && ((uintptr_t)w[i] & 15) == 0, "large n: bad pointer %p", w[i]);
				((uint64_t *)w[i])[0] = i * 2654435761u;
				((unsigned char *)w[i])[size - 1] = (unsigned char)i;
			}
			check_disjoint(w, n, size, "large n");
			for (size_t i = 0; i < n; i++)
				CHECK(((uint64_t *)w[i])[0] == i * 2654435761u &&
					      ((unsigned char *)w[i])[size - 1] == (unsigned char)i,
				      "large n: object %zu of %zu (size %zu) overwritten", i, n, size);
			double t2 = now_sec();
			free_bulk(n, w);
			double t3 = now_sec();
			if (round == 1)
				printf("  malloc_bulk(%zu, %zu): %.1f ms, free_bulk %.1f ms\n", size, n,
				       (t1 - t0) * 1e3, (t3 - t2) * 1e3);
			free(w);
		}
}

/* ---- bulk objects freed one by one, single objects freed in bulk, and mixtures ---- */
static void case_single_bulk_mix(void)
{
	uint64_t rng = 42;
	enum { N = 3000 };
	static void *v[N];
	static size_t sz[N];
	for (int round = 0; round < 40; round++) {
		size_t size = 1 + rng_below(&rng, round % 5 == 4 ? 100000 : 2048);
		/* bulk, then free() one by one in random order */
		size_t n = 1 + rng_below(&rng, N);
		CHECK(malloc_bulk(size, n, v) == n, "malloc_bulk(%zu, %zu)", size, n);
		check_fresh(v, n, size, 1000, "bulk then single");
		shuffle(v, n, &rng);
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		/* singles of random sizes (and calloc, aligned_alloc), then free_bulk in chunks */
		for (size_t i = 0; i < n; i++) {
			sz[i] = 1 + rng_below(&rng, i % 97 == 0 ? 70000 : 600);
			switch (i % 4) {
			case 0: v[i] = malloc(sz[i]); break;
			case 1: v[i] = calloc(1, sz[i]); break;
			case 2: v[i] = aligned_alloc(64, (sz[i] + 63) & ~(size_t)63); break;
			default: v[i] = realloc(NULL, sz[i]); break;
			}
			CHECK(v[i], "single allocation of %zu", sz[i]);
			pat_fill(v[i], sz[i], i);
		}
		for (size_t i = 0; i < n; i++)
			CHECK(pat_bad(v[i], sz[i], i) == SIZE_MAX, "single object %zu corrupted", i);
		for (size_t i = 0; i < n;) {
			size_t k = 1 + rng_below(&rng, 300);
			if (k > n - i)
				k = n - i;
			free_bulk(k, v + i);
			i += k;
		}
		/* bulk, free half one by one, allocate singles in their place, bulk-free all */
		CHECK(malloc_bulk(size, n, v) == n, "malloc_bulk(%zu, %zu) #2", size, n);
		check_fresh(v, n, size, 5000, "bulk/single mix");
		for (size_t i = 0; i < n; i += 2) {
			free(v[i]);
			v[i] = malloc(size);
			CHECK(v[i], "malloc(%zu)", size);
			pat_fill(v[i], size, 5000 + i);
		}
		check_disjoint(v, n, size, "bulk/single mix");
		verify(v, n, size, 5000, "bulk/single mix");
		free_bulk(n, v);
	}
}

/* ---- ENOMEM: all or nothing, under an RLIMIT_AS cap (in children) ---- */
#define CAP_BYTES (200 * MIB)

static void cap_address_space(void)
{
	long vm = proc_status_kb("VmSize");
	CHECK(vm > 0, "VmSize unreadable");
	struct rlimit rl = {(rlim_t)vm * 1024 + CAP_BYTES, (rlim_t)vm * 1024 + CAP_BYTES};
	CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", strerror(errno));
}

static void enomem_child(void *arg)
{
	size_t size = *(size_t *)arg;
	size_t n_fail = 2 * CAP_BYTES / size, n_ok = CAP_BYTES * 5 / 8 / size;
	void **v = malloc(n_fail * sizeof *v);
	CHECK(v, "malloc");
	void *warm[8];
	CHECK(malloc_bulk(size, 8, warm) == 8, "warm-up bulk"); /* the thread's stack holds some */
	free_bulk(8, warm);
	cap_address_space();
	long slabs0 = live_slabs();
	long rss0 = proc_status_kb("VmRSS"), vm0 = proc_status_kb("VmSize");
	for (size_t i = 0; i < n_fail; i++)
		v[i] = (void *)0x1;
	errno = 0;
	size_t got = malloc_bulk(size, n_fail, v);
	int err = errno;
	long rss1 = proc_status_kb("VmRSS"), vm1 = proc_status_kb("VmSize");
	long slabs1 = live_slabs();
	fprintf(stderr, "  size %zu: failed bulk of %zu MiB: RSS %+ld KiB, VmSize %+ld KiB, live "
		"slabs %+ld\n", size, n_fail * size / MIB, rss1 - rss0, vm1 - vm0, slabs1 - slabs0);
	CHECK(got == 0, "malloc_bulk(%zu, %zu) under a %lu MiB cap returned %zu", size, n_fail,
	      CAP_BYTES / MIB, got);
	CHECK(err == ENOMEM, "errno %d after the failed bulk (want ENOMEM)", err);
	/* nothing kept: the slabs of the failed attempt are gone (but for the few a cache keeps
	 * empty and the thread's active one), its memory is not resident... */
	CHECK(slabs1 - slabs0 <= 4, "%ld slabs more alive after the failed bulk", slabs1 - slabs0);
	CHECK(rss1 - rss0 < (long)(CAP_BYTES / 4 / 1024),
	      "RSS grew by %ld KiB after the failed bulk (cap %lu MiB)", rss1 - rss0, CAP_BYTES / MIB);
	if (size > 32768) /* large blocks are mappings of their own: unmapped, or a few cached */
		CHECK(vm1 - vm0 < (long)(CAP_BYTES / 2 / 1024),
		      "VmSize grew by %ld KiB after the failed bulk", vm1 - vm0);
	/* ... and reusable: a bulk of 5/8 of the cap now succeeds, and so do single mallocs */
	got = malloc_bulk(size, n_ok, v);
	CHECK(got == n_ok, "after the failure, malloc_bulk(%zu, %zu) (%lu MiB) = %zu, errno %d",
	      size, n_ok, n_ok * size / MIB, got, errno);
	check_fresh(v, n_ok, size < 64 ? size : 64, 3, "after ENOMEM");
	verify(v, n_ok, size < 64 ? size : 64, 3, "after ENOMEM");
	free_bulk(n_ok, v);
	void *p = malloc(size);
	CHECK(p, "malloc(%zu) after the failed bulk", size);
	free(p);
	/* a second failure behaves the same */
	errno = 0;
	CHECK(malloc_bulk(size, n_fail, v) == 0 && errno == ENOMEM, "second failing bulk");
	CHECK(malloc_bulk(size, n_ok, v) == n_ok, "bulk after the second failure");
	free_bulk(n_ok, v);
	fflush(stderr);
}

static void case_enomem(void)
{
	static size_t sizes[] = {4096, 256, MIB + 1, 40000};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *err;
		int st = run_in_child(enomem_child, &sizes[i], &err);
		fputs(err, stdout);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ENOMEM child for size %zu failed (%s %d)",
		      sizes[i], WIFSIGNALED(st) ? "signal" : "exit",
		      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		free(err);
	}
	/* impossible sizes fail at once, without a cap */
	void *v[3];
	errno = 0;
	CHECK(malloc_bulk((size_t)1 << 62, 3, v) == 0 && errno == ENOMEM, "malloc_bulk(2^62, 3)");
	errno = 0;
	CHECK(malloc_bulk(SIZE_MAX, 1, v) == 0 && errno == ENOMEM, "malloc_bulk(SIZE_MAX, 1)");
}

/* ---- nothing leaks: repeated bulk cycles leave the live slab count where it was ---- */
static void case_no_leak(void)
{
	static const size_t sizes[] = {16, 200, 1000, 4096, 32768};
	enum { MAXN = 20000 };
	void **v = malloc(MAXN * sizeof *v);
	CHECK(v, "malloc");
	long base = 0;
	for (int round = 0; round < 60; round++) {
		for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
			size_t size = sizes[si], n = 8 * MIB / size;
			if (n > MAXN)
				n = MAXN;
			CHECK(malloc_bulk(size, n, v) == n, "malloc_bulk(%zu, %zu)", size, n);
			for (size_t i = 0; i < n; i++)
				*(volatile char *)v[i] = 1;
			switch ((round + (int)si) % 3) {
			case 0:
				free_bulk(n, v);
				break;
			case 1:
				for (size_t i = 0; i < n; i++)
					free(v[i]);
				break;
			default:
				free_bulk(n / 3, v);
				for (size_t i = n / 3; i < n; i++)
					free(v[i]);
				break;
			}
			for (size_t i = 0; i < n; i++) /* singles, freed in bulk */
				CHECK((v[i] = malloc(size)), "malloc(%zu)", size);
			free_bulk(n, v);
		}
		if (round == 9)
			base = live_slabs();
	}
	long end = live_slabs();
	printf("  live slabs after 10 rounds %ld, after 60 rounds %ld\n", base, end);
	CHECK(end - base <= 4, "live slabs grew from %ld to %ld over 50 rounds of bulk cycles", base,
	      end);
	free(v);
}

/* ---- invalid pointers in free_bulk are reported ---- */
static void free_again(void *p)
{
	free_bulk(1, &p);
}

/* p again, first of a short array (then a live object): free_bulk of 2 and of 3 */
static void free_again_2(void *p)
{
	void *v[2] = {p, malloc(64)};
	free_bulk(2, v);
}
static void free_again_3(void *p)
{
	void *v[3] = {p, malloc(64), malloc(64)};
	free_bulk(3, v);
}

static void bad_foreign(void *arg)
{
	(void)arg;
	int local;
	void *v[3];
	CHECK(malloc_bulk(64, 2, v) == 2, "malloc_bulk");
	v[2] = &local;
	free_bulk(3, v);
}

static void bad_interior(void *arg)
{
	(void)arg;
	void *v[4];
	CHECK(malloc_bulk(64, 4, v) == 4, "malloc_bulk");
	v[2] = (char *)v[2] + 16;
	free_bulk(4, v);
}

static void bad_double(void *arg)
{
	(void)arg;
	void *v[4];
	CHECK(malloc_bulk(96, 3, v) == 3, "malloc_bulk");
	v[3] = v[2];
	free_bulk(4, v);
}

static void bad_large_interior(void *arg)
{
	(void)arg;
	void *v[2];
	CHECK(malloc_bulk(100000, 2, v) == 2, "malloc_bulk");
	v[1] = (char *)v[1] + 4096;
	free_bulk(2, v);
}

/* At every position of arrays of several lengths (runs checked four at a time with AVX2 and
 * one at a time after them): an interior pointer, a foreign one, and the pointer before it
 * again (a double free) are each reported, and a clean array of the same shape is not. */
static void free_with_bad(void *arg)
{
	const struct bad_at *b = arg;
	void *v[64];
	int local;
	CHECK(malloc_bulk(64, b->n, v) == b->n, "malloc_bulk(64, %zu)", b->n);
	if (b->kind == 1)
		v[b->j] = (char *)v[b->j] + 16;
	else if (b->kind == 2)
		v[b->j] = &local;
	else if (b->kind == 3)
		v[b->j] = v[b->j - 1];
	free_bulk(b->n, v);
	if (b->kind == 0)
		exit(0);
}

/* free_bulk of two or three pointers, from one page or two, with a NULL among them: each is
 * freed, onto the thread's free stack in array order, so that after malloc_trim (which empties
 * the thread's stacks) the next mallocs return them last first. */
static void case_short_arrays(void)
{
	enum { N = 64, SIZE = 4096 }; /* 16 objects per 64 KiB slab page */
	void *v[N];
	CHECK(malloc_bulk(SIZE, N, v) == N, "malloc_bulk(%d, %d)", SIZE, N);
	size_t far = 1;
	while (far < N && !(((uintptr_t)v[far] ^ (uintptr_t)v[0]) >> 16))
		far++;
	CHECK(far < N, "%d objects of %d bytes in one 64 KiB page", N, SIZE);
	size_t rest[N], nr = 0; /* the other indices */
	for (size_t i = 1; i < N; i++)
		if (i != far)
			rest[nr++] = i;
	void *sets[][3] = {
		{v[0], v[far], NULL},              /* two pages */
		{v[rest[0]], v[rest[1]], NULL},    /* one page, most likely */
		{v[rest[2]], v[rest[3]], v[far]},  /* far: allocated again below */
		{NULL, v[rest[4]], v[rest[5]]},
		{v[rest[6]], NULL, v[rest[7]]},
	};
	static const size_t lens[] = {2, 2, 3, 3, 3};
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		malloc_trim(0);
		free_bulk(lens[k], sets[k]);
		for (size_t i = lens[k]; i-- > 0;) {
			if (!sets[k][i])
				continue;
			void *p = malloc(SIZE);
			CHECK(p == sets[k][i], "set %zu: malloc returned %p, not %p (position %zu of %zu)",
			      k, p, sets[k][i], i, lens[k]);
		}
	}
	free_bulk(N, v); /* every object is allocated again */
}

static void case_invalid_positions(void)
{
	static const size_t lens[] = {1, 2, 3, 4, 5, 8, 9, 16, 33};
	static const char *const kind[] = {"", "an interior pointer", "a foreign pointer",
					   "the previous pointer again"};
	expect_bad_everywhere(free_with_bad, lens, sizeof lens / sizeof lens[0], 3, kind,
			      "free_bulk");
	/* across calls: the last pointer of one call freed again by the next */
	void *v[8];
	CHECK(malloc_bulk(64, 8, v) == 8, "malloc_bulk");
	free_bulk(8, v);
	expect_report(free_again, v[7], "free_bulk(1) of the last pointer of the call before");
	expect_report(free_again_2, v[7], "free_bulk(2) starting with the last pointer of the call "
		      "before");
	expect_report(free_again_3, v[7], "free_bulk(3) starting with the last pointer of the call "
		      "before");
}

static void case_invalid_reported(void)
{
	expect_report(bad_foreign, NULL, "free_bulk with a stack pointer");
	expect_report(bad_interior, NULL, "free_bulk with an interior pointer");
	expect_report(bad_double, NULL, "free_bulk with the same pointer twice in a row");
	expect_report(bad_large_interior, NULL, "free_bulk with an interior pointer of a large block");
}

/* ---- free_bulk's run (bulk.c): a later free() still finds a double free ----
 * Each state the run can be in before the free() of one of its objects: just pushed; extended
 * by a second free_bulk; partly popped by malloc and by malloc_bulk; followed by a run of
 * another size. The object freed again is the first, a middle or the last of the run. */
struct run_case {
	int state; /* 0..4, as above */
	int which; /* 0 first, 1 middle, 2 last */
};

static void run_double(void *arg)
{
	const struct run_case *z = arg;
	enum { N = 16 };
	void *v[N], *w[N], *o[4];
	CHECK(malloc_bulk(48, N, v) == N && malloc_bulk(48, N, w) == N, "malloc_bulk(48, %d)", N);
	CHECK(malloc_bulk(200, 4, o) == 4, "malloc_bulk(200, 4)");
	free_bulk(N, v);
	if (z->state == 1)
		free_bulk(N, w);
	if (z->state == 2) /* malloc pops the last four of the run */
		for (int i = 0; i < 4; i++)
			CHECK(malloc(48) == v[N - 1 - i], "malloc after free_bulk: not the run's top");
	if (z->state == 3) /* malloc_bulk pops the last four */
		CHECK(malloc_bulk(48, 4, w) == 4 && w[0] == v[N - 4], "malloc_bulk(48, 4): not the run's top");
	if (z->state == 4)
		free_bulk(4, o);
	int last = z->state == 2 || z->state == 3 ? N - 5 : N - 1;
	void *p = v[z->which == 0 ? 0 : z->which == 1 ? N / 2 : last];
	free(p); /* a double free: must be reported */
}

static void case_run_then_free(void)
{
	for (int state = 0; state <= 4; state++)
		for (int which = 0; which <= 2; which++) {
			struct run_case z = {state, which};
			char what[96];
			snprintf(what, sizeof what, "free() of a free_bulk'ed object (state %d, object %d)",
				 state, which);
			expect_report(run_double, &z, what);
		}
	/* round trips: malloc_bulk takes back what free_bulk gave, the same objects, and a free()
	 * between them of an object not in the run is no double free */
	enum { N = 32 };
	void *v[N], *w[N];
	CHECK(malloc_bulk(48, N, v) == N, "malloc_bulk(48, %d)", N);
	for (int round = 0; round < 100; round++) {
		free_bulk(N, v);
		void *q = malloc(48); /* the run's top: malloc pops it */
		CHECK(q == v[N - 1], "round %d: malloc returned %p, not the run's top %p", round, q, v[N - 1]);
		free(q);
		CHECK(malloc_bulk(48, N, w) == N, "malloc_bulk");
		CHECK(!memcmp(v, w, sizeof v), "round %d: malloc_bulk did not return free_bulk's objects",
		      round);
		for (int i = 0; i < N; i++) /* each is the program's again: word 1 is its to keep */
			memset(w[i], 0xa5, 48);
	}
	for (int i = 0; i < N; i++)
		free(v[i]); /* one by one: none is a double free */
	malloc_trim(0);
}

/* ---- free_bulk finds a double free wherever the first free came from ----
 * The array holds an object that is free already: freed by an earlier free_bulk (of the same
 * array, or of the objects in another order), by free(), or earlier in the same array (not next
 * to it). Each must be reported, for every array length (a short run, one run of AVX2 groups,
 * a run with a tail) and position of the repeated object. */
struct again_case {
	int how;  /* 0: free_bulk twice; 1: free() first; 2: twice in one array; 3: free_bulk again
		   * in another order; 4: free_bulk, malloc_bulk takes half back, free_bulk again */
	size_t n; /* the array's length */
	size_t j; /* the repeated object's position */
};

static void bulk_again(void *arg)
{
	const struct again_case *a = arg;
	enum { MAXN = 40 };
	void *v[MAXN], *w[MAXN + 1], *u[MAXN];
	size_t n = a->n;
	CHECK(malloc_bulk(64, n, v) == n, "malloc_bulk(64, %zu)", n);
	switch (a->how) {
	case 0:
		free_bulk(n, v);
		break;
	case 1:
		free(v[a->j]);
		break;
	case 2: /* w: v, with v[j] again at the end (after the others, so never next to itself) */
		memcpy(w, v, n * sizeof *v);
		w[n] = v[a->j];
		free_bulk(n + 1, w);
		return; /* the report must have come in that call */
	case 3: /* u: v rotated to start at v[j] */
		for (size_t i = 0; i < n; i++)
			u[i] = v[(i + a->j) % n];
		free_bulk(n, v);
		free_bulk(n, u);
		return;
	case 4: /* the stack's top half is the program's again; the rest is free */
		free_bulk(n, v);
		CHECK(malloc_bulk(64, n / 2, u) == n / 2, "malloc_bulk(64, %zu)", n / 2);
		break;
	}
	free_bulk(n, v); /* v[j] (all of v, in case 0) is free already: must be reported */
}

static void case_bulk_again(void)
{
	static const size_t lens[] = {2, 3, 4, 5, 8, 13, 16, 33};
	for (int how = 0; how <= 4; how++)
		for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
			size_t n = lens[li];
			size_t pos[] = {0, n / 2, n - 1};
			for (int k = 0; k < 3; k++) {
				struct again_case a = {how, n, pos[k]};
				char what[128];
				snprintf(what, sizeof what, "free_bulk of a free object (case %d, n %zu, at %zu)",
					 how, n, a.j);
				expect_report(bulk_again, &a, what);
			}
		}
}

/* An object whose word 1 starts with the key's byte (the program's data: src/harden.h's
 * FREE_KEY, 0x9e3779b9, low byte first) ends a run: the slow path finds it is not free and
 * frees it. Every object is freed once, and comes back once. */
#define FREE_KEY_LOOKALIKE 0xb9
static void case_key_lookalike(void)
{
	enum { N = 33 };
	for (int round = 0; round < 4; round++) {
		void *v[N], *w[4 * N];
		CHECK(malloc_bulk(64, N, v) == N, "malloc_bulk(64, %d)", N);
		size_t at[] = {0, 5, 16, N - 1};
		for (int k = 0; k <= round; k++)
			((unsigned char *)v[at[k]])[8] = (unsigned char)FREE_KEY_LOOKALIKE;
		free_bulk(N, v);
		CHECK(malloc_bulk(64, 4 * N, w) == 4 * N, "malloc_bulk(64, %d)", 4 * N);
		qsort(w, 4 * N, sizeof *w, cmp_ptr);
		for (size_t i = 1; i < 4 * N; i++)
			CHECK(w[i - 1] != w[i], "round %d: %p handed out twice", round, w[i]);
		free_bulk(4 * N, w);
	}
}

/* ---- randomized: bulk calls against the equivalent single calls ---- */
struct arm {
	void **p;
	size_t *size;
	uint64_t *tag;
	size_t n;
};

static void arm_init(struct arm *a, size_t cap)
{
	a->p = malloc(cap * sizeof *a->p);
	a->size = malloc(cap * sizeof *a->size);
	a->tag = malloc(cap * sizeof *a->tag);
	CHECK(a->p && a->size && a->tag, "malloc");
	a->n = 0;
}

static void arm_verify(const struct arm *a, const char *name)
{
	for (size_t i = 0; i < a->n; i++) {
		size_t bad = pat_bad(a->p[i], a->size[i], a->tag[i]);
		CHECK(bad == SIZE_MAX, "random/%s: live object %zu (%p, %zu B) corrupted at byte %zu",
		      name, i, a->p[i], a->size[i], bad);
	}
}

static void case_random_vs_single(void)
{
	enum { CAP = 40000, STEPS = 4000 };
	struct arm single, bulk;
	arm_init(&single, CAP);
	arm_init(&bulk, CAP);
	void **tmp = malloc(CAP * sizeof *tmp);
	size_t *idx = malloc(CAP * sizeof *idx);
	CHECK(tmp && idx, "malloc");
	uint64_t rng = 2024, tag = 1;
	size_t cls[80];
	size_t nc = class_sizes(cls);
	for (unsigned step = 0; step < STEPS; step++) {
		int do_alloc = single.n < 100 || (single.n < CAP - 600 && rng_below(&rng, 2));
		if (do_alloc) {
			size_t size;
			unsigned r = (unsigned)rng_below(&rng, 10);
			if (r < 5)
				size = cls[rng_below(&rng, nc)];
			else if (r < 9)
				size = 1 + rng_below(&rng, 3000);
			else
				size = 32769 + rng_below(&rng, 200000);
			size_t k = 1 + rng_below(&rng, size > 32768 ? 8 : 300);
			errno = 0;
			size_t got = malloc_bulk(size, k, tmp);
			CHECK(got == k, "random step %u: malloc_bulk(%zu, %zu) = %zu errno %d", step, size,
			      k, got, errno);
			for (size_t j = 0; j < k; j++) {
				void *p = malloc(size);
				CHECK(p, "random step %u: malloc(%zu)", step, size);
				size_t us = malloc_usable_size(p), ub = malloc_usable_size(tmp[j]);
				/* the same size class (a large block's usable size depends on which
				 * cached mapping it reuses: only >= size) */
				CHECK(size > 32768 ? us >= size && ub >= size : us == ub,
				      "random step %u: size %zu: usable %zu from malloc, %zu from "
				      "malloc_bulk", step, size, us, ub);
				pat_fill(p, size, tag);
				pat_fill(tmp[j], size, tag + 1);
				single.p[single.n] = p, single.size[single.n] = size;
				single.tag[single.n++] = tag;
				bulk.p[bulk.n] = tmp[j], bulk.size[bulk.n] = size;
				bulk.tag[bulk.n++] = tag + 1;
				tag += 2;
			}
		} else {
			/* free the same k random live entries from both arms */
			size_t k = 1 + rng_below(&rng, single.n < 400 ? single.n : 400);
			for (size_t j = 0; j < k; j++)
				idx[j] = rng_below(&rng, single.n - j);
			size_t m = 0;
			for (size_t j = 0; j < k; j++) {
				size_t i = idx[j];
				CHECK(pat_bad(single.p[i], single.size[i], single.tag[i]) == SIZE_MAX &&
					      pat_bad(bulk.p[i], bulk.size[i], bulk.tag[i]) == SIZE_MAX,
				      "random step %u: entry %zu corrupted before free", step, i);
				free(single.p[i]);
				if (rng_below(&rng, 20) == 0)
					tmp[m++] = NULL;
				tmp[m++] = bulk.p[i];
				size_t last = single.n - 1;
				single.p[i] = single.p[last], single.size[i] = single.size[last];
				single.tag[i] = single.tag[last];
				bulk.p[i] = bulk.p[last], bulk.size[i] = bulk.size[last];
				bulk.tag[i] = bulk.tag[last];
				single.n--, bulk.n--;
			}
			if (rng_below(&rng, 2))
				shuffle(tmp, m, &rng);
			free_bulk(m, tmp);
		}
		CHECK(single.n == bulk.n, "live sets differ in size");
		if (step % 100 == 99 || step == STEPS - 1) {
			arm_verify(&single, "single");
			arm_verify(&bulk, "bulk");
			/* both arms' live objects are distinct and disjoint from each other */
			size_t total = single.n + bulk.n;
			void **all = malloc(total * sizeof *all);
			size_t *allsz = malloc(total * sizeof *allsz);
			CHECK(all && allsz, "malloc");
			for (size_t i = 0; i < single.n; i++)
				all[i] = single.p[i];
			for (size_t i = 0; i < bulk.n; i++)
				all[single.n + i] = bulk.p[i];
			qsort(all, total, sizeof *all, cmp_ptr);
			for (size_t i = 1; i < total; i++)
				CHECK(all[i - 1] != all[i], "random step %u: %p live twice", step, all[i]);
			free(all);
			free(allsz);
		}
	}
	/* the end: the single arm one by one, the bulk arm in one call */
	for (size_t i = 0; i < single.n; i++)
		free(single.p[i]);
	free_bulk(bulk.n, bulk.p);
	printf("  %u random steps, up to %d live objects per arm\n", STEPS, CAP);
	free(tmp);
	free(idx);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{"every_size", case_every_size},
		{"counts", case_counts},
		{"single_bulk_mix", case_single_bulk_mix},
		{"enomem", case_enomem},
		{"no_leak", case_no_leak},
		{"invalid_reported", case_invalid_reported},
		{"invalid_positions", case_invalid_positions},
		{"short_arrays", case_short_arrays},
		{"run_then_free", case_run_then_free},
		{"bulk_again", case_bulk_again},
		{"key_lookalike", case_key_lookalike},
		{"random_vs_single", case_random_vs_single},
	};
	int failed = run_cases(argc, argv, cases, sizeof cases / sizeof cases[0], 50);
	failed |= rerun_without_avx2(argv);
	return failed != 0;
}
