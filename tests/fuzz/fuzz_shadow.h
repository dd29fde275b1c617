/* fuzz_shadow.h: the shadow model of the fuzz_ops harness (fuzz_shadow.c), as the operation
 * interpreter (fuzz_ops.c) uses it: the table of slots, what it records of each live block,
 * and the checks made when a block is handed out, checked or released. */
#ifndef FUZZ_SHADOW_H
#define FUZZ_SHADOW_H

#include <stddef.h>
#include <stdint.h>

#define NSLOT 64
#define LIVE_MAX (48UL << 20)      /* bytes of usable size live at once */

struct slot {
	unsigned char *p;
	size_t req;      /* requested size: what must fit and what realloc must keep */
	size_t usable;   /* malloc_usable_size(p): what is filled and checked */
	uint64_t seed;   /* pattern of this block's contents */
};

extern struct slot slots[NSLOT];
extern size_t live_bytes; /* the usable sizes of the live slots, summed */

/* Prints "fuzz_ops: VIOLATION: ..." and aborts (a libFuzzer crash). */
__attribute__((noreturn, format(printf, 1, 2))) void violation(const char *fmt, ...);
/* Reads FUZZ_OPS_INJECT (the self-test's fault, if any); exits 2 on an unknown mode. */
void inject_init(void);

/* The first byte below limit of a block of usable size u that differs from the pattern of
 * seed, or SIZE_MAX. */
size_t verify_block(const unsigned char *p, size_t u, size_t limit, uint64_t seed);
/* A violation unless the block of slot s still carries its pattern. */
void check_intact(int s, const char *when);
/* Checks a block just handed out for slot s and records it (zero_len: bytes calloc zeroed). */
void adopt(int s, void *vp, size_t req, size_t align, size_t zero_len, const char *what);
/* Forgets slot s after checking its contents and returns its block, for the caller to free. */
void *release(int s, const char *when);
/* Frees the block of slot s, if any, after checking it. */
void free_slot(int s);
/* Room for another block of about `size` bytes under LIVE_MAX? */
int room_for(size_t size);
/* A violation unless the failed call gave NULL with errno err. */
void expect_fail(void *p, int err, const char *what);

#endif
