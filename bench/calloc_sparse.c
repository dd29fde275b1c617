/* calloc_sparse: zeroed blocks a program touches sparsely, as hash tables, bitmaps and arrays
 * indexed by id are. A single thread callocs COUNT blocks of SIZE bytes, writes one cache line
 * of each (a different line each time), reads another, and keeps them all. Then it frees them,
 * and does it again: the second round reuses freed, dirty memory.
 * What decides the cost: whether calloc knows that fresh memory is zero already. An allocator
 * that clears every block touches every page of it: time and resident memory.
 * Fixed work; measures the time (lower is better) and the peak RSS.
 * Validation: every byte read is zero, and each written line holds its mark (exit 3 otherwise).
 * Usage: calloc_sparse [SIZE [COUNT]]
 * Prints: RESULT name=calloc_sparse ms=... first_ms=... size=... count=... peak_rss_kib=... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"

#define DEFAULT_SIZE 32768
#define DEFAULT_COUNT 4000
#define LINE 64

/* One round: COUNT callocs, one line written and one read in each. Returns its time in ns. */
static uint64_t round_of(unsigned char **v, size_t size, size_t count, unsigned tag)
{
	uint64_t t0 = now_ns();
	size_t lines = size / LINE;
	for (size_t i = 0; i < count; i++) {
		unsigned char *p = calloc(1, size);
		if (!p)
			fatal(2, "calloc(1, %zu) failed", size);
		size_t w = (i * 7 % lines) * LINE, r = ((i * 7 + lines / 2) % lines) * LINE;
		if (p[r] | p[size - 1] | p[w])
			fatal(3, "calloc(1, %zu): block %zu is not zero", size, i);
		p[w] = (unsigned char)(tag + i);
		v[i] = p;
	}
	uint64_t t = now_ns() - t0;
	for (size_t i = 0; i < count; i++)
		if (v[i][(i * 7 % lines) * LINE] != (unsigned char)(tag + i))
			fatal(3, "block %zu lost its mark", i);
	return t;
}

int main(int argc, char **argv)
{
	bench_name = "calloc_sparse";
	size_t size = arg_ulong(argc, argv, 1, DEFAULT_SIZE, LINE, 1UL << 30);
	size_t count = arg_ulong(argc, argv, 2, DEFAULT_COUNT, 1, 1UL << 24);
	unsigned char **v = xmalloc_or_die(count * sizeof *v);
	uint64_t first = round_of(v, size, count, 1);
	for (size_t i = 0; i < count; i++) { /* dirty: the next round reuses written memory */
		v[i][0] = 0xa5;
		v[i][size - 1] = 0x5a;
		free(v[i]);
	}
	uint64_t second = round_of(v, size, count, 2);
	for (size_t i = 0; i < count; i++)
		free(v[i]);
	free(v);
	printf("RESULT name=calloc_sparse ms=%.1f first_ms=%.1f size=%zu count=%zu peak_rss_kib=%ld\n",
	       (double)(first + second) / 1e6, (double)first / 1e6, size, count, peak_rss_kib());
	return 0;
}
