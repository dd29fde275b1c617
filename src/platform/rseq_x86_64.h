/* rseq_x86_64.h: the internal rseq critical sections of the per-CPU slow paths (the public
 * fastpath sections, and the SLUB_RSEQ_CS_BEGIN/END shape they share, are in slubmalloc.h).
 * Invariant: called only in rseq mode (slub_pcpu_rseq == 1), by a thread whose glibc-registered
 * rseq area has cpu_id >= 0. */
#ifndef SM_RSEQ_X86_64_H
#define SM_RSEQ_X86_64_H

#include <stdbool.h>

#include "slubmalloc.h"

/* Take this CPU's int delta of a counter: *out = delta, delta = 0, in one rseq section whose
 * commit is the store of 0. False if aborted (then nothing changed; retry). */
static inline bool pcpu_rseq_take_int(int *base, int *out)
{
	int v;
	__asm__ goto(SLUB_RSEQ_CS_BEGIN
		     "shlq $" SLUB_RSEQ_STR(SLUB_PCPU_STRIDE_SHIFT) ", %%rcx\n\t"
		     "addq %[base], %%rcx\n\t"
		     "movl (%%rcx), %%eax\n\t"
		     "movl $0, (%%rcx)\n\t"
		     SLUB_RSEQ_CS_END(aborted)
		     "movl %%eax, (%[out])\n\t" /* after the commit: outside the section */
		     : /* no outputs */
		     : [rseq_off] "r"(__rseq_offset), [base] "r"(base), [out] "r"(&v)
		     : "rax", "rcx", "memory", "cc"
		     : aborted);
	*out = v;
	return true;
aborted:
	return false;
}

#endif
