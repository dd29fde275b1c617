/* rseq_none.h: where the library has no rseq sections (aarch64): the internal section of the
 * per-CPU slow paths, never called there (rseq mode is never chosen: rseq.c). */
#ifndef SM_RSEQ_NONE_H
#define SM_RSEQ_NONE_H

#include <stdbool.h>

static inline bool pcpu_rseq_take_int(int *base, int *out)
{
	(void)base, (void)out;
	return false;
}

#endif
