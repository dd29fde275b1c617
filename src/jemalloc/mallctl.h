/* mallctl.h: what jemalloc.c and defrag.c need of mallctl.c: the arenas' numbers and the
 * census's figures per size class. */
#ifndef SM_JEMALLOC_MALLCTL_H
#define SM_JEMALLOC_MALLCTL_H

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

bool sm_ctl_arena_exists(unsigned a); /* 0, or a number arenas.create gave, not destroyed */
/* a size class's figures at the last census (taken again when older than DEFRAG_SNAP_NS) */
void sm_ctl_bin(unsigned cls, uint64_t *curregs, uint64_t *curslabs, uint64_t *nonfull);

#pragma GCC visibility pop

#endif
