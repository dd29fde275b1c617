/* large.h: allocations above MAX_SMALL, each a mapping of its own, straight from mmap
 * (large.c). */
#ifndef SM_LARGE_H
#define SM_LARGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

void *sm_large_alloc(size_t size, size_t align, bool zero);
int sm_large_free(void *p);                   /* 1 freed; 0 not ours; -1 freed already */
size_t sm_large_usable(const void *p);        /* 0: not one of ours */
void *sm_large_realloc(void *p, size_t size); /* NULL: could not; copy instead */
void sm_large_figures(uint64_t *live_n, uint64_t *live_bytes, uint64_t *cached_bytes,
		      uint64_t *peak_n, uint64_t *peak_bytes);
size_t sm_large_release(bool all, uint64_t *due); /* purge the cached ranges due (all: unmap
						   * every range, out of memory); due may be NULL */
size_t sm_large_purge(void);                  /* malloc_trim: purge every cached range */
uint64_t sm_large_resident(void);             /* in memory (mincore), the table too */
uint64_t sm_large_retained(void);             /* the retained ranges' bytes */
void sm_large_lock_all(void);
void sm_large_unlock_all(bool reinit);
extern uint64_t sm_stat_large;                 /* large allocations made (large lock) */
extern uint64_t sm_stat_large_req;             /* bytes asked for by them (SLUBMALLOC_STATS) */
extern unsigned sm_large_debug;            /* debug flags for large blocks, or 0 */
void sm_large_debug_scan(const char *when); /* every debug large block's red zones */
bool sm_large_debug_find(uintptr_t a, uintptr_t *block, size_t *size); /* the one a is in */
enum { LF_NONE, LF_BEFORE, LF_AFTER, LF_FREED };
int sm_large_fault(uintptr_t a, uintptr_t *block, size_t *size); /* LF_*, no lock */
void sm_large_set_prof(void *p, uint32_t id, size_t req); /* p is a profile sample */

#pragma GCC visibility pop

#endif
