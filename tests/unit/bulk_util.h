/* bulk_util.h: helpers shared by unit_bulk.c and unit_bulk_mt.c, the tests of malloc_bulk and
 * free_bulk: the size classes and the sizes to test (every class, the smallest request of each,
 * large sizes); check_fresh, which checks a bulk result (aligned, usable, disjoint) and tags its
 * objects with a pattern; verify, which checks that the tagged objects are intact.
 * Header-only, all functions static inline. */
#ifndef UNIT_BULK_UTIL_H
#define UNIT_BULK_UTIL_H

#include <malloc.h>

#include "api_util.h"
#include "slubmalloc.h"

#define MIB (1024UL * 1024UL)

/* The size classes as README.md describes them: 16..128 by 16, then 8 per power of two. */
static inline size_t class_sizes(size_t *out)
{
	size_t n = 0;
	for (size_t s = 16; s <= 128; s += 16)
		out[n++] = s;
	for (unsigned l = 7; l < 15; l++)
		for (size_t k = 1; k <= 8; k++)
			out[n++] = ((size_t)1 << l) + k * ((size_t)1 << (l - 3));
	return n;
}

/* Every class size, the smallest request of each class, 1, and large sizes. */
static inline size_t test_sizes(size_t *out)
{
	size_t cls[80], nc = class_sizes(cls), n = 0;
	CHECK(nc == 72 && cls[nc - 1] == 32768, "class table: %zu classes, last %zu", nc, cls[nc - 1]);
	out[n++] = 1;
	for (size_t i = 0; i < nc; i++) {
		if (i > 0)
			out[n++] = cls[i - 1] + 1;
		out[n++] = cls[i];
	}
	static const size_t large[] = {32769, 40000, 65536, 100000, MIB, 3 * MIB + 5};
	for (size_t i = 0; i < sizeof large / sizeof large[0]; i++)
		out[n++] = large[i];
	return n;
}

/* Checks a bulk result: n objects, aligned, usable, disjoint; then tags them. */
static inline void check_fresh(void **v, size_t n, size_t size, uint64_t tag0, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		CHECK(v[i], "%s: size %zu: entry %zu of %zu is NULL", what, size, i, n);
		CHECK(((uintptr_t)v[i] & 15) == 0, "%s: size %zu: %p not 16-byte aligned", what, size,
		      v[i]);
		size_t u = malloc_usable_size(v[i]);
		CHECK(u >= size, "%s: size %zu: usable size %zu", what, size, u);
	}
	check_disjoint(v, n, size, what);
	for (size_t i = 0; i < n; i++)
		pat_fill(v[i], size, tag0 + i);
}

static inline void verify(void **v, size_t n, size_t size, uint64_t tag0, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		if (!v[i])
			continue;
		size_t bad = pat_bad(v[i], size, tag0 + i);
		CHECK(bad == SIZE_MAX, "%s: size %zu: object %zu (%p) of %zu corrupted at byte %zu", what,
		      size, i, v[i], n, bad);
	}
}

#endif
