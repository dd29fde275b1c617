/* slubmalloc_rseq_x86_64.h: the rseq critical sections of slubmalloc.h's per-CPU fastpaths,
 * on x86-64. Included by slubmalloc.h; not for direct use. Each section adds to this CPU's copy
 * of a per-CPU variable with one plain instruction, and reports an abort (preemption,
 * migration, a signal, a membarrier RSEQ IPI) so that the caller retries or takes the slow
 * path.
 * Needs, declared before it: SLUB_PCPU_STRIDE_SHIFT and glibc's __rseq_offset. */
#ifndef SLUBMALLOC_RSEQ_X86_64_H
#define SLUBMALLOC_RSEQ_X86_64_H

#include <stdbool.h>

/* This thread's rseq cpu_id: the CPU it runs on, or negative when rseq is not registered. */
static inline int slub_rseq_cpu_id(void)
{
	int c;
	__asm__ __volatile__("movl %%fs:4(%1), %0" : "=r"(c) : "r"(__rseq_offset));
	return c;
}

/* An rseq critical section on x86-64 (the librseq shape). Labels: 1 start, 2 post-commit,
 * 3 the descriptor (struct rseq_cs in section __rseq_cs), 4 the abort handler, preceded by the
 * signature glibc registered (0x53053053, as the operand of a ud1). Reads cpu_id_start into
 * %ecx, publishes the descriptor in rseq->rseq_cs (%fs:__rseq_offset+8), then, inside the
 * section, checks that rseq->cpu_id still equals %ecx. The body ends with exactly one commit
 * instruction. Preemption, migration, a signal or a membarrier RSEQ IPI before the commit
 * makes the kernel resume at 4, which leaves to the C label `abort_label`. */
/* The commit `add` uses one address register and, for constant amounts (get/put), an
 * immediate: cores that forward or rename memory operands of simple (base-only) RMWs then
 * chain a get and a put on one counter without the store-forwarding latency (an indexed
 * address or a register operand costs ~4 ns per pair instead of ~1.3 on Sapphire Rapids). */
#define SLUB_RSEQ_STR2(x) #x
#define SLUB_RSEQ_STR(x) SLUB_RSEQ_STR2(x)
#define SLUB_RSEQ_SIG 0x53053053
#define SLUB_RSEQ_CS_BEGIN                                                        \
	".pushsection __rseq_cs, \"aw\"\n\t"                                      \
	".balign 32\n\t"                                                          \
	"3:\n\t"                                                                  \
	".long 0, 0\n\t"                                                          \
	".quad 1f, 2f - 1f, 4f\n\t"                                               \
	".popsection\n\t"                                                         \
	"movl %%fs:(%[rseq_off]), %%ecx\n\t"                                      \
	"leaq 3b(%%rip), %%rax\n\t"                                               \
	"movq %%rax, %%fs:8(%[rseq_off])\n\t"                                     \
	"1:\n\t"                                                                  \
	"cmpl %%ecx, %%fs:4(%[rseq_off])\n\t"                                     \
	"jnz 4f\n\t"
#define SLUB_RSEQ_CS_END(abort_label)                                             \
	"2:\n\t"                                                                  \
	".pushsection __rseq_failure, \"ax\"\n\t"                                 \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                              \
	".long " SLUB_RSEQ_STR(SLUB_RSEQ_SIG) "\n\t"                              \
	"4:\n\t"                                                                  \
	"jmp %l[" #abort_label "]\n\t"                                            \
	".popsection\n\t"

/* *(this CPU's copy of p) += v, in one rseq section; false if it was aborted (retry). */
static inline bool slub_pcpu_rseq_add(long *p, long v)
{
	__asm__ goto(SLUB_RSEQ_CS_BEGIN
		     "shlq $" SLUB_RSEQ_STR(SLUB_PCPU_STRIDE_SHIFT) ", %%rcx\n\t"
		     "addq %[p], %%rcx\n\t"
		     "addq %[v], (%%rcx)\n\t"
		     SLUB_RSEQ_CS_END(aborted)
		     : /* no outputs */
		     : [rseq_off] "r"(__rseq_offset), [p] "r"(p), [v] "er"(v)
		     : "rax", "rcx", "memory", "cc"
		     : aborted);
	return true;
aborted:
	return false;
}

/* One rseq section: d = delta + amount; commit d only if -bm1 <= d <= bm1 (|d| < batch). */
static inline bool slub_pcpu_counter_rseq_add(int *base, long long amount, long long bm1,
					      unsigned long long lim)
{
	__asm__ goto(SLUB_RSEQ_CS_BEGIN
		     "shlq $" SLUB_RSEQ_STR(SLUB_PCPU_STRIDE_SHIFT) ", %%rcx\n\t"
		     "addq %[base], %%rcx\n\t"
		     "movslq (%%rcx), %%rax\n\t"
		     "addq %[amount], %%rax\n\t"
		     "leaq (%%rax, %[bm1]), %%rdx\n\t"
		     "cmpq %[lim], %%rdx\n\t"
		     "jae %l[slow]\n\t"
		     "movl %%eax, (%%rcx)\n\t"
		     SLUB_RSEQ_CS_END(slow)
		     : /* no outputs */
		     : [rseq_off] "r"(__rseq_offset), [base] "r"(base), [amount] "r"(amount),
		       [bm1] "r"(bm1), [lim] "r"(lim)
		     : "rax", "rcx", "rdx", "memory", "cc"
		     : slow);
	return true;
slow:
	return false;
}

/* Test hook (librseq's RSEQ_INJECT_ASM): instructions placed inside the reference section,
 * between the mode load and the commit. Empty unless defined before this header is included;
 * the unit tests widen the race window with it. */
#ifndef SLUB_PCPU_REF_INJECT_ASM
#define SLUB_PCPU_REF_INJECT_ASM ""
#endif

/* One rseq section: load the mode word; if it is per-CPU (no flag bit), add nr to this CPU's
 * counter (the commit). False if the mode is not per-CPU or the section was aborted. The mode
 * is read inside the section: the grace period of a switch (membarrier RSEQ) restarts every
 * section that read the old mode and has not committed. */
static inline bool slub_pcpu_ref_rseq_add(unsigned long *word, unsigned long nr)
{
	__asm__ goto(SLUB_RSEQ_CS_BEGIN
		     "movq (%[word]), %%rax\n\t"
		     "testb $" SLUB_RSEQ_STR(7) ", %%al\n\t"
		     "jnz %l[slow]\n\t"
		     SLUB_PCPU_REF_INJECT_ASM
		     "shlq $" SLUB_RSEQ_STR(SLUB_PCPU_STRIDE_SHIFT) ", %%rcx\n\t"
		     "addq %%rcx, %%rax\n\t"
		     "addq %[nr], (%%rax)\n\t"
		     SLUB_RSEQ_CS_END(slow)
		     : /* no outputs */
		     : [rseq_off] "r"(__rseq_offset), [word] "r"(word), [nr] "er"(nr)
		     : "rax", "rcx", "memory", "cc"
		     : slow);
	return true;
slow:
	return false;
}

#endif
