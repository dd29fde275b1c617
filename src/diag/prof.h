/* prof.h: what the heap profiler's files share (prof.c, its stacks; prof_dump.c, its output),
 * and the samples sample.c hands it. */
#ifndef SM_DIAG_PROF_H
#define SM_DIAG_PROF_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#pragma GCC visibility push(hidden)

struct prof_stack {
	uint64_t hash;
	uint32_t depth, next;     /* next: the next id of its hash chain; 0: none */
	int64_t inuse_n, inuse_bytes;
	uint64_t alloc_n, alloc_bytes;
	void *pc[PROF_FRAMES];
};
/* a sampled block of class cls; from: as sm_backtrace's */
void *sm_prof_alloc(unsigned cls, size_t req, unsigned form, const void *from);
struct prof_stack *sm_prof_stack(uint32_t id);
uint32_t sm_prof_nstacks(void);
void sm_prof_counts(uint32_t id, struct prof_stack *out);
void sm_prof_after_sample(void);           /* prof_dump.c: SLUBMALLOC_PROF_INTERVAL's dumps */

#pragma GCC visibility pop

#endif
