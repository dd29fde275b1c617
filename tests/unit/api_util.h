/* api_util.h: helpers for the unit tests of the public API (unit_bulk, unit_typed), which link
 * libslubmalloc.so the way users do: each test case runs in a forked child so one failure does
 * not hide the others; stderr capture; running a function in a child and collecting its signal
 * and stderr; /proc/self/status readers; the live slab count and a cache's row (from
 * slub_stats_get); a PRNG;
 * whole-object byte patterns.
 * Header-only, all functions static. */
#ifndef UNIT_API_UTIL_H
#define UNIT_API_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "slubmalloc.h"

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline size_t rng_below(uint64_t *s, size_t n)
{
	return (size_t)(rng_next(s) % n);
}

static inline void shuffle(void **v, size_t n, uint64_t *s)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rng_below(s, i);
		void *t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* The pattern of an object tagged `tag`: word w (8 bytes at offset 8w) holds
 * (tag + w) * K in memory order; objects above 64 KiB are sampled (every 4 KiB, and both ends). */
#define PAT_K 0x9E3779B97F4A7C15ULL

static inline unsigned char pat_byte(uint64_t tag, size_t i)
{
	uint64_t x = (tag + i / 8) * PAT_K;
	return (unsigned char)(x >> (8 * (i & 7)));
}

/* Whether word w of an object of `size` bytes carries the pattern. */
static inline int pat_word_used(size_t size, size_t w)
{
	return size <= 65536 || w < 8 || (w + 9) * 8 > size || w % 512 == 0;
}

static inline void pat_fill(void *p, size_t size, uint64_t tag)
{
	unsigned char *b = p;
	size_t words = size / 8;
	for (size_t w = 0; w < words; w++)
		if (pat_word_used(size, w)) {
			uint64_t x = (tag + w) * PAT_K;
			memcpy(b + 8 * w, &x, 8);
		}
	for (size_t i = words * 8; i < size; i++)
		b[i] = pat_byte(tag, i);
}

/* The first offset that does not hold the pattern, or SIZE_MAX when all do. */
static inline size_t pat_bad(const void *p, size_t size, uint64_t tag)
{
	const unsigned char *b = p;
	size_t words = size / 8;
	for (size_t w = 0; w < words; w++)
		if (pat_word_used(size, w)) {
			uint64_t x = (tag + w) * PAT_K, y;
			memcpy(&y, b + 8 * w, 8);
			if (x != y)
				for (size_t i = 8 * w;; i++)
					if (b[i] != pat_byte(tag, i))
						return i;
		}
	for (size_t i = words * 8; i < size; i++)
		if (b[i] != pat_byte(tag, i))
			return i;
	return SIZE_MAX;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

/* Sorts a copy of v[0..n) and checks that no two objects of `size` bytes overlap. */
static inline void check_disjoint(void *const *v, size_t n, size_t size, const char *what)
{
	void **s = malloc((n ? n : 1) * sizeof *s);
	CHECK(s, "malloc for the sort");
	memcpy(s, v, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_ptr);
	for (size_t i = 1; i < n; i++)
		CHECK((uintptr_t)s[i - 1] + size <= (uintptr_t)s[i],
		      "%s: objects %p and %p of %zu bytes overlap (or are the same)", what, s[i - 1],
		      s[i], size);
	free(s);
}

/* A field of /proc/self/status in KiB (VmSize, VmRSS), or -1. */
static inline long proc_status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static inline double now_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads all of fd into a NUL-terminated malloc'ed buffer. */
static inline char *read_all(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	CHECK(buf, "malloc");
	for (;;) {
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap *= 2);
			CHECK(nb, "realloc");
			buf = nb;
		}
		ssize_t r = read(fd, buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	return buf;
}

/* Everything written to fd 2 between capture_start and capture_end (in this process). */
struct capture {
	int saved, fd;
};

static inline void capture_start(struct capture *c)
{
	char path[] = "/tmp/slub_unit_stderr.XXXXXX";
	fflush(stderr);
	c->fd = mkstemp(path);
	CHECK(c->fd >= 0, "mkstemp: %s", strerror(errno));
	unlink(path);
	c->saved = dup(2);
	CHECK(c->saved >= 0 && dup2(c->fd, 2) == 2, "dup2");
}

static inline char *capture_end(struct capture *c)
{
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	lseek(c->fd, 0, SEEK_SET);
	char *s = read_all(c->fd);
	close(c->fd);
	return s;
}

/* The row of cache `name` (zeros if it has none). */
static inline struct slub_cache_stats stats_row(const char *name)
{
	static struct slub_cache_stats rows[256];
	size_t n = slub_stats_get(NULL, rows, 256);
	struct slub_cache_stats r = {.name = ""};
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].name, name))
			r = rows[i];
	return r;
}

/* Slabs alive now, over every cache, from slub_stats_get's census. */
static inline long live_slabs(void)
{
	static struct slub_cache_stats rows[256];
	size_t n = slub_stats_get(NULL, rows, 256);
	long slabs = 0;
	for (size_t i = 0; i < n; i++)
		slabs += (long)rows[i].num_slabs;
	return slabs;
}

/* Runs fn(arg) in a child with stderr captured (no core dump). Returns the wait status;
 * *err gets the child's stderr (malloc'ed). */
static inline int run_in_child(void (*fn)(void *), void *arg, char **err)
{
	int pfd[2];
	CHECK(pipe(pfd) == 0, "pipe");
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		close(pfd[0]);
		dup2(pfd[1], 2);
		close(pfd[1]);
		fn(arg);
		_exit(0);
	}
	close(pfd[1]);
	*err = read_all(pfd[0]);
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
	return st;
}

/* The child must have died of SIGABRT after writing a `slubmalloc:` line to stderr. */
static inline void expect_report(void (*fn)(void *), void *arg, const char *what)
{
	char *err;
	int st = run_in_child(fn, arg, &err);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
	      "%s: child should abort, but %s %d (stderr: \"%s\")", what,
	      WIFSIGNALED(st) ? "got signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
	      err);
	CHECK(strstr(err, "slubmalloc:"), "%s: no `slubmalloc:` line on stderr (got \"%s\")", what, err);
	free(err);
}

/* Each test case runs in a child of its own, under a time limit; returns failures. */
struct test_case {
	const char *name;
	void (*fn)(void);
};

/* A bulk free with one bad pointer: an array of n, position j, kind (0: none, else a kind the
 * test defines; the last kind is "the previous pointer again", which has no position 0). */
struct bad_at {
	size_t n, j;
	int kind;
};

/* For each length in lens: fn(&b) with kind 0 must exit 0 without a word on stderr; with every
 * kind 1..kinds at every position it must report and abort. call and names[] word the
 * failures. */
static inline void expect_bad_everywhere(void (*fn)(void *), const size_t *lens, size_t nlens,
					 int kinds, const char *const *names, const char *call)
{
	for (size_t l = 0; l < nlens; l++) {
		struct bad_at b = {.n = lens[l], .j = 0, .kind = 0};
		char *err;
		int st = run_in_child(fn, &b, &err);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !*err,
		      "%s of %zu valid pointers: status %d, stderr \"%s\"", call, b.n, st, err);
		free(err);
		for (b.j = 0; b.j < b.n; b.j++)
			for (b.kind = 1; b.kind <= kinds; b.kind++) {
				if (b.kind == kinds && b.j == 0)
					continue;
				char what[128];
				snprintf(what, sizeof what, "%s of %zu with %s at %zu", call, b.n,
					 names[b.kind], b.j);
				expect_report(fn, &b, what);
			}
	}
}

/* Runs this program again, with the same arguments, under SLUBMALLOC_AVX2=0 (the bulk calls'
 * checks and copies one pointer at a time), unless that variable is set already; returns 1 if
 * that run failed. */
static inline int rerun_without_avx2(char **argv)
{
	if (getenv("SLUBMALLOC_AVX2"))
		return 0;
	printf("again with SLUBMALLOC_AVX2=0:\n");
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		setenv("SLUBMALLOC_AVX2", "0", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Whether name is in the list, separated by colons. */
static inline int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ':') && (p[n] == ':' || !p[n]))
			return 1;
	return 0;
}

/* Runs every case, or only those named on the command line (argv[1..]), less those that
 * SLUB_TEST_SKIP lists, separated by colons (tests/cross.sh: qemu-user does not enforce
 * RLIMIT_AS, so `enomem`; and the cases too slow under emulation). */
static inline int run_cases(int argc, char **argv, const struct test_case *t, size_t n,
			    unsigned limit_s)
{
	int failed = 0;
	size_t ran = 0;
	const char *skip = getenv("SLUB_TEST_SKIP");
	for (size_t i = 0; i < n; i++) {
		int wanted = argc < 2;
		for (int a = 1; a < argc; a++)
			wanted |= !strcmp(argv[a], t[i].name);
		if (skip && in_list(skip, t[i].name)) {
			printf("SKIP %s (SLUB_TEST_SKIP)\n", t[i].name);
			continue;
		}
		if (!wanted)
			continue;
		ran++;
		double t0 = now_sec();
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			alarm(limit_s);
			t[i].fn();
			fflush(stdout);
			_exit(0);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0)
			CHECK(errno == EINTR, "waitpid");
		double dt = now_sec() - t0;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			printf("PASS %s (%.1fs)\n", t[i].name, dt);
		} else {
			failed++;
			if (WIFSIGNALED(st))
				printf("FAIL %s (signal %d%s, %.1fs)\n", t[i].name, WTERMSIG(st),
				       WTERMSIG(st) == SIGALRM ? ": over the time limit" : "", dt);
			else
				printf("FAIL %s (exit %d, %.1fs)\n", t[i].name, WEXITSTATUS(st), dt);
		}
		fflush(stdout);
	}
	printf("%s: %zu cases, %d failed\n", argv[0], ran, failed);
	return failed ? 1 : 0;
}

#endif
