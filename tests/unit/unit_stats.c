/* unit_stats: statistics, options and giving memory back (slubmalloc.h, malloc.h), linked with
 * libslubmalloc as users do. Checks: the census's active objects equal exactly what this
 * program holds (size classes, a typed cache, large blocks); the event counters add up to the
 * program's calls (SLUBMALLOC_STATS=1, in a re-executed child); a thread's refills take
 * twice as many objects from its second one on (its stacks grew), and again half a first-size
 * stack after malloc_trim (counted the same way); the table printed at exit
 * (SLUBMALLOC_STATS_FILE) has the slabinfo 2.1 header and the right row; options parse (good,
 * bad and empty values: one warning line each, the default kept); malloc_trim gives resident
 * memory back and says so; mallinfo2 agrees with slub_stats_get; mallopt and malloc_info
 * behave as glibc's. Each case runs in a child of its own (run_cases). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "slubmalloc.h"
#include "api_util.h"

static char self[4096];

static void census_matches_live(void)
{
	enum { N80 = 5000, N2K = 700, NT = 900 };
	static void *a[N80], *b[N2K], *t[NT];
	struct slub_cache *tc = slub_cache_create("unit_stats_obj", 200, 0, 0, NULL);
	CHECK(tc, "slub_cache_create");
	size_t base80 = stats_row("kmalloc-80").active_objs;
	size_t base2k = stats_row("kmalloc-2048").active_objs;
	struct slub_stats t0;
	slub_stats_get(&t0, NULL, 0);
	for (int i = 0; i < N80; i++)
		CHECK(a[i] = malloc(72), "malloc");
	for (int i = 0; i < N2K; i++)
		CHECK(b[i] = malloc(2000), "malloc");
	for (int i = 0; i < NT; i++)
		CHECK(t[i] = slub_cache_alloc(tc), "slub_cache_alloc");
	void *big1 = malloc(1 << 20), *big2 = malloc(3 << 20);
	CHECK(big1 && big2, "large malloc");
	struct slub_stats t1;
	slub_stats_get(&t1, NULL, 0);
	CHECK(stats_row("kmalloc-80").active_objs == base80 + N80, "kmalloc-80: %zu active, want %zu",
	      stats_row("kmalloc-80").active_objs, base80 + N80);
	CHECK(stats_row("kmalloc-2048").active_objs == base2k + N2K, "kmalloc-2048: %zu, want %zu",
	      stats_row("kmalloc-2048").active_objs, base2k + N2K);
	struct slub_cache_stats tr = stats_row("unit_stats_obj");
	CHECK(tr.active_objs == NT, "typed cache: %zu active, want %d", tr.active_objs, NT);
	CHECK(tr.objsize >= 200 && tr.num_objs >= NT && tr.num_slabs >= 1, "typed row");
	CHECK(t1.large_count == t0.large_count + 2, "large blocks %zu -> %zu", t0.large_count,
	      t1.large_count);
	CHECK(t1.large_bytes >= t0.large_bytes + (4 << 20), "large bytes");
	CHECK(t1.small_bytes_in_use >= t0.small_bytes_in_use + N80 * 80 + N2K * 2048,
	      "small bytes in use %zu -> %zu", t0.small_bytes_in_use, t1.small_bytes_in_use);
	CHECK(t1.bytes_in_use == t1.small_bytes_in_use + t1.large_bytes, "bytes_in_use total");
	CHECK(t1.bytes_mapped >= t1.bytes_in_use && t1.bytes_resident > 0, "mapped/resident");
	/* the sum of the rows is the total */
	static struct slub_cache_stats rows[256];
	size_t n = slub_stats_get(NULL, rows, 256), sum = 0;
	for (size_t i = 0; i < n; i++) {
		CHECK(rows[i].active_objs <= rows[i].num_objs, "%s: active > num", rows[i].name);
		CHECK(rows[i].active_slabs <= rows[i].num_slabs, "%s: slabs", rows[i].name);
		sum += rows[i].active_objs * rows[i].objsize;
	}
	CHECK(sum == t1.small_bytes_in_use, "rows sum %zu != total %zu", sum, t1.small_bytes_in_use);
	/* free half, in another order than allocated */
	for (int i = 0; i < N80; i += 2)
		free(a[i]);
	for (int i = 0; i < NT; i += 3)
		slub_cache_free(tc, t[i]);
	free(big1);
	CHECK(stats_row("kmalloc-80").active_objs == base80 + N80 / 2, "kmalloc-80 after free: %zu",
	      stats_row("kmalloc-80").active_objs);
	CHECK(stats_row("unit_stats_obj").active_objs == NT - (NT + 2) / 3, "typed after free: %zu",
	      stats_row("unit_stats_obj").active_objs);
	struct slub_stats t2;
	slub_stats_get(&t2, NULL, 0);
	CHECK(t2.large_count == t0.large_count + 1, "large after free");
}

/* Runs this program again with `arg` and the extra environment; returns its stderr. */
static char *rerun(const char *arg, char *const *env_extra, int *status)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0, "pipe");
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		for (char *const *e = env_extra; *e; e++)
			putenv(*e);
		execl(self, self, arg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	char *err = read_all(pfd[0]);
	close(pfd[0]);
	CHECK(waitpid(pid, status, 0) == pid, "waitpid");
	return err;
}

static unsigned count_lines(const char *s, const char *needle)
{
	unsigned n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* child: with SLUBMALLOC_STATS=1, the counters add up to this program's calls */
static int child_events(void)
{
	enum { N = 3000 };
	static void *v[N];
	struct slub_stats t0;
	slub_stats_get(&t0, NULL, 0);
	struct slub_cache_stats r0 = stats_row("kmalloc-2048");
	for (int i = 0; i < N; i++)
		if (!(v[i] = malloc(2000)))
			return 2;
	struct slub_cache_stats r1 = stats_row("kmalloc-2048");
	void *big = malloc(300000); /* a large block's request counts too */
	struct slub_stats t1;
	slub_stats_get(&t1, NULL, 0);
	free(big);
	uint64_t asked = t1.bytes_requested - t0.bytes_requested;
	for (int i = 0; i < N; i++)
		free(v[i]);
	struct slub_cache_stats r2 = stats_row("kmalloc-2048");
	struct slub_stats t;
	slub_stats_get(&t, NULL, 0);
	uint64_t allocs = (r1.alloc_fastpath + r1.alloc_slowpath) -
			  (r0.alloc_fastpath + r0.alloc_slowpath);
	uint64_t frees = (r2.free_fastpath + r2.free_remote) - (r1.free_fastpath + r1.free_remote);
	fprintf(stderr, "events: counted %d allocs %llu (slow %llu) frees %llu slabs +%llu "
		"bytes requested %llu\n",
		t.events_counted, (unsigned long long)allocs,
		(unsigned long long)(r1.alloc_slowpath - r0.alloc_slowpath),
		(unsigned long long)frees,
		(unsigned long long)(r1.slabs_allocated - r0.slabs_allocated),
		(unsigned long long)asked);
	if (asked != (uint64_t)N * 2000 + 300000)
		return 1;
	if (!t.events_counted || allocs != N || frees != N || r1.alloc_slowpath == r0.alloc_slowpath ||
	    r1.slabs_allocated - r0.slabs_allocated < N / 32)
		return 1;
	return 0;
}

/* Runs the child `arg` with SLUBMALLOC_STATS=1; it must exit 0. */
static void stats_child_passes(const char *arg)
{
	char *env[] = {"SLUBMALLOC_STATS=1", "SLUBMALLOC_STATS_FILE=/dev/null", NULL};
	int st;
	char *err = rerun(arg, env, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d, stderr: %s", arg, st, err);
	free(err);
}

static void events_counted(void)
{
	stats_child_passes("child_events");
	/* unset: nothing counted */
	struct slub_stats t;
	slub_stats_get(&t, NULL, 0);
	CHECK(!t.events_counted && stats_row("kmalloc-2048").free_fastpath == 0,
	      "events counted without SLUBMALLOC_STATS");
}

/* The first `n` allocations of 1000 bytes (kmalloc-1024: 16 slots per stack at first, 32
 * grown) one at a time: at[k] = the index of the allocation that took the k-th slow path (a
 * refill); returns how many there were. The objects are kept in v. */
static unsigned refill_points(void **v, unsigned n, unsigned *at)
{
	unsigned k = 0;
	uint64_t slow = stats_row("kmalloc-1024").alloc_slowpath;
	for (unsigned i = 0; i < n; i++) {
		if (!(v[i] = malloc(1000)))
			return 0;
		uint64_t now = stats_row("kmalloc-1024").alloc_slowpath;
		if (now != slow)
			at[k++] = i;
		slow = now;
	}
	return k;
}

/* Thread body of child_grow: a producer's refills (sm_refill) of kmalloc-1024. The first takes
 * a page's worth, 4 objects (FIRST_REFILL_BYTES); the second half a stack, 8; from the third
 * on the stacks have grown and a refill takes 16. malloc_trim gives the thread its first
 * size back. Returns 0 when so. */
static void *grow_thread(void *arg)
{
	(void)arg;
	enum { N = 40 };
	static void *v[N];
	static const unsigned want[] = {0, 4, 12, 28}; /* 4, 8, 16, then 16 objects */
	for (int round = 0; round < 2; round++) {
		unsigned at[N], k = refill_points(v, N, at);
		int ok = k == 4;
		for (unsigned j = 0; ok && j < 4; j++)
			ok = at[j] == want[j];
		fprintf(stderr, "grow: round %d: %u refills at", round, k);
		for (unsigned j = 0; j < k; j++)
			fprintf(stderr, " %u", at[j]);
		fprintf(stderr, " (want 0 4 12 28)\n");
		for (unsigned i = 0; i < N; i++)
			free(v[i]);
		if (!ok)
			return (void *)1;
		malloc_trim(0); /* the caches drained, the stacks back to their first size */
	}
	return NULL;
}

/* child: with SLUBMALLOC_STATS=1, a fresh thread's refills grow as grow_thread says */
static int child_grow(void)
{
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, grow_thread, NULL) || pthread_join(t, &r))
		return 2;
	return r != NULL;
}

static void stacks_grow(void)
{
	stats_child_passes("child_grow");
}

/* child: leaves 777 objects of kmalloc-2048 allocated at exit */
static int child_leave(void)
{
	for (int i = 0; i < 777; i++)
		if (!malloc(2000))
			return 2;
	return 0;
}

static void table_at_exit(void)
{
	char path[] = "/tmp/unit_stats_file.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	static char envfile[64 + sizeof path];
	snprintf(envfile, sizeof envfile, "SLUBMALLOC_STATS_FILE=%s", path);
	char *env[] = {"SLUBMALLOC_STATS=1", envfile, NULL};
	int st;
	char *err = rerun("child_leave", env, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d: %s", st, err);
	CHECK(!strstr(err, "slabinfo"), "the table went to stderr, not the file: %s", err);
	char *s = read_all(fd);
	close(fd);
	unlink(path);
	CHECK(strstr(s, "\nslabinfo - version: 2.1\n# name            <active_objs> <num_objs> "
			"<objsize> <objperslab> <pagesperslab> : slabdata <active_slabs> "
			"<num_slabs>\n"), "no slabinfo 2.1 header in: %.400s", s);
	const char *r = strstr(s, "\nkmalloc-2048 ");
	CHECK(r, "no kmalloc-2048 row");
	unsigned long active, num, objsize, perslab, pages, aslabs, nslabs;
	CHECK(sscanf(r + 1, "kmalloc-2048 %lu %lu %lu %lu %lu : slabdata %lu %lu", &active, &num,
		     &objsize, &perslab, &pages, &aslabs, &nslabs) == 7, "row: %.120s", r + 1);
	CHECK(active >= 777 && active < 777 + 16 && objsize == 2048 && num >= active &&
	      nslabs * perslab == num && aslabs <= nslabs,
	      "row figures: active %lu num %lu size %lu", active, num, objsize);
	CHECK(strstr(s, "alloc_fastpath alloc_slowpath refill_takeall free_fastpath free_remote "
			"cmpxchg_retry slabs_allocated slabs_freed"), "no event header");
	CHECK(strstr(s, "\nbytes_in_use ") && strstr(s, "\nbytes_mapped ") &&
	      strstr(s, "\nbytes_resident ") && strstr(s, "\nlarge_allocations "), "no totals");
	free(s);
	free(err);
}

static void options_parse(void)
{
	static const struct {
		const char *env;   /* the variable=value */
		const char *warn;  /* expected warning (NULL: none) */
		const char *shown; /* expected in SLUBMALLOC_VERBOSE=1 output */
	} cases[] = {
		{"SLUBMALLOC_MIN_PARTIAL=5", NULL, "SLUBMALLOC_MIN_PARTIAL=5 "},
		{"SLUBMALLOC_MIN_PARTIAL=abc", "SLUBMALLOC_MIN_PARTIAL=\"abc\"", "SLUBMALLOC_MIN_PARTIAL=2 "},
		{"SLUBMALLOC_MIN_PARTIAL=", "SLUBMALLOC_MIN_PARTIAL=\"\"", "SLUBMALLOC_MIN_PARTIAL=2 "},
		{"SLUBMALLOC_MIN_PARTIAL=99999999999999999999999", "SLUBMALLOC_MIN_PARTIAL=", "SLUBMALLOC_MIN_PARTIAL=2 "},
		{"SLUBMALLOC_PURGE_DELAY_MS=0", NULL, "SLUBMALLOC_PURGE_DELAY_MS=0 "},
		{"SLUBMALLOC_PURGE_DELAY_MS=-5", "SLUBMALLOC_PURGE_DELAY_MS=\"-5\"", "SLUBMALLOC_PURGE_DELAY_MS=1000 "},
		{"SLUBMALLOC_STATS=2", "SLUBMALLOC_STATS=\"2\"", "SLUBMALLOC_STATS=0 "},
		{"SLUBMALLOC_THP=1", NULL, "SLUBMALLOC_THP=1 "},
		{"SLUBMALLOC_THP=yes", "SLUBMALLOC_THP=\"yes\"", "SLUBMALLOC_THP=0 "},
		{"SLUBMALLOC_DEBUG=FZ,kmalloc-64", NULL, "SLUBMALLOC_DEBUG=FZ,kmalloc-64 "},
		{"SLUBMALLOC_DEBUG=", NULL, "SLUBMALLOC_DEBUG=FZPUQIME "},
		{"SLUBMALLOC_DEBUG=qi,large", NULL, "SLUBMALLOC_DEBUG=QI,large "},
		{"SLUBMALLOC_DEBUG=XQ", "SLUBMALLOC_DEBUG=\"XQ\"", "SLUBMALLOC_DEBUG=- "},
		{"SLUBMALLOC_STATS_FILE=", "SLUBMALLOC_STATS_FILE=\"\"", "SLUBMALLOC_STATS_FILE=(stderr) "},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *env[] = {(char *)cases[i].env, "SLUBMALLOC_VERBOSE=1", NULL};
		int st;
		char *err = rerun("noop", env, &st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", cases[i].env, st);
		unsigned warnings = count_lines(err, "slubmalloc: warning:");
		if (cases[i].warn) {
			CHECK(warnings == 1 && strstr(err, cases[i].warn),
			      "%s: want one warning naming %s, got: %s", cases[i].env, cases[i].warn, err);
		} else {
			CHECK(warnings == 0, "%s: unexpected warning: %s", cases[i].env, err);
		}
		CHECK(strstr(err, cases[i].shown), "%s: verbose output lacks \"%s\": %s", cases[i].env,
		      cases[i].shown, err);
		free(err);
	}
}

static void *hold_and_wait(void *arg)
{
	/* this thread's stacks keep objects; it sleeps through the trim */
	void *v[64];
	for (int i = 0; i < 64; i++)
		v[i] = malloc(256);
	for (int i = 0; i < 64; i++)
		free(v[i]);
	pthread_barrier_wait(arg);
	pthread_barrier_wait(arg);
	return NULL;
}

static void trim_releases(void)
{
	enum { N = 600000 }; /* 600000 x 256 B: about 150 MiB */
	void **v = malloc(N * sizeof *v);
	CHECK(v, "malloc");
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, hold_and_wait, &bar) == 0, "pthread_create");
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++) {
		CHECK(v[i] = malloc(256), "malloc");
		memset(v[i], 0x5a, 256);
	}
	long rss_full = proc_status_kb("VmRSS");
	for (int i = 0; i < N; i++)
		free(v[i]);
	long rss_freed = proc_status_kb("VmRSS");
	int r = malloc_trim(0);
	int r2 = malloc_trim(0); /* nothing freed in between: nothing to give back */
	long rss_trim = proc_status_kb("VmRSS");
	printf("RSS KiB: full %ld, after free %ld, after malloc_trim %ld (returned %d)\n", rss_full,
	       rss_freed, rss_trim, r);
	CHECK(r == 1, "malloc_trim returned %d after freeing 150 MiB", r);
	CHECK(rss_full - rss_trim > 140000, "malloc_trim gave back only %ld KiB",
	      rss_full - rss_trim);
	CHECK(r2 == 0, "a second malloc_trim released memory again");
	struct slub_cache_stats k = stats_row("kmalloc-256");
	CHECK(k.num_slabs <= 2, "kmalloc-256 keeps %zu slabs after malloc_trim", k.num_slabs);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	free(v);
}

/* malloc_trim(pad) leaves up to pad bytes of freed slab pages in memory (glibc: the free bytes
 * kept at the heap's top); malloc_trim(0) then gives them back. 24 MiB stays under the dirty
 * pages' cap, so no purge happens at free. Before 2026-12-07 pad was ignored. */
static void trim_pad_keeps(void)
{
	enum { N = 96000 }; /* 96000 x 256 B: 24 MiB */
	void **v = malloc(N * sizeof *v);
	CHECK(v, "malloc");
	for (int i = 0; i < N; i++) {
		CHECK(v[i] = malloc(256), "malloc");
		memset(v[i], 0x5a, 256);
	}
	for (int i = 0; i < N; i++)
		free(v[i]);
	long rss_freed = proc_status_kb("VmRSS");
	malloc_trim(64 << 20);
	long rss_pad = proc_status_kb("VmRSS");
	int r = malloc_trim(0);
	long rss_zero = proc_status_kb("VmRSS");
	printf("RSS KiB: after free %ld, after malloc_trim(64 MiB) %ld, after malloc_trim(0) %ld "
	       "(returned %d)\n", rss_freed, rss_pad, rss_zero, r);
	CHECK(rss_freed - rss_pad < 4096, "malloc_trim(64 MiB) gave back %ld KiB of 24 MiB",
	      rss_freed - rss_pad);
	CHECK(r == 1 && rss_pad - rss_zero > 20000, "malloc_trim(0) after it gave back %ld KiB "
	      "(returned %d)", rss_pad - rss_zero, r);
	free(v);
}

/* malloc_trim reaches a thread that only frees other threads' objects smaller than a cache line
 * (they go to its remote stack): it drains its whole cache at its next flush, as every thread
 * that only frees does (trim.c). Before 2026-12-04 the remote stack's flush skipped that, and
 * the consumer kept its cached 1000-byte objects, and so their slabs. */
enum { TC_SMALL = 20000, TC_KEPT = 100 };
static void *tc_small[TC_SMALL];
static sem_t tc_kept, tc_trimmed, tc_freed, tc_counted;

static void *tc_consumer(void *arg)
{
	(void)arg;
	void *v[TC_KEPT];
	for (int i = 0; i < TC_KEPT; i++)
		v[i] = malloc(1000);
	for (int i = 0; i < TC_KEPT; i++)
		free(v[i]); /* cached on this thread's stacks */
	sem_post(&tc_kept);
	sem_wait(&tc_trimmed);
	for (int i = 0; i < TC_SMALL; i++)
		free(tc_small[i]);
	sem_post(&tc_freed);
	sem_wait(&tc_counted); /* (its exit would drain its cache) */
	return NULL;
}

static void trim_reaches_consumer(void)
{
	sem_init(&tc_kept, 0, 0);
	sem_init(&tc_trimmed, 0, 0);
	sem_init(&tc_freed, 0, 0);
	sem_init(&tc_counted, 0, 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, tc_consumer, NULL) == 0, "pthread_create");
	sem_wait(&tc_kept);
	for (int i = 0; i < TC_SMALL; i++)
		CHECK(tc_small[i] = malloc(16), "malloc");
	size_t before = stats_row("kmalloc-1024").active_slabs;
	malloc_trim(0);
	sem_post(&tc_trimmed);
	sem_wait(&tc_freed);
	size_t after = stats_row("kmalloc-1024").active_slabs;
	printf("kmalloc-1024 active slabs: %zu before malloc_trim, %zu after the consumer's frees\n",
	       before, after);
	CHECK(before > 0, "the consumer cached no 1000-byte object");
	CHECK(after == 0, "the consumer kept %zu slabs of kmalloc-1024 after malloc_trim and %d "
	      "frees", after, TC_SMALL);
	sem_post(&tc_counted);
	pthread_join(t, NULL);
}

static void mallinfo2_consistent(void)
{
	enum { N = 1000 };
	static void *v[N];
	struct mallinfo2 m0 = mallinfo2();
	struct slub_stats t0;
	slub_stats_get(&t0, NULL, 0);
	CHECK(m0.uordblks == t0.small_bytes_in_use && m0.arena == t0.slab_bytes_mapped &&
	      m0.hblkhd == t0.large_bytes && m0.hblks == t0.large_count,
	      "mallinfo2 and slub_stats_get disagree");
	for (int i = 0; i < N; i++)
		CHECK(v[i] = malloc(2000), "malloc");
	void *big = malloc(5 << 20);
	CHECK(big, "malloc");
	struct mallinfo2 m1 = mallinfo2();
	CHECK(m1.uordblks == m0.uordblks + (size_t)N * 2048, "uordblks %zu -> %zu", m0.uordblks,
	      m1.uordblks);
	CHECK(m1.hblks == m0.hblks + 1 && m1.hblkhd >= m0.hblkhd + (5 << 20), "hblks/hblkhd");
	CHECK(m1.arena >= m1.uordblks && m1.fordblks == m1.arena - m1.uordblks, "arena/fordblks");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo m = mallinfo(); /* the old interface must agree too */
#pragma GCC diagnostic pop
	CHECK((size_t)m.uordblks == m1.uordblks, "mallinfo");
	for (int i = 0; i < N; i++)
		free(v[i]);
	free(big);
	CHECK(mallinfo2().uordblks == m0.uordblks, "uordblks after free");
}

static void glibc_extras(void)
{
	CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 0) == 1 &&
	      mallopt(M_ARENA_MAX, 1) == 1 && mallopt(12345, 1) == 1, "mallopt");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f, "open_memstream");
	CHECK(malloc_info(0, f) == 0, "malloc_info");
	fclose(f);
	CHECK(strstr(buf, "<malloc version=\"1\">") && strstr(buf, "</malloc>") &&
	      strstr(buf, "<heap nr=\"0\">"), "malloc_info XML: %s", buf);
	free(buf);
	errno = 0;
	CHECK(malloc_info(1, stdout) == -1 && errno == EINVAL, "malloc_info(1)");
	struct capture c;
	capture_start(&c);
	malloc_stats();
	char *s = capture_end(&c);
	CHECK(strstr(s, "Arena 0:\nsystem bytes     = ") && strstr(s, "max mmap bytes   = "),
	      "malloc_stats: %s", s);
	free(s);
}

int main(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0, "readlink");
	self[n] = 0;
	if (argc == 2 && !strcmp(argv[1], "noop"))
		return 0;
	if (argc == 2 && !strcmp(argv[1], "child_events"))
		return child_events();
	if (argc == 2 && !strcmp(argv[1], "child_leave"))
		return child_leave();
	if (argc == 2 && !strcmp(argv[1], "child_grow"))
		return child_grow();
	static const struct test_case cases[] = {
		{"census_matches_live", census_matches_live},
		{"events_counted", events_counted},
		{"stacks_grow", stacks_grow},
		{"table_at_exit", table_at_exit},
		{"options_parse", options_parse},
		{"trim_releases", trim_releases},
		{"trim_pad_keeps", trim_pad_keeps},
		{"trim_reaches_consumer", trim_reaches_consumer},
		{"mallinfo2_consistent", mallinfo2_consistent},
		{"glibc_extras", glibc_extras},
	};
	return run_cases(argc, argv, cases, sizeof cases / sizeof cases[0], 60);
}
