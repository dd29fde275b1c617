/* bulk.h: malloc_bulk's and free_bulk's helpers the other parts share (bulk.c): the run check
 * and pointer copies. */
#ifndef SM_BULK_H
#define SM_BULK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

/* the run check of free_bulk, and pointer copies (AVX2 when the CPU has it) */
void **sm_bulk_runs(struct tcache *tc, void **src, void **end, struct cache *typed);
size_t sm_copy_ptrs(void **dst, void *const *src, size_t n); /* returns n */
/* dst[0, n) = src[0, n), two pointers per move, inline (short arrays: no call). */
static inline void copy_ptrs(void **dst, void *const *src, size_t n)
{
	size_t m = n & ~(size_t)1;
	for (size_t i = 0; i < m; i += 2)
		__builtin_memcpy(dst + i, src + i, 2 * sizeof(void *));
	if (n & 1)
		dst[m] = src[m];
}

/* malloc_bulk's entry and counting form (sm_prof_entries) */
extern void *const sm_bulk_prof_entry[2];

/* Whether the n pointers at ptrs (n = 2 or 3: the short bulk frees) may go on a stack as one
 * push: each unlike the one before it (the first unlike top, the stack's top) and, after the
 * first (which the caller checked as free() does, finding d, its page's descriptor), an object
 * in the first one's page, where is_object()'s one test is exact. */
static inline bool short_run_ok(const struct slab *d, void *const *ptrs, size_t n, void *top)
{
	uintptr_t first = (uintptr_t)ptrs[0], lo = (uintptr_t)d->start;
	uint64_t inverse = d->inverse, bad_q_bits = d->bad_q_bits;
	if (ptrs[0] == top)
		return false;
	for (size_t i = 1; i < n; i++) {
		uintptr_t a = (uintptr_t)ptrs[i];
		if (((a ^ first) >> SPAGE_SHIFT) | (((a - lo) * inverse) & bad_q_bits) || ptrs[i] == ptrs[i - 1])
			return false;
	}
	return true;
}

#pragma GCC visibility pop

#endif
