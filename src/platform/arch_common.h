/* arch_common.h: what both processor headers share: branch hints, the 16-byte word the CAS
 * works on, and whether ThreadSanitizer builds this (tests/sanitize.sh). Included by
 * arch_x86_64.h and arch_aarch64.h. */
#ifndef SM_ARCH_COMMON_H
#define SM_ARCH_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Two 64-bit halves updated together: a slab's {freelist, counters}. */
typedef union dword {
	struct {
		uint64_t lo;
		uint64_t hi;
	};
	unsigned __int128 whole;
} __attribute__((aligned(16))) dword_t;

/* ThreadSanitizer cannot see inside inline asm: under it (tests/sanitize.sh) cas16 is the
 * equivalent __atomic builtin, which TSan instruments; every other build keeps the asm. */
#if defined(__SANITIZE_THREAD__)
#define SM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SM_TSAN 1
#endif
#endif

#endif
