/* unit_pcpu_alloc.c: the per-CPU area allocator (pcpu_alloc / pcpu_free / pcpu_ptr).
 * Checks: argument errors; many sizes (1 B .. SLUB_PCPU_MAX_SIZE) and alignments (0 .. 4096)
 * with thousands of live areas: every CPU's copy is aligned, starts zeroed, lies exactly
 * c * SLUB_PCPU_STRIDE after CPU 0's, and is independent of every other copy and area (a
 * per-(area, CPU) pattern survives all other writes); areas freed and reused come back zeroed;
 * empty chunks go back to the OS; several threads allocating and freeing at once; the
 * this-CPU accessor; an invalid pcpu_free aborts with a report.
 * Runs in rseq mode, then re-executes itself in the fallback mode (pcpu_test.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "percpu_internal.h"
#include "pcpu_test.h"

#define LIVE 3000
#define OPS 40000

struct area {
	unsigned char *p;
	size_t size, align;
	uint32_t tag;
};

static int ncpu;

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return (uint32_t)(*s >> 11);
}

static unsigned char pat(uint32_t tag, int cpu, size_t i)
{
	return (unsigned char)(tag * 131u + (unsigned)cpu * 29u + (unsigned)i * 7u + 1u);
}

static size_t pick_size(uint64_t *s)
{
	uint32_t r = rnd(s) % 100;
	if (r < 60)
		return 1 + rnd(s) % 64;
	if (r < 90)
		return 1 + rnd(s) % 1024;
	if (r < 99)
		return 1 + rnd(s) % 8192;
	return 1 + rnd(s) % SLUB_PCPU_MAX_SIZE;
}

static size_t pick_align(uint64_t *s)
{
	uint32_t r = rnd(s) % 14;
	return r == 13 ? 0 : (size_t)1 << r; /* 0, 1 .. 4096 */
}

static void fill(struct area *a)
{
	for (int c = 0; c < ncpu; c++) {
		unsigned char *q = pcpu_ptr(a->p, c);
		for (size_t i = 0; i < a->size; i++)
			q[i] = pat(a->tag, c, i);
	}
}

static void verify(const struct area *a, const char *when)
{
	for (int c = 0; c < ncpu; c++) {
		const unsigned char *q = pcpu_ptr(a->p, c);
		for (size_t i = 0; i < a->size; i++)
			CHECK(q[i] == pat(a->tag, c, i),
			      "%s: area %p size %zu cpu %d byte %zu overwritten", when, (void *)a->p,
			      a->size, c, i);
	}
}

static void new_area(struct area *a, uint64_t *s, uint32_t tag)
{
	a->size = pick_size(s);
	a->align = pick_align(s);
	a->tag = tag;
	a->p = pcpu_alloc(a->size, a->align);
	CHECK(a->p, "pcpu_alloc(%zu, %zu) failed", a->size, a->align);
	size_t al = a->align < 4 ? 4 : a->align;
	for (int c = 0; c < ncpu; c++) {
		unsigned char *q = pcpu_ptr(a->p, c);
		CHECK((uintptr_t)q % al == 0, "cpu %d copy %p not aligned to %zu", c, (void *)q, al);
		CHECK(q == a->p + (size_t)c * SLUB_PCPU_STRIDE, "cpu %d copy not at the stride", c);
		for (size_t i = 0; i < a->size; i++)
			CHECK(q[i] == 0, "fresh area size %zu cpu %d byte %zu not zero", a->size, c, i);
	}
	fill(a);
}

static void test_errors(void)
{
	errno = 0;
	CHECK(!pcpu_alloc(0, 8) && errno == EINVAL, "size 0 accepted");
	errno = 0;
	CHECK(!pcpu_alloc(SLUB_PCPU_MAX_SIZE + 1, 8) && errno == EINVAL, "oversize accepted");
	errno = 0;
	CHECK(!pcpu_alloc(8, 3) && errno == EINVAL, "align 3 accepted");
	errno = 0;
	CHECK(!pcpu_alloc(8, 8192) && errno == EINVAL, "align 8192 accepted");
	pcpu_free(NULL);
	void *big = pcpu_alloc(SLUB_PCPU_MAX_SIZE, 4096);
	CHECK(big, "a full-unit area failed");
	pcpu_free(big);
	long *l = pcpu_alloc_type(long);
	CHECK(l && (uintptr_t)l % __alignof__(long) == 0, "pcpu_alloc_type");
	for (int c = 0; c < ncpu; c++)
		*pcpu_ptr(l, c) = c;
	for (int i = 0; i < 1000; i++) {
		int c = pcpu_this_cpu();
		CHECK(c >= 0 && c < ncpu, "pcpu_this_cpu() = %d", c);
		long v = *pcpu_this_ptr(l);
		CHECK(v >= 0 && v < ncpu, "pcpu_this_ptr gave %ld", v);
	}
	pcpu_free(l);
}

static void test_random(void)
{
	static struct area live[LIVE];
	uint64_t s = 0x9e3779b97f4a7c15ull;
	uint32_t tag = 1;
	for (int i = 0; i < LIVE; i++)
		new_area(&live[i], &s, tag++);
	for (int op = 0; op < OPS; op++) {
		struct area *a = &live[rnd(&s) % LIVE];
		verify(a, "before free");
		pcpu_free(a->p);
		new_area(a, &s, tag++);
		if (op % 5000 == 0)
			for (int i = 0; i < LIVE; i++)
				verify(&live[i], "sweep");
	}
	for (int i = 0; i < LIVE; i++)
		verify(&live[i], "final sweep");
	size_t peak = pcpu_chunk_count();
	for (int i = 0; i < LIVE; i++)
		pcpu_free(live[i].p);
	printf("  random: %d areas live, %d replaced, %zu chunks at the end -> %zu after freeing\n",
	       LIVE, OPS, peak, pcpu_chunk_count());
	CHECK(pcpu_chunk_count() == 1, "empty chunks not returned: %zu left", pcpu_chunk_count());
	/* the space is reusable and zero again */
	for (int i = 0; i < 200; i++) {
		new_area(&live[i], &s, tag++);
	}
	for (int i = 0; i < 200; i++)
		pcpu_free(live[i].p);
}

#define TH 4
static void *thread_main(void *arg)
{
	uint64_t s = 0x1234567ull * ((uintptr_t)arg + 1);
	struct area mine[64];
	uint32_t tag = (uint32_t)(uintptr_t)arg << 24;
	for (int i = 0; i < 64; i++)
		new_area(&mine[i], &s, tag++);
	for (int op = 0; op < 6000; op++) {
		struct area *a = &mine[rnd(&s) % 64];
		verify(a, "threaded");
		pcpu_free(a->p);
		new_area(a, &s, tag++);
	}
	for (int i = 0; i < 64; i++) {
		verify(&mine[i], "threaded end");
		pcpu_free(mine[i].p);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[TH];
	for (long i = 0; i < TH; i++)
		CHECK(!pthread_create(&t[i], NULL, thread_main, (void *)i), "pthread_create");
	for (int i = 0; i < TH; i++)
		pthread_join(t[i], NULL);
}

static void test_invalid_free(void)
{
	char *p = pcpu_alloc(64, 8);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(2); /* the report is expected; keep the log clean */
		pcpu_free(p + 4);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "interior pcpu_free did not abort");
	pcpu_free(p);
}

static void body(int rseq)
{
	(void)rseq;
	ncpu = pcpu_nr_cpus();
	test_errors();
	test_random();
	test_threads();
	test_invalid_free();
}

int main(int argc, char **argv)
{
	(void)argc;
	return pcpu_test_main("unit_pcpu_alloc", argv, body);
}
