/* defrag.h: what jemalloc.c and mallctl.c need of defrag.c: a block's slab in jemalloc's
 * terms, and allocation from the fullest slab. */
#ifndef SM_JEMALLOC_DEFRAG_H
#define SM_JEMALLOC_DEFRAG_H

#include <stdbool.h>
#include <stddef.h>

#include "types.h"

#pragma GCC visibility push(hidden)

struct sm_util {              /* a block's slab, in jemalloc's utilization terms */
	size_t nfree, nregs, size; /* free objects, objects, bytes (a large block: 0, 1, its size) */
	struct slab *slab;         /* NULL: not a size class's block */
	bool frozen;               /* some thread's active slab */
	unsigned cls;
};
void sm_util_of(const void *p, struct sm_util *u); /* all zero: not ours */
void *sm_alloc_fullest(size_t size); /* from the fullest partial slab; NULL: none */

#pragma GCC visibility pop

#endif
