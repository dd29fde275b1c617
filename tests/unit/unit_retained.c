/* unit_retained.c: the index of retained large ranges (retained.c) against a model, a map of
 * pages. Ranges added merge with the ranges they touch; a fit is the lowest range long enough;
 * every range handed back is a whole run of free pages, with the guards of its two ends; the
 * byte count follows. The pool of nodes grows past its first 1,024 (mremap) on the way. The
 * addresses are made up: the index never touches them. A range found is cut from below, as
 * large.c cuts a block from it. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "retained.h"

enum { PAGES = 4096 };
#define PG ((uintptr_t)4096)
#define BASE ((uintptr_t)1 << 40)

static unsigned char in_set[PAGES + 1]; /* [PAGES] stays 0: the end */
static uint8_t guard_lo[PAGES], guard_hi[PAGES]; /* the guards a page's range was added with */
static size_t model_bytes;
static unsigned long rnd_state = 88172645463325252UL;

static unsigned rnd(unsigned n)
{
	rnd_state ^= rnd_state << 13, rnd_state ^= rnd_state >> 7, rnd_state ^= rnd_state << 17;
	return (unsigned)(rnd_state % n);
}

/* The run of free pages that starts at page p: its length. */
static unsigned run_at(unsigned p)
{
	unsigned e = p;
	while (in_set[e])
		e++;
	return e - p;
}

/* r, handed back by the index, must be a whole run of the model: taken out of it. */
static void check_run(const struct lcached *r, const char *what)
{
	unsigned p = (unsigned)((r->base - BASE) / PG), n = (unsigned)(r->len / PG);
	CHECK(r->base >= BASE && (r->base - BASE) % PG == 0 && r->len % PG == 0 && n > 0 &&
		      p + n <= PAGES, "%s: range %#lx + %zu is off the map", what,
	      (unsigned long)r->base, r->len);
	CHECK(p == 0 || !in_set[p - 1], "%s: page %u before the range is free too (not merged)",
	      what, p - 1);
	CHECK(run_at(p) == n, "%s: range at page %u is %u pages, its run %u", what, p, n, run_at(p));
	uint8_t want = (guard_lo[p] & GUARD_BEFORE) | (guard_hi[p + n - 1] & GUARD_AFTER);
	CHECK(r->guard == want, "%s: guards %u, want %u", what, r->guard, want);
	for (unsigned i = p; i < p + n; i++)
		in_set[i] = 0;
	model_bytes -= r->len;
}

static void add(unsigned p, unsigned n, uint8_t guard)
{
	struct lcached r = {.base = BASE + p * PG, .len = n * PG, .guard = guard};
	for (unsigned i = p; i < p + n; i++) {
		in_set[i] = 1;
		guard_lo[i] = i == p ? guard : 0;
		guard_hi[i] = i == p + n - 1 ? guard : 0;
	}
	model_bytes += r.len;
	CHECK(sm_ret_add(&r), "sm_ret_add(page %u, %u pages) failed", p, n);
}

/* A range found by fit or at (r, taken out of the model by check_run): its lower n pages are
 * cut, or all of it one time in four; the rest goes back, with the guard after alone. */
static void cut(uint32_t node, struct lcached *r, unsigned n)
{
	unsigned p = (unsigned)((r->base - BASE) / PG), len = (unsigned)(r->len / PG);
	if (n >= len || rnd(4) == 0)
		n = len;
	struct lcached rest = {.base = r->base + n * PG, .len = (len - n) * PG,
			       .guard = r->guard & GUARD_AFTER};
	for (unsigned i = p + n; i < p + len; i++)
		in_set[i] = 1;
	if (n < len)
		guard_lo[p + n] = 0;
	model_bytes += rest.len;
	sm_ret_cut(node, &rest);
}

/* The lowest run of at least n pages, or -1. */
static int model_fit(unsigned n)
{
	for (unsigned p = 0; p < PAGES;) {
		if (!in_set[p]) {
			p++;
			continue;
		}
		unsigned len = run_at(p);
		if (len >= n)
			return (int)p;
		p += len;
	}
	return -1;
}

int main(void)
{
	/* every other page: 2,048 ranges that do not touch, more than the first pool holds */
	for (unsigned p = 0; p < PAGES; p += 2)
		add(p, 1, p ? 0 : GUARD_BEFORE);
	CHECK(sm_ret_bytes() == model_bytes, "bytes %zu, want %zu", sm_ret_bytes(), model_bytes);
	struct lcached r;
	CHECK(!sm_ret_fit(2 * PG, &r), "a fit of 2 pages among single pages");
	/* the pages between: all merge into one range, the guards of the two ends kept */
	for (unsigned p = 1; p < PAGES - 1; p += 2)
		add(p, 1, 0);
	add(PAGES - 1, 1, GUARD_AFTER);
	CHECK(sm_ret_pop(&r), "no range after the merges");
	CHECK(r.base == BASE && r.len == PAGES * PG && r.guard == (GUARD_BEFORE | GUARD_AFTER),
	      "merged range %#lx + %zu, guards %u", (unsigned long)r.base, r.len, r.guard);
	check_run(&r, "merged");
	CHECK(!sm_ret_pop(&r) && sm_ret_bytes() == 0, "ranges left after the last was taken");

	/* random adds, fits, takes at an address and pops against the model */
	unsigned long ops[4] = {0};
	for (int step = 0; step < 200000; step++) {
		unsigned op = rnd(4), p = rnd(PAGES), n = 1 + rnd(16);
		if (op == 0) { /* add a free stretch of the map */
			unsigned k = 0;
			while (k < n && p + k < PAGES && !in_set[p + k])
				k++;
			if (!k)
				continue;
			add(p, k, (uint8_t)rnd(4));
		} else if (op == 1) {
			int want = model_fit(n);
			uint32_t node = sm_ret_fit(n * PG, &r);
			bool got = node != 0;
			CHECK(got == (want >= 0), "fit of %u pages: %d, the model %d", n, got, want);
			if (!got)
				continue;
			CHECK(r.base == BASE + (unsigned)want * PG, "fit of %u pages at page %lu, lowest %d", n,
			      (unsigned long)((r.base - BASE) / PG), want);
			check_run(&r, "fit");
			cut(node, &r, n);
		} else if (op == 2) {
			bool want = in_set[p] && (p == 0 || !in_set[p - 1]) && run_at(p) >= n;
			uint32_t node = sm_ret_at(BASE + p * PG, n * PG, &r);
			bool got = node != 0;
			CHECK(got == want, "take at page %u of %u pages: %d, the model %d", p, n, got, want);
			if (!got)
				continue;
			check_run(&r, "at");
			cut(node, &r, n);
		} else if (rnd(8) == 0) {
			if (!sm_ret_pop(&r))
				continue;
			check_run(&r, "pop");
		} else {
			continue;
		}
		ops[op]++;
		CHECK(sm_ret_bytes() == model_bytes, "step %d: bytes %zu, want %zu", step,
		      sm_ret_bytes(), model_bytes);
	}
	while (sm_ret_pop(&r))
		check_run(&r, "the last pops");
	for (unsigned p = 0; p < PAGES; p++)
		CHECK(!in_set[p], "page %u is free in the model, in no range of the index", p);
	printf("unit_retained: %lu adds, %lu fits, %lu takes, %lu pops: all matched the model\n",
	       ops[0], ops[1], ops[2], ops[3]);
	return 0;
}
