/* arch_x86_64.h: the processor layer: the 16-byte compare-and-swap (lock cmpxchg16b), pause,
 * the TSC, the AVX2 check, a conditional move, and branch hints. Nothing here calls the OS.
 * Invariant: a word given to cas16() is 16-byte aligned (else the CPU raises #GP). */
#ifndef SM_ARCH_X86_64_H
#define SM_ARCH_X86_64_H

#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h> /* glibc 2.33 and later */
#endif

#include "arch_common.h"

/* Atomically: if *w == *old then *w = new and return true; else *old = *w and return false.
 * Inline asm rather than __atomic (which would call libatomic for 16 bytes). */
#ifdef SM_TSAN
static inline bool cas16(dword_t *w, dword_t *old, dword_t new)
{
	return __atomic_compare_exchange_n(&w->whole, &old->whole, new.whole, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
#else
static inline bool cas16(dword_t *w, dword_t *old, dword_t new)
{
	bool ok;
	__asm__ __volatile__("lock cmpxchg16b %1"
			     : "=@ccz"(ok), "+m"(w->whole), "+a"(old->lo), "+d"(old->hi)
			     : "b"(new.lo), "c"(new.hi)
			     : "memory");
	return ok;
}
#endif

static inline void cpu_relax(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

/* if_eq when a == *b, else if_ne: a conditional move, never a branch. */
static inline uintptr_t select_eq16(uint16_t a, const uint16_t *b, uintptr_t if_eq, uintptr_t if_ne)
{
	__asm__("cmpw %[b], %w[a]\n\tcmove %[eq], %[r]"
		: [r] "+r"(if_ne)
		: [eq] "r"(if_eq), [b] "m"(*b), [a] "r"(a)
		: "cc");
	return if_ne;
}

/* Whether AVX2 may be used: the CPU has it and the OS saves the YMM state. glibc read CPUID
 * at startup and keeps the answer. A CPUID of our own exits to the hypervisor in a VM, at
 * every process start: only an older glibc, without the answer, gets those. */
static inline bool cpu_has_avx2(void)
{
#ifdef CPU_FEATURE_ACTIVE
	return CPU_FEATURE_ACTIVE(AVX2);
#else
	uint32_t a, b, c, d;
	__asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
	if (a < 7)
		return false;
	__asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
	if (!(c & (1u << 27)) || !(c & (1u << 28))) /* OSXSAVE, AVX */
		return false;
	uint32_t xlo, xhi;
	__asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0)); /* XCR0: SSE and AVX state saved */
	if ((xlo & 6) != 6)
		return false;
	__asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
	return b & (1u << 5);
#endif
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

#endif
