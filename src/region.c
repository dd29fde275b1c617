/* region.c: the page level. Regions of 4 MiB come from mmap aligned to their size; page 0 of a
 * region is its header (struct region: slab descriptors and the page -> slab map), pages 1..63
 * are handed out in runs of 1..SLAB_MAX_PAGES pages, one run per slab.
 * Invariants: region_bits has a 1 for every region ever made (regions are never unmapped, so a
 * pointer's "is it ours" answer never changes from yes to no); free_mask, map[] of free pages
 * and the region list change only under page_lock; a freed run is purged (MADV_DONTNEED), so
 * its memory leaves the RSS and reads back as zeros. */
#include <errno.h>
#include <string.h>

#include "internal.h"

static sm_lock_t page_lock;
static struct region *regions;      /* all regions, newest first */
static struct region *hint;         /* where the last run was found */

uint64_t sm_region_bits[NREGION_SLOTS / 64]; /* 4 MiB of .bss: pages appear as touched */

static struct region *region_new(void)
{
	struct region *r = sm_os_map_aligned(REGION_SIZE, REGION_SIZE);
	if (!r)
		return NULL;
	r->free_mask = ~1ULL; /* page 0 is the header */
	r->next = regions;
	regions = r;
	uintptr_t i = (uintptr_t)r >> REGION_SHIFT;
	__atomic_fetch_or(&sm_region_bits[i >> 6], 1ULL << (i & 63), __ATOMIC_RELEASE);
	return r;
}

/* First index of n consecutive set bits in mask, or -1. */
static int find_run(uint64_t mask, unsigned n)
{
	uint64_t m = mask;
	for (unsigned i = 1; i < n; i++)
		m &= mask >> i;
	return m ? __builtin_ctzll(m) : -1;
}

struct slab *sm_pages_alloc(unsigned pages)
{
	sm_lock(&page_lock);
	struct region *r = hint;
	int at = r ? find_run(r->free_mask, pages) : -1;
	if (at < 0) {
		for (r = regions; r; r = r->next)
			if ((at = find_run(r->free_mask, pages)) >= 0)
				break;
	}
	if (at < 0) {
		r = region_new();
		if (!r) {
			sm_unlock(&page_lock);
			errno = ENOMEM;
			return NULL;
		}
		at = find_run(r->free_mask, pages);
	}
	hint = r;
	uint64_t bits = (pages == 64 ? ~0ULL : ((1ULL << pages) - 1)) << at;
	r->free_mask &= ~bits;
	struct slab *s = &r->slabs[at];
	memset(s, 0, sizeof *s);
	s->start = (char *)r + ((size_t)at << SPAGE_SHIFT);
	s->pages = (uint8_t)pages;
	for (unsigned i = 0; i < pages; i++)
		r->map[at + i] = s;
	sm_unlock(&page_lock);
	return s;
}

void sm_pages_free(struct slab *s)
{
	struct region *r = (struct region *)((uintptr_t)s->start & ~(REGION_SIZE - 1));
	unsigned at = (unsigned)(((uintptr_t)s->start - (uintptr_t)r) >> SPAGE_SHIFT);
	unsigned pages = s->pages;
	sm_os_purge(s->start, (size_t)pages << SPAGE_SHIFT);
	sm_lock(&page_lock);
	for (unsigned i = 0; i < pages; i++)
		r->map[at + i] = NULL;
	r->free_mask |= ((1ULL << pages) - 1) << at;
	sm_unlock(&page_lock);
}

void sm_region_lock_all(void)
{
	sm_lock(&page_lock);
}

void sm_region_unlock_all(bool reinit)
{
	(void)reinit;
	sm_unlock(&page_lock);
}
