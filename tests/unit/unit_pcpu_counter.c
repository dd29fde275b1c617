/* unit_pcpu_counter.c: struct pcpu_counter and pcpu_this_add.
 * Checks: read / read_positive / sum / compare on known values (folding at +-batch);
 * threads adding random amounts (small ones that stay per-CPU, large ones that fold, negative
 * ones) to several counters while another thread reads: every sum is exact afterwards and the
 * approximate read is within batch x CPUs of it; with positive adds only, sums seen during
 * the run never go backwards; pcpu_this_add from many threads loses no update; a destroyed
 * counter still counts (under its lock).
 * Runs in rseq mode, then re-executes itself under GLIBC_TUNABLES=glibc.pthread.rseq=0. */
#include <pthread.h>
#include <stdatomic.h>

#include "percpu_internal.h"
#include "pcpu_test.h"

#define TH 4
#define NCOUNTERS 3
#define ADDS 2000000

static int ncpu;
static struct pcpu_counter ctr[NCOUNTERS];
static long long expect[TH][NCOUNTERS];
static atomic_int stop_reader;
static int positive_only;
static long *this_var;
static long this_expect[TH];

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return (uint32_t)(*s >> 11);
}

static long long llabs_(long long v) { return v < 0 ? -v : v; }

static void test_basic(void)
{
	struct pcpu_counter c;
	CHECK(pcpu_counter_init(&c, 5) == 0, "init");
	CHECK(c.batch >= 32 && c.batch >= 2 * ncpu, "batch %d", c.batch);
	CHECK(pcpu_counter_read(&c) == 5 && pcpu_counter_sum(&c) == 5, "initial value");
	pcpu_counter_add(&c, 10);
	CHECK(pcpu_counter_sum(&c) == 15, "sum after a small add: %lld", pcpu_counter_sum(&c));
	CHECK(pcpu_counter_read(&c) >= 5 && pcpu_counter_read(&c) <= 15, "read %lld",
	      pcpu_counter_read(&c));
	pcpu_counter_add(&c, 1000); /* >= batch: folds this CPU's delta */
	CHECK(pcpu_counter_sum(&c) == 1015, "sum %lld", pcpu_counter_sum(&c));
	CHECK(llabs_(pcpu_counter_read(&c) - 1015) < (long long)c.batch * ncpu, "read %lld",
	      pcpu_counter_read(&c));
	pcpu_counter_sub(&c, 2000);
	pcpu_counter_inc(&c);
	pcpu_counter_dec(&c);
	CHECK(pcpu_counter_sum(&c) == -985, "sum %lld", pcpu_counter_sum(&c));
	CHECK(pcpu_counter_read_positive(&c) == 0, "read_positive of a negative count");
	CHECK(pcpu_counter_compare(&c, -985) == 0, "compare equal");
	CHECK(pcpu_counter_compare(&c, -984) == -1 && pcpu_counter_compare(&c, -986) == 1,
	      "compare near");
	CHECK(pcpu_counter_compare(&c, 1000000) == -1 && pcpu_counter_compare(&c, -1000000) == 1,
	      "compare far");
	for (int i = 0; i < 100000; i++)
		pcpu_counter_add(&c, (i & 1) ? 7 : -3);
	CHECK(pcpu_counter_sum(&c) == -985 + 50000 * 4, "sum after a loop %lld",
	      pcpu_counter_sum(&c));
	pcpu_counter_destroy(&c);
	pcpu_counter_add(&c, 1);
	CHECK(pcpu_counter_read(&c) == pcpu_counter_sum(&c), "destroyed counter");

	/* many counters side by side: the deltas of one CPU are packed, each stays separate */
	static struct pcpu_counter many[1000];
	for (int i = 0; i < 1000; i++)
		CHECK(pcpu_counter_init(&many[i], i) == 0, "init many");
	for (int r = 0; r < 50; r++)
		for (int i = 0; i < 1000; i++)
			pcpu_counter_add(&many[i], i % 7 - 3);
	for (int i = 0; i < 1000; i++) {
		CHECK(pcpu_counter_sum(&many[i]) == i + 50LL * (i % 7 - 3), "counter %d: %lld", i,
		      pcpu_counter_sum(&many[i]));
		pcpu_counter_destroy(&many[i]);
	}
}

static void *adder(void *arg)
{
	long t = (long)arg;
	uint64_t s = 0x243f6a8885a308d3ull * (uint64_t)(t + 1);
	long long mine[NCOUNTERS] = { 0 };
	long mine_this = 0;
	for (int i = 0; i < ADDS; i++) {
		uint32_t x = rnd(&s);
		int k = x % NCOUNTERS;
		long long a;
		if ((x >> 8) % 64 == 0)
			a = (long long)((x >> 14) % 5000) - (positive_only ? 0 : 2500);
		else
			a = (long long)((x >> 14) % 9) - (positive_only ? 0 : 4);
		pcpu_counter_add(&ctr[k], a);
		mine[k] += a;
		long v = (x >> 20) % 3 + 1;
		pcpu_this_add(this_var, v);
		mine_this += v;
	}
	memcpy(expect[t], mine, sizeof mine);
	this_expect[t] = mine_this;
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	long long last[NCOUNTERS];
	for (int k = 0; k < NCOUNTERS; k++)
		last[k] = pcpu_counter_sum(&ctr[k]);
	long n = 0;
	while (!atomic_load(&stop_reader)) {
		for (int k = 0; k < NCOUNTERS; k++) {
			long long s = pcpu_counter_sum(&ctr[k]);
			if (positive_only)
				CHECK(s >= last[k], "counter %d sum went back: %lld -> %lld", k, last[k], s);
			last[k] = s;
			(void)pcpu_counter_read(&ctr[k]);
		}
		n++;
	}
	return (void *)n;
}

static void run_adders(int pos)
{
	positive_only = pos;
	memset(expect, 0, sizeof expect);
	memset(this_expect, 0, sizeof this_expect);
	for (int k = 0; k < NCOUNTERS; k++)
		CHECK(pcpu_counter_init(&ctr[k], 1000 * k) == 0, "init");
	this_var = pcpu_alloc_type(long);
	CHECK(this_var, "pcpu_alloc_type");
	pthread_t t[TH], rd;
	atomic_store(&stop_reader, 0);
	CHECK(!pthread_create(&rd, NULL, reader, NULL), "pthread_create");
	double t0 = pcpu_test_now();
	for (long i = 0; i < TH; i++)
		CHECK(!pthread_create(&t[i], NULL, adder, (void *)i), "pthread_create");
	for (int i = 0; i < TH; i++)
		pthread_join(t[i], NULL);
	double dt = pcpu_test_now() - t0;
	atomic_store(&stop_reader, 1);
	void *sums;
	pthread_join(rd, &sums);
	for (int k = 0; k < NCOUNTERS; k++) {
		long long e = 1000 * k;
		for (int i = 0; i < TH; i++)
			e += expect[i][k];
		long long s = pcpu_counter_sum(&ctr[k]), r = pcpu_counter_read(&ctr[k]);
		CHECK(s == e, "counter %d: sum %lld, expected %lld", k, s, e);
		CHECK(llabs_(r - s) < (long long)ctr[k].batch * ncpu,
		      "counter %d: read %lld too far from %lld", k, r, s);
		pcpu_counter_destroy(&ctr[k]);
	}
	long e = 0, got = 0;
	for (int i = 0; i < TH; i++)
		e += this_expect[i];
	for (int c = 0; c < ncpu; c++)
		got += *pcpu_ptr(this_var, c);
	CHECK(got == e, "pcpu_this_add: %ld, expected %ld", got, e);
	pcpu_free(this_var);
	printf("  %d threads x %d adds (%s) to %d counters + pcpu_this_add: exact; %ld concurrent "
	       "sums; %.0f ns per add+this_add\n", TH, ADDS, pos ? "positive" : "mixed sign",
	       NCOUNTERS, (long)sums, dt * 1e9 / ((double)ADDS * TH / 2));
}

static void body(int rseq)
{
	(void)rseq;
	ncpu = pcpu_nr_cpus();
	test_basic();
	run_adders(0);
	run_adders(1);
}

int main(int argc, char **argv)
{
	(void)argc;
	return pcpu_test_main("unit_pcpu_counter", argv, body);
}
