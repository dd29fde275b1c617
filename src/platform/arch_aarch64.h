/* arch_aarch64.h: the processor layer on aarch64: the 16-byte compare-and-swap, the spin hint,
 * a conditional select and the CPU features. Nothing here calls the OS.
 * The 16-byte CAS is LSE's caspal where the CPU has it (ARMv8.1 and later), and an
 * ldaxp/stlxp loop otherwise; the choice is made once, at init, from HWCAP_ATOMICS
 * (sm_cpu_lse, set by os.c), so an ARMv8.0 CPU never meets an instruction it lacks. Neither
 * calls libatomic.
 * Invariant: a word given to cas16() is 16-byte aligned. */
#ifndef SM_ARCH_AARCH64_H
#define SM_ARCH_AARCH64_H

#include "arch_common.h"

#pragma GCC visibility push(hidden)
extern int sm_cpu_lse; /* the CPU has LSE atomics (HWCAP_ATOMICS): os.c, at init */
#pragma GCC visibility pop

/* caspal: compare the pair at *w with old; if equal, store new. old receives what was there.
 * Acquire and release, as lock cmpxchg16b is a full barrier. */
static inline bool cas16_lse(dword_t *w, dword_t *old, dword_t new)
{
	register uint64_t x0 __asm__("x0") = old->lo;
	register uint64_t x1 __asm__("x1") = old->hi;
	register uint64_t x2 __asm__("x2") = new.lo;
	register uint64_t x3 __asm__("x3") = new.hi;
	uint64_t lo = old->lo, hi = old->hi;
	__asm__ __volatile__(".arch_extension lse\n\t"
			     "caspal %[x0], %[x1], %[x2], %[x3], [%[w]]"
			     : [x0] "+r"(x0), [x1] "+r"(x1), "+m"(w->whole)
			     : [x2] "r"(x2), [x3] "r"(x3), [w] "r"(w)
			     : "memory");
	bool ok = x0 == lo && x1 == hi;
	old->lo = x0;
	old->hi = x1;
	return ok;
}

/* The exclusive pair: a store-exclusive completes every round, of new when the pair matched
 * and of the pair read otherwise, so the read is single-copy atomic too (as libatomic does). */
static inline bool cas16_llsc(dword_t *w, dword_t *old, dword_t new)
{
	uint64_t lo, hi, slo, shi;
	uint32_t fail;
	__asm__ __volatile__("1:\n\t"
			     "ldaxp %[lo], %[hi], [%[w]]\n\t"
			     "cmp %[lo], %[olo]\n\t"
			     "ccmp %[hi], %[ohi], #0, eq\n\t"
			     "csel %[slo], %[nlo], %[lo], eq\n\t"
			     "csel %[shi], %[nhi], %[hi], eq\n\t"
			     "stlxp %w[fail], %[slo], %[shi], [%[w]]\n\t"
			     "cbnz %w[fail], 1b"
			     : [lo] "=&r"(lo), [hi] "=&r"(hi), [slo] "=&r"(slo), [shi] "=&r"(shi),
			       [fail] "=&r"(fail), "+m"(w->whole)
			     : [w] "r"(w), [olo] "r"(old->lo), [ohi] "r"(old->hi), [nlo] "r"(new.lo),
			       [nhi] "r"(new.hi)
			     : "cc", "memory");
	bool ok = lo == old->lo && hi == old->hi;
	old->lo = lo;
	old->hi = hi;
	return ok;
}

/* Atomically: if *w == *old then *w = new and return true; else *old = *w and return false. */
static inline bool cas16(dword_t *w, dword_t *old, dword_t new)
{
#ifdef SM_TSAN
	return __atomic_compare_exchange_n(&w->whole, &old->whole, new.whole, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
#else
	return likely(sm_cpu_lse) ? cas16_lse(w, old, new) : cas16_llsc(w, old, new);
#endif
}

static inline void cpu_relax(void)
{
	__asm__ __volatile__("yield" ::: "memory");
}

/* if_eq when a == *b, else if_ne: a conditional select, never a branch. */
static inline uintptr_t select_eq16(uint16_t a, const uint16_t *b, uintptr_t if_eq, uintptr_t if_ne)
{
	uint32_t bv = *b;
	__asm__("cmp %w[a], %w[b]\n\tcsel %[r], %[eq], %[r], eq"
		: [r] "+r"(if_ne)
		: [eq] "r"(if_eq), [a] "r"((uint32_t)a), [b] "r"(bv)
		: "cc");
	return if_ne;
}

/* AVX2 is x86's: the bulk calls keep their scalar checks here. */
static inline bool cpu_has_avx2(void)
{
	return false;
}

#endif
