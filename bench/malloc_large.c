/* malloc_large: large blocks, few live (the family of mimalloc-bench's malloc-large). A single
 * thread keeps SLOTS live blocks of 5..25 MiB; each step frees a random one and allocates a new
 * block of a random size in its place, then touches some of its pages (one write every 64 KiB,
 * as a program filling a sparse buffer would) and checks the markers of another live block.
 * The allocator's large-block path decides the cost: mapping and unmapping, reuse of freed
 * blocks, page faults, and how much of the freed memory stays resident.
 * Fixed work; measures the time (lower is better; compare.sh times the whole process) and the
 * peak RSS.
 * Validation: each block has markers at its first and last byte and on every touched page,
 * checked before it is freed (exit 3 on a mismatch).
 * Usage: malloc_large [STEPS [SLOTS]]
 * Prints: RESULT name=malloc_large ms=... steps=... slots=... mib_allocated=... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define DEFAULT_STEPS 2000
#define DEFAULT_SLOTS 8
#define MIN_BLOCK (5UL << 20)
#define MAX_BLOCK (25UL << 20)
#define TOUCH_STRIDE (64UL << 10)

struct block {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

static void fill_block(struct block *b)
{
	for (size_t off = 0; off < b->size; off += TOUCH_STRIDE)
		b->p[off] = (unsigned char)(b->tag + (off / TOUCH_STRIDE));
	b->p[b->size - 1] = (unsigned char)~b->tag;
}

static unsigned long check_block(const struct block *b)
{
	unsigned long bad = 0;
	for (size_t off = 0; off < b->size; off += TOUCH_STRIDE)
		bad += b->p[off] != (unsigned char)(b->tag + (off / TOUCH_STRIDE));
	bad += b->p[b->size - 1] != (unsigned char)~b->tag;
	return bad;
}

int main(int argc, char **argv)
{
	bench_name = "malloc_large";
	if (argc > 3)
		fatal(EXIT_USAGE, "usage: malloc_large [STEPS [SLOTS]]");
	unsigned long steps = arg_ulong(argc, argv, 1, DEFAULT_STEPS, 1, 1UL << 40);
	unsigned slots = (unsigned)arg_ulong(argc, argv, 2, DEFAULT_SLOTS, 1, 1024);

	struct block *blocks = calloc(slots, sizeof(*blocks));
	if (blocks == NULL)
		fatal(EXIT_SYSTEM, "calloc failed");
	uint64_t rng = 0x1a26eb10c;
	unsigned long bad = 0;
	double mib = 0;

	uint64_t t0 = now_ns();
	for (unsigned long s = 0; s < steps; s++) {
		uint64_t r = rng_next(&rng);
		struct block *b = &blocks[r % slots];
		if (b->p != NULL) {
			bad += check_block(b);
			free(b->p);
		}
		b->size = (size_t)rng_range(&rng, MIN_BLOCK, MAX_BLOCK);
		b->tag = (unsigned char)(r >> 40);
		b->p = xmalloc_or_die(b->size);
		fill_block(b);
		mib += (double)b->size / (1 << 20);
		struct block *other = &blocks[(r >> 20) % slots];
		if (other->p != NULL && other != b)
			bad += other->p[0] != (unsigned char)other->tag ||
			       other->p[other->size - 1] != (unsigned char)~other->tag;
	}
	for (unsigned i = 0; i < slots; i++) {
		if (blocks[i].p != NULL) {
			bad += check_block(&blocks[i]);
			free(blocks[i].p);
		}
	}
	uint64_t t1 = now_ns();
	free(blocks);

	if (bad != 0)
		fatal(EXIT_CORRUPT, "%lu corrupted markers", bad);
	printf("RESULT name=malloc_large ms=%.1f steps=%lu slots=%u mib_allocated=%.0f\n",
	       (double)(t1 - t0) / 1e6, steps, slots, mib);
	return 0;
}
