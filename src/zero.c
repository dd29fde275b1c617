/* zero.c: the blocks malloc(0) returns under SLUBMALLOC_DEBUG's Z (cache name "zero"). Each is
 * an address of its own in a range reserved with no access: a read or a write of a zero-size
 * block faults, and so does a use after its free. Without Z the range is not reserved, and
 * malloc(0) returns a 16-byte block of the smallest class, as glibc and the peers give bytes.
 * Invariants: a slot's bit in used[] is set exactly while its block is handed out; bits change
 * only by atomic or/and (no lock: fork and signal handlers cannot deadlock here); two live
 * blocks never share an address. When every slot is taken, malloc(0) falls back to a block of
 * the smallest class (sm_zero_alloc returns NULL). */
#include "config.h"
#include "platform.h"
#include "report.h"
#include "zero.h"

#define ZERO_SLOTS 65536u                        /* 1 MiB of address space, 16 bytes a slot */
#define ZERO_WORDS (ZERO_SLOTS / 64)

static char *zero_base;
static uint64_t used[ZERO_WORDS];
static unsigned hint; /* a word that had a clear bit lately (racy: only a place to start) */

void sm_zero_init(void)
{
	zero_base = sm_os_reserve((size_t)ZERO_SLOTS * MIN_ALIGN);
}

void *sm_zero_alloc(void)
{
	if (!zero_base)
		return NULL;
	unsigned start = __atomic_load_n(&hint, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < ZERO_WORDS; k++) {
		unsigned w = (start + k) % ZERO_WORDS;
		uint64_t v = __atomic_load_n(&used[w], __ATOMIC_RELAXED);
		while (~v) {
			uint64_t bit = ~v & (v + 1); /* the lowest clear bit */
			v = __atomic_fetch_or(&used[w], bit, __ATOMIC_RELAXED);
			if (!(v & bit)) {
				__atomic_store_n(&hint, w, __ATOMIC_RELAXED);
				unsigned i = w * 64 + (unsigned)__builtin_ctzll(bit);
				return zero_base + (size_t)i * MIN_ALIGN;
			}
		}
	}
	return NULL;
}

bool sm_zero_has(const void *p)
{
	return zero_base && (uintptr_t)p - (uintptr_t)zero_base < (size_t)ZERO_SLOTS * MIN_ALIGN;
}

/* p is in the range (sm_zero_has). */
void sm_zero_free(void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)zero_base;
	if (off % MIN_ALIGN)
		sm_fatal("invalid free", p, "(inside the zero-size blocks' range)");
	unsigned i = (unsigned)(off / MIN_ALIGN);
	uint64_t bit = 1ULL << (i % 64);
	if (!(__atomic_fetch_and(&used[i / 64], ~bit, __ATOMIC_RELAXED) & bit))
		sm_fatal("double free", p, "(a zero-size block, already freed)");
}
