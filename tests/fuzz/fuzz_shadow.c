/* fuzz_shadow.c: the shadow model of the fuzz_ops harness (the operations are in fuzz_ops.c):
 * what each of the 64 slots holds, and the checks on every block. The checks run after every
 * operation that hands out memory; on any breach the harness aborts (a libFuzzer crash) with
 * a line "fuzz_ops: VIOLATION: ...":
 *   - no two live blocks overlap ([p, p + malloc_usable_size(p)) ranges are disjoint);
 *   - every block is aligned to 16, and to the requested alignment;
 *   - malloc_usable_size(p) >= the requested size (pvalloc: the size rounded to a page);
 *   - calloc memory reads as zero over the requested bytes (also for recycled blocks);
 *   - each block is filled over its usable size with a per-slot pattern (in full up to 64 KiB;
 *     above, its first and last 16 KiB and the start of every 4 KiB page), verified intact at
 *     free / free_bulk / remote free, at check operations (which also require an unchanged
 *     malloc_usable_size), and across realloc (the prefix min(old, new requested size) must
 *     survive a move);
 *   - failing calls return NULL (or an error code) with the documented errno and leave the
 *     caller's block untouched.
 * FUZZ_OPS_INJECT=<mode> (tests/fuzz/run_fuzz.sh --selftest) makes the harness plant a fault of
 * its own (a corrupt byte, a live block handed out twice, a dirty calloc block, a usable size
 * one byte short, a misaligned pointer) so that each check can be seen to fire. */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_shadow.h"
#include "config.h"

struct slot slots[NSLOT];
size_t live_bytes;
static uint64_t seed_counter;

/* ---- the fault injection of the self-test ---- */
enum inject { INJ_NONE, INJ_CORRUPT, INJ_OVERLAP, INJ_CALLOC, INJ_USABLE, INJ_ALIGN };
static enum inject inject;
static unsigned inject_countdown = 8; /* plant the fault at the 8th opportunity */

static int inject_now(enum inject mode)
{
	return inject == mode && inject_countdown && --inject_countdown == 0;
}

/* ---- reports ---- */
__attribute__((noreturn, format(printf, 1, 2))) void violation(const char *fmt, ...)
{
	va_list ap;
	fputs("fuzz_ops: VIOLATION: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

/* ---- patterns: 8-byte words derived from the seed and the word's index ---- */
static inline uint64_t pat_word(uint64_t seed, size_t k)
{
	uint64_t x = seed ^ (k * 0x9E3779B97F4A7C15ULL);
	x ^= x >> 29;
	return x * 0xBF58476D1CE4E5B9ULL;
}

static inline unsigned char pat_byte(uint64_t seed, size_t i)
{
	return (unsigned char)(pat_word(seed, i / 8) >> (i % 8 * 8));
}

static void fill(unsigned char *p, size_t from, size_t to, uint64_t seed)
{
	size_t i = from;
	for (; i < to && i % 8; i++)
		p[i] = pat_byte(seed, i);
	for (; i + 8 <= to; i += 8) {
		uint64_t w = pat_word(seed, i / 8);
		memcpy(p + i, &w, 8);
	}
	for (; i < to; i++)
		p[i] = pat_byte(seed, i);
}

/* The first byte in [from, to) that differs from the pattern, or SIZE_MAX. */
static size_t verify(const unsigned char *p, size_t from, size_t to, uint64_t seed)
{
	size_t i = from;
	for (; i < to && i % 8; i++)
		if (p[i] != pat_byte(seed, i))
			return i;
	for (; i + 8 <= to; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (w != pat_word(seed, i / 8))
			break;
	}
	for (; i < to; i++)
		if (p[i] != pat_byte(seed, i))
			return i;
	return SIZE_MAX;
}

/* The bytes of a block of usable size u that carry its pattern: all of them up to FULL_MAX;
 * above, the first and last EDGE bytes and the first 64 bytes of every 4 KiB page in between
 * (every page is still touched, so a page lost or moved by mremap is seen; filling megabytes
 * in full would cut the fuzzer's speed tenfold). */
#define FULL_MAX (64UL << 10)
#define EDGE (16UL << 10)

/* The patterned span that starts at a: its end, and where the next span starts. */
static size_t span_end(size_t u, size_t a, size_t *next)
{
	if (u <= FULL_MAX || a >= u - EDGE)
		return *next = u;
	if (a < EDGE)
		return *next = EDGE;
	*next = a + 4096 < u - EDGE ? a + 4096 : u - EDGE;
	return a + 64;
}

static void fill_block(unsigned char *p, size_t u, uint64_t seed)
{
	for (size_t a = 0, next; a < u; a = next)
		fill(p, a, span_end(u, a, &next), seed);
}

/* The first patterned byte below limit that differs, or SIZE_MAX; u as given to fill_block. */
size_t verify_block(const unsigned char *p, size_t u, size_t limit, uint64_t seed)
{
	for (size_t a = 0, next; a < u && a < limit; a = next) {
		size_t end = span_end(u, a, &next);
		size_t bad = verify(p, a, end < limit ? end : limit, seed);
		if (bad != SIZE_MAX)
			return bad;
	}
	return SIZE_MAX;
}

void check_intact(int s, const char *when)
{
	struct slot *sl = &slots[s];
	size_t bad = verify_block(sl->p, sl->usable, sl->usable, sl->seed);
	if (bad != SIZE_MAX)
		violation("%s: block %p of slot %d (requested %zu, usable %zu) corrupted at byte %zu "
			  "(0x%02x, expected 0x%02x)", when, (void *)sl->p, s, sl->req, sl->usable, bad,
			  sl->p[bad], pat_byte(sl->seed, bad));
}

/* ---- the shadow model ---- */
static size_t usable_of(void *p, size_t req)
{
	size_t u = malloc_usable_size(p);
	if (req && inject_now(INJ_USABLE))
		u = req - 1; /* self-test: as if the block were one byte short */
	return u;
}

/* Checks a block just handed out for slot s (not yet recorded) and records it: alignment,
 * usable size, no overlap with any other live block. zero_len: bytes calloc must have zeroed. */
void adopt(int s, void *vp, size_t req, size_t align, size_t zero_len, const char *what)
{
	unsigned char *p = vp;
	if (inject_now(INJ_ALIGN))
		p += 8; /* self-test: as if the allocator returned a misaligned block */
	for (int j = 0; inject == INJ_OVERLAP && j < NSLOT; j++)
		if (slots[j].p && j != s) {
			if (inject_now(INJ_OVERLAP))
				p = slots[j].p; /* self-test: as if a live block were handed out again */
			break;
		}
	if (align < MIN_ALIGN)
		align = MIN_ALIGN;
	if ((uintptr_t)p % align)
		violation("%s(%zu): %p is not aligned to %zu", what, req, (void *)p, align);
	size_t u = usable_of(p, req);
	uintptr_t a = (uintptr_t)p;
	for (int j = 0; j < NSLOT; j++) {
		struct slot *o = &slots[j];
		if (!o->p || j == s)
			continue;
		uintptr_t b = (uintptr_t)o->p;
		if (a < b + o->usable && b < a + (u > req ? u : req))
			violation("%s(%zu): [%p, +%zu) overlaps live block [%p, +%zu) of slot %d", what,
				  req, (void *)p, u, (void *)o->p, o->usable, j);
	}
	if (u < req)
		violation("%s(%zu): %p has usable size %zu < requested %zu", what, req, (void *)p, u,
			  req);
	if (zero_len) {
		if (inject_now(INJ_CALLOC))
			p[zero_len / 2] = 0x5A; /* self-test: as if calloc left old contents */
		static const unsigned char zeros[4096];
		for (size_t off = 0; off < zero_len; off += sizeof zeros) {
			size_t n = zero_len - off < sizeof zeros ? zero_len - off : sizeof zeros;
			if (!memcmp(p + off, zeros, n))
				continue;
			for (size_t i = off; i < off + n; i++)
				if (p[i])
					violation("%s(%zu): byte %zu of %p is 0x%02x, not zero", what,
						  req, i, (void *)p, p[i]);
		}
	}
	struct slot *sl = &slots[s];
	sl->p = p;
	sl->req = req;
	sl->usable = u;
	sl->seed = ++seed_counter * 0xD6E8FEB86659FD93ULL;
	fill_block(p, u, sl->seed);
	live_bytes += u;
	if (u && inject_now(INJ_CORRUPT))
		p[u - 1] ^= 1; /* self-test: a stray write into the block */
}

/* Forgets slot s after checking its contents; the caller frees the block. */
void *release(int s, const char *when)
{
	struct slot *sl = &slots[s];
	check_intact(s, when);
	void *p = sl->p;
	live_bytes -= sl->usable;
	sl->p = NULL;
	return p;
}

void free_slot(int s)
{
	if (slots[s].p)
		free(release(s, "free"));
}

/* Room for another block of about `size` bytes under LIVE_MAX? */
int room_for(size_t size)
{
	return size <= LIVE_MAX && live_bytes <= LIVE_MAX - size;
}

void expect_fail(void *p, int err, const char *what)
{
	if (p)
		violation("%s succeeded (%p), expected NULL", what, p);
	if (errno != err)
		violation("%s: errno %d, expected %d", what, errno, err);
}

/* The self-test's fault, from FUZZ_OPS_INJECT (LLVMFuzzerInitialize calls this). */
void inject_init(void)
{
	const char *m = getenv("FUZZ_OPS_INJECT");
	if (m && *m) {
		static const char *names[] = { "", "corrupt", "overlap", "calloc", "usable", "align" };
		for (unsigned i = 1; i < sizeof names / sizeof names[0]; i++)
			if (!strcmp(m, names[i]))
				inject = (enum inject)i;
		if (inject == INJ_NONE) {
			fprintf(stderr, "fuzz_ops: unknown FUZZ_OPS_INJECT=%s\n", m);
			exit(2);
		}
		fprintf(stderr, "fuzz_ops: self-test: injecting fault '%s'\n", m);
	}
}
