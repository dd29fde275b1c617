/* region.c: the page level.
 * Regions of 4 MiB come from mmap, aligned to their size.
 * Page 0 of a region is its header: struct region, with the slab descriptors and the
 * page -> slab map. Pages 1..63 are handed out in runs of 1..SLAB_MAX_PAGES, one run per slab.
 * The upper half of a new region has no access until a slab needs it: a long overflow out of
 * the last slab faults there instead of running through untouched memory. Runs are found
 * lowest first, so the pages in use form a prefix. The lower half is open from the start, and
 * the upper half opens whole when a run first reaches it (REGION_OPEN_FIRST): at most two
 * mprotects a region, not one per slab. A region is at most two mappings.
 * With SLUBMALLOC_THP=1 the whole region is read-write from the start (one mapping), so that
 * its first faults can take huge pages.
 * A freed run stays dirty: its memory is still resident, so reusing it costs no page faults.
 * Allocation prefers dirty pages. A page that is free and not dirty reads as zero: never used,
 * or purged. A new slab on such pages says so (struct slab's zero); nothing else may assume it.
 * When the dirty pages of all regions pass the dirty cap, whole contiguous dirty runs are
 * purged (MADV_DONTNEED, one call per run) down to half of it. The cap starts at DIRTY_CAP.
 * Pages the cap purged are marked (capped_mask). A program that takes such pages back within
 * the purge delay frees and allocates in waves larger than the cap, and pays a page fault for
 * every page of each wave. So when, within one purge delay, the pages it takes back pass half
 * the cap, the cap doubles, up to DIRTY_CAP_MAX. After DIRTY_CAP_CALM purge delays with no page
 * taken back, the next purge it starts halves it, down to DIRTY_CAP. A program that frees and
 * does not allocate again takes nothing back: its cap stays DIRTY_CAP.
 * Dirty pages are also purged a region at a time, once the region has had dirty pages for
 * longer than the purge delay (SLUBMALLOC_PURGE_DELAY_MS). That is checked when pages are freed,
 * and on time by the background thread (SLUBMALLOC_BACKGROUND=1), kicked when pages become dirty.
 * malloc_trim purges them all, or all but its pad's bytes (sm_pages_purge_all).
 * A region left with no slab is unmapped, its map entry cleared first, so address space goes
 * back too. The last region stays mapped.
 * Invariants:
 *   - sm_region_map has a 1 for every mapped region;
 *   - free_mask, dirty_mask, the map entries of free pages and the region list change only
 *     under page_lock;
 *   - dirty_mask is a subset of free_mask;
 *   - capped_mask is a subset of free_mask, disjoint from dirty_mask;
 *   - every page ever handed out is below open;
 *   - a region is unmapped only when no slab is in it, so no live object is: only a stale
 *     pointer could still lead into it. */
#include <errno.h>
#include <string.h>

#include "background.h"
#include "config.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "types.h"

static sm_lock_t page_lock;
static struct region *regions;      /* all regions, newest first */
static struct region *hint;         /* where the last run was found */
static size_t dirty_bytes;          /* free but not purged, all regions */
static bool purge_failed;           /* a purge left its pages as they were (mlockall): from
				     * then on no free page is taken to read as zero */
static uint64_t oldest_dirty;       /* no region has been dirty since before this */
static uint64_t nregions;           /* regions mapped */
static size_t dirty_cap = DIRTY_CAP; /* dirty bytes that start a purge */
static uint64_t cap_purged_at;      /* when the cap last started a purge (0: never) */
static uint64_t cap_moved_at;       /* when the cap last grew, or a page came back (0: never) */
static uint64_t back_since;         /* the purge delay over which back_bytes is counted */
static size_t back_bytes;           /* bytes the cap purged and allocation took back */

uint8_t sm_region_map[NREGION_SLOTS]; /* 32 MiB of .bss: its pages appear as touched */

static struct region *region_new(void)
{
	struct region *r = sm_os_map_aligned(REGION_SIZE, REGION_SIZE);
	if (!r)
		return NULL;
	sm_os_hugepages(r, REGION_SIZE, sm_opt.thp); /* SLUBMALLOC_THP */
	nregions++;
	for (unsigned i = 0; i < REGION_PAGES; i++) { /* no slab: start NULL, and (struct slab) */
		r->slabs[i].inverse = 1;
		r->slabs[i].bad_q_bits = ~0ULL;
	}
	/* page 0 is the header; the lower half is open, the upper half gets access when first
	 * used. With SLUBMALLOC_THP=1 all of it has it now: a huge page needs its 2 MiB in one
	 * read-write mapping when a first fault lands there. */
	if (sm_opt.thp) {
		r->open = REGION_PAGES;
	} else if (!sm_os_protect((char *)r + REGION_OPEN_FIRST * SPAGE_SIZE,
				  REGION_SIZE - REGION_OPEN_FIRST * SPAGE_SIZE, false)) {
		sm_os_unmap(r, REGION_SIZE);
		nregions--;
		return NULL;
	} else {
		r->open = REGION_OPEN_FIRST;
	}
	r->free_mask = ~1ULL;
	r->dirty_mask = 0;
	r->next = regions;
	regions = r;
	uintptr_t i = (uintptr_t)r >> REGION_SHIFT;
	__atomic_store_n(&sm_region_map[i], 1, __ATOMIC_RELEASE);
	return r;
}

/* At init: the first region, mapped before the program can cap its address space
 * (RLIMIT_AS) below what a region takes; untouched pages cost nothing resident. */
void sm_region_first(void)
{
	sm_lock(&page_lock);
	if (!regions)
		region_new();
	sm_unlock(&page_lock);
}

/* First index of n consecutive set bits in mask, or -1. */
static int find_run(uint64_t mask, unsigned n)
{
	uint64_t m = mask;
	for (unsigned i = 1; i < n; i++)
		m &= mask >> i;
	return m ? __builtin_ctzll(m) : -1;
}

/* A run of `pages` pages in r: dirty (already resident) ones first. */
static int find_in(struct region *r, unsigned pages, bool dirty_only)
{
	return find_run(dirty_only ? r->free_mask & r->dirty_mask : r->free_mask, pages);
}

/* Allocation took back bytes that the cap purged (page lock held): when that was within the
 * purge delay of a purge the cap started, they count; when they pass half the cap within one
 * purge delay, the cap doubles. */
static void took_back(size_t bytes)
{
	uint64_t now = sm_os_now_ns(), delay = sm_opt.purge_delay_ns;
	if (now - cap_purged_at >= delay)
		return;
	if (now - back_since >= delay) {
		back_since = now;
		back_bytes = 0;
	}
	back_bytes += bytes;
	cap_moved_at = now;
	while (back_bytes > dirty_cap / 2 && dirty_cap < DIRTY_CAP_MAX)
		dirty_cap *= 2;
}

struct slab *sm_pages_alloc(unsigned pages)
{
	sm_lock(&page_lock);
	struct region *r = hint;
	int at = -1;
	if (r && (at = find_in(r, pages, true)) < 0 && !dirty_bytes)
		at = find_in(r, pages, false);
	for (int pass = dirty_bytes ? 0 : 1; at < 0 && pass < 2; pass++)
		for (r = regions; r; r = r->next)
			if ((at = find_in(r, pages, pass == 0)) >= 0)
				break;
	if (at < 0) {
		r = region_new();
		if (!r) {
			sm_unlock(&page_lock);
			errno = ENOMEM;
			return NULL;
		}
		at = find_run(r->free_mask, pages);
	}
	if ((unsigned)at + pages > r->open) { /* the upper half opens, whole */
		if (!sm_os_protect((char *)r + ((size_t)r->open << SPAGE_SHIFT),
				   (size_t)(REGION_PAGES - r->open) << SPAGE_SHIFT, true)) {
			sm_unlock(&page_lock);
			errno = ENOMEM;
			return NULL;
		}
		r->open = REGION_PAGES;
	}
	hint = r;
	uint64_t bits = ((1ULL << pages) - 1) << at;
	bool zero = !(r->dirty_mask & bits) && !purge_failed; /* never used, or purged */
	if (r->capped_mask & bits) {
		took_back((size_t)__builtin_popcountll(r->capped_mask & bits) << SPAGE_SHIFT);
		r->capped_mask &= ~bits;
	}
	r->free_mask &= ~bits;
	dirty_bytes -= (size_t)__builtin_popcountll(r->dirty_mask & bits) << SPAGE_SHIFT;
	r->dirty_mask &= ~bits;
	struct slab *s = &r->slabs[at];
	for (unsigned i = 0; i < pages; i++) {
		/* start is NULL (a free page), inverse and bad_q_bits stay: every address of the
		 * page fails the object check until sm_slab_new sets start (struct slab) */
		memset(&s[i].cache, 0, sizeof *s - offsetof(struct slab, cache));
		r->map[at + i] = s;
		s[i].head = s;
	}
	s->pages = (uint8_t)pages;
	s->zero = zero;
	sm_unlock(&page_lock);
	return s;
}

/* Purge whole dirty runs until at most `target` dirty bytes remain, in regions dirty since
 * `before` or earlier (page lock held). capped: the dirty cap asks, and marks the pages.
 * Returns the bytes purged. */
static size_t purge_to(size_t target, uint64_t before, bool capped)
{
	struct region **link = &regions;
	size_t purged = 0;
	while (*link && dirty_bytes > target) {
		struct region *r = *link;
		uint64_t m = r->dirty_mask;
		if (!m || r->dirty_since > before) {
			link = &r->next;
			continue;
		}
		purged += (size_t)__builtin_popcountll(m) << SPAGE_SHIFT;
		dirty_bytes -= (size_t)__builtin_popcountll(m) << SPAGE_SHIFT;
		r->dirty_mask = 0;
		if (capped)
			r->capped_mask |= m;
		if (r->free_mask == ~1ULL && nregions > 1) { /* nothing left in it: the address
							       * space goes back too (but for
							       * the last region: a program
							       * under RLIMIT_AS may find no
							       * room for another) */
			*link = r->next;
			if (hint == r)
				hint = NULL;
			uintptr_t i = (uintptr_t)r >> REGION_SHIFT;
			__atomic_store_n(&sm_region_map[i], 0, __ATOMIC_RELEASE);
			sm_os_unmap(r, REGION_SIZE);
			nregions--;
			continue;
		}
		while (m) {
			unsigned at = (unsigned)__builtin_ctzll(m);
			unsigned len = (unsigned)__builtin_ctzll(~(m >> at));
			if (!sm_os_purge((char *)r + ((size_t)at << SPAGE_SHIFT), (size_t)len << SPAGE_SHIFT))
				purge_failed = true;
			m &= ~(len == 64 ? ~0ULL : ((1ULL << len) - 1) << at);
		}
		link = &r->next;
	}
	return purged;
}

/* The regions dirty for longer than the purge delay (page lock held). */
static void purge_old(void)
{
	uint64_t now = sm_os_now_ns();
	if (now - oldest_dirty < sm_opt.purge_delay_ns)
		return;
	purge_to(0, now - sm_opt.purge_delay_ns, false);
	oldest_dirty = now;
	for (struct region *r = regions; r; r = r->next)
		if (r->dirty_mask && r->dirty_since < oldest_dirty)
			oldest_dirty = r->dirty_since;
}

/* The background thread: the regions due go back. Returns when the next is due; 0: none is dirty. */
uint64_t sm_pages_purge_due(void)
{
	sm_lock(&page_lock);
	purge_old();
	uint64_t due = dirty_bytes ? oldest_dirty + sm_opt.purge_delay_ns : 0;
	sm_unlock(&page_lock);
	return due;
}

size_t sm_pages_purge_all(size_t keep)
{
	sm_lock(&page_lock);
	size_t n = purge_to(keep, UINT64_MAX, false);
	sm_unlock(&page_lock);
	return n;
}

/* For fault.c, in a signal handler: no lock. */
bool sm_region_untouched(uintptr_t a)
{
	if (!region_is_ours(a))
		return false;
	const struct region *r = (const struct region *)(a & ~(REGION_SIZE - 1));
	return ((a - (uintptr_t)r) >> SPAGE_SHIFT) >= __atomic_load_n(&r->open, __ATOMIC_RELAXED);
}

void sm_region_figures(uint64_t *mapped, uint64_t *dirty)
{
	sm_lock(&page_lock);
	*mapped = nregions * REGION_SIZE;
	*dirty = dirty_bytes;
	sm_unlock(&page_lock);
}

/* The bytes of the regions that are in memory (mincore). */
uint64_t sm_region_resident(void)
{
	uint64_t n = 0;
	sm_lock(&page_lock);
	for (struct region *r = regions; r; r = r->next)
		n += sm_os_resident(r, REGION_SIZE);
	sm_unlock(&page_lock);
	return n;
}

void sm_region_lock(void)
{
	sm_lock(&page_lock);
}

void sm_region_unlock(void)
{
	sm_unlock(&page_lock);
}

/* fn(head) for every slab (page lock held by the caller). */
void sm_region_walk_locked(void (*fn)(struct slab *head, void *arg), void *arg)
{
	for (struct region *r = regions; r; r = r->next)
		for (unsigned i = 1; i < REGION_PAGES; i++)
			if (r->map[i] == &r->slabs[i])
				fn(&r->slabs[i], arg);
}

void sm_pages_free(struct slab *s)
{
	struct region *r = desc_region(s);
	unsigned at = (unsigned)(s - r->slabs);
	unsigned pages = s->pages;
	uint64_t bits = ((1ULL << pages) - 1) << at;
	sm_lock(&page_lock);
	for (unsigned i = 0; i < pages; i++) {
		/* frees into these pages now fail the object check (struct slab) */
		__atomic_store_n(&s[i].start, NULL, __ATOMIC_RELEASE);
		r->map[at + i] = NULL;
		s[i].objects = 0;
	}
	r->free_mask |= bits;
	bool was_clean = !dirty_bytes;
	if (!r->dirty_mask) {
		r->dirty_since = sm_os_now_ns();
		if (!dirty_bytes)
			oldest_dirty = r->dirty_since;
	}
	r->dirty_mask |= bits;
	dirty_bytes += (size_t)pages << SPAGE_SHIFT;
	if (dirty_bytes > dirty_cap) {
		cap_purged_at = sm_os_now_ns();
		purge_to(dirty_cap / 2, UINT64_MAX, true);
		if (dirty_cap > DIRTY_CAP &&
		    cap_purged_at - cap_moved_at > DIRTY_CAP_CALM * sm_opt.purge_delay_ns) {
			dirty_cap /= 2;
			cap_moved_at = cap_purged_at;
		}
	}
	purge_old();
	if (was_clean && dirty_bytes)
		sm_bg_kick();
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

/* Objects in use in c's unfrozen slabs, and how many of its slabs are frozen (some thread's
 * active slab: their objects may sit in that thread's cache). A walk over every region. */
void sm_slabs_census(const struct cache *c, uint64_t *inuse, uint64_t *frozen)
{
	*inuse = *frozen = 0;
	sm_lock(&page_lock);
	for (struct region *r = regions; r; r = r->next)
		for (unsigned i = 1; i < REGION_PAGES; i++) {
			struct slab *s = r->map[i];
			if (!s || s != &r->slabs[i] || __atomic_load_n(&s->cache, __ATOMIC_RELAXED) != c)
				continue;
			uint64_t hi = __atomic_load_n(&s->word.hi, __ATOMIC_RELAXED);
			if (hi & SLAB_FROZEN)
				++*frozen;
			else
				*inuse += SLAB_INUSE(hi);
		}
	sm_unlock(&page_lock);
}
