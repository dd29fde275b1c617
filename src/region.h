/* region.h: 4 MiB regions of 64 KiB pages (region.c), and the arithmetic from a pointer to its
 * region and its page's slab descriptor (the kernel's virt_to_slab).
 * Invariant: sm_region_map has a 1 for every mapped region, set before any slab of it exists. */
#ifndef SM_REGION_H
#define SM_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

void sm_region_first(void);                    /* init: map the first region */
struct slab *sm_pages_alloc(unsigned pages);   /* a descriptor with start/pages set, or NULL */
void sm_pages_free(struct slab *s);            /* free; purged later, in batches */
void sm_slabs_census(const struct cache *c, uint64_t *inuse, uint64_t *frozen); /* all slabs */
size_t sm_pages_purge_all(size_t keep);        /* malloc_trim: dirty pages until at most
						* keep bytes are left; bytes */
uint64_t sm_pages_purge_due(void);             /* background: the due ones; next due or 0 */
void sm_region_figures(uint64_t *mapped, uint64_t *dirty);
uint64_t sm_region_resident(void);             /* in memory (mincore) */
void sm_region_walk_locked(void (*fn)(struct slab *head, void *arg), void *arg); /* page lock */
void sm_region_lock(void);
void sm_region_unlock(void);
void sm_region_lock_all(void);
void sm_region_unlock_all(bool reinit);
bool sm_region_untouched(uintptr_t a);     /* a's page is one no slab has used yet */

extern uint8_t sm_region_map[NREGION_SLOTS];   /* 1 byte per 4 MiB of address space: ours? */

/* ---- pointer -> region -> slab (virt_to_slab) ---- */
static inline bool region_is_ours(uintptr_t a)
{
	uintptr_t i = a >> REGION_SHIFT;
	if (unlikely(i >= NREGION_SLOTS))
		return false;
	return __atomic_load_n(&sm_region_map[i], __ATOMIC_RELAXED);
}
static inline struct slab *slab_of(uintptr_t a)
{
	struct region *r = (struct region *)(a & ~(REGION_SIZE - 1));
	return r->map[(a >> SPAGE_SHIFT) & (REGION_PAGES - 1)];
}
/* The descriptor of a's page (a in a region of ours): computed, not loaded; for reads of the
 * read-only fields and slab_index() only (mutable state lives in ->head). */
static inline struct slab *page_desc(uintptr_t a)
{
	struct region *r = (struct region *)(a & ~(REGION_SIZE - 1));
	return &r->slabs[(a >> SPAGE_SHIFT) & (REGION_PAGES - 1)];
}
/* The region and the first byte of the page that descriptor d describes. */
static inline struct region *desc_region(const struct slab *d)
{
	return (struct region *)((uintptr_t)d & ~(REGION_SIZE - 1));
}
static inline char *desc_page(const struct slab *d)
{
	struct region *r = desc_region(d);
	return (char *)r + ((size_t)(d - r->slabs) << SPAGE_SHIFT);
}

#pragma GCC visibility pop

#endif
