/* slab.c: slab geometry and creation.
 * A cache's slab spans 1..SLAB_MAX_PAGES pages: the fewest whose tail, left after the last
 * object, is at most 1/16 of the slab; when no count does that, the one with the smallest
 * share of tail (pages_for).
 * A new slab is frozen for the thread that made it, with nothing carved.
 * Objects are linked into freelists lazily, a batch at a time (sm_slab_carve). So a new slab's
 * untouched objects cost no RSS.
 * Only the owner of a frozen slab carves, straight into its thread cache's stack.
 * Invariant: objects [0, carved) have been handed out since the slab was made or started over.
 * Objects [carved, objects) are on no freelist and held by nobody.
 * A slab starts over (carved = 0) when its owner finds every object it handed out back on its
 * freelist (sm_fill, tcache.c).
 * A slab made on pages that read as zero (zero, set by sm_pages_alloc) keeps them zero until
 * carved: nothing writes [carved, objects). It loses zero when it starts over. */
#include <string.h>

#include "config.h"
#include "diag/diag.h"
#include "options.h"
#include "region.h"
#include "slab.h"
#include "stats.h"
#include "tcache.h"
#include "types.h"

static unsigned pages_for(uint32_t size)
{
	unsigned best = 1;
	uint64_t best_waste = SPAGE_SIZE % size, best_bytes = SPAGE_SIZE;
	for (unsigned p = 1; p <= SLAB_MAX_PAGES; p++) {
		uint64_t bytes = (uint64_t)p << SPAGE_SHIFT, waste = bytes % size;
		if (waste * 16 <= bytes)
			return p;
		if (waste * best_bytes < best_waste * bytes)
			best = p, best_waste = waste, best_bytes = bytes;
	}
	return best;
}

void sm_cache_setup(struct cache *c, const char *name, uint32_t size, uint16_t cls)
{
	memset(c, 0, sizeof *c);
	c->size = size;
	c->cls = cls;
	c->koff = 8;
	c->pages = pages_for(size);
	c->objects = (uint32_t)(((uint64_t)c->pages << SPAGE_SHIFT) / size);
	c->shift = (uint8_t)__builtin_ctz(size);
	uint64_t d = size >> c->shift, inverse = d; /* Newton: each step doubles the correct bits */
	for (int i = 0; i < 5; i++)
		inverse *= 2 - d * inverse;
	c->inverse = inverse;
	uint32_t cap = TCACHE_BYTES / size, min = size > 32768 ? TCACHE_MIN_HUGE : TCACHE_MIN;
	c->cap = cap < min ? min : cap > TCACHE_MAX ? TCACHE_MAX : cap;
	uint32_t half = c->cap / 2 ? c->cap / 2 : 1;
	uint32_t page = size < FIRST_REFILL_BYTES ? FIRST_REFILL_BYTES / size : 1;
	c->first_want = half < page ? half : page;
	cap = TCACHE_GROWN_BYTES / size;
	cap = cap > TCACHE_GROWN_MAX ? TCACHE_GROWN_MAX : cap;
	c->cap_grown = cap > c->cap ? cap : c->cap;
	cap = TCACHE_BURST_BYTES / size;
	cap = cap > TCACHE_BURST_MAX ? TCACHE_BURST_MAX : cap;
	c->cap_burst = cap > c->cap_grown ? cap : c->cap_grown;
	size_t n = strlen(name);
	if (n >= sizeof c->name)
		n = sizeof c->name - 1;
	memcpy(c->name, name, n);
	c->name[n] = 0;
}

struct slab *sm_slab_new(struct cache *c)
{
	struct slab *s = sm_pages_alloc(c->pages);
	if (!s)
		return NULL;
	size_t bytes = (size_t)c->pages << SPAGE_SHIFT;
	/* the leftover first: the last object ends where the slab does (struct slab) */
	char *start = desc_page(s) + (bytes - (size_t)c->objects * c->size);
	uint64_t top = ((uint64_t)c->objects - 1) << c->shift; /* the largest valid q */
	uint64_t below = top ? ~0ULL >> __builtin_clzll(top) : 0; /* 2^B - 1 */
	__atomic_store_n(&s->cache, c, __ATOMIC_RELAXED);
	s->inverse = c->inverse;
	s->shift = c->shift;
	s->size = c->size;
	s->objects = c->objects;
	s->bad_q_bits = ~below | ((1ULL << c->shift) - 1);
	s->cls = (uint8_t)c->cls;
	/* free()'s stack (free_stack_in): the remote stack below a line, else the free stack;
	 * with SLUBMALLOC_STATS=1 that of NCLASS, which has no room, so every free takes the slow
	 * path, where it is counted; malloc's fastpath stays */
	s->free_stack_off = (int64_t)offsetof(struct tcache, free_stack[sm_opt.stats ? NCLASS : c->cls]) +
			    (c->size < SUBLINE ? REMOTE_OFF : 0);
	s->carved = 0;
	for (unsigned i = 1; i < s->pages; i++) { /* the read-only fields, for page_desc() */
		s[i].cache = c;
		s[i].inverse = s->inverse;
		s[i].shift = s->shift;
		s[i].size = s->size;
		s[i].objects = s->objects;
		s[i].bad_q_bits = s->bad_q_bits;
		s[i].cls = s->cls;
		s[i].free_stack_off = s->free_stack_off;
		s[i].pages = s->pages;
	}
	/* frozen, every object held by the owner (the untouched ones included) */
	__atomic_store_n(&s->word.lo, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->word.hi, SLAB_FROZEN | c->objects, __ATOMIC_RELAXED);
	/* start last: until it is set, the object check rejects every address of these pages */
	for (unsigned i = 0; i < s->pages; i++)
		__atomic_store_n(&s[i].start, start, __ATOMIC_RELEASE);
	if (c->debug)
		sm_debug_slab_init(s);
	__atomic_fetch_add(&c->nr_slabs, 1, __ATOMIC_RELAXED);
	sm_count(c, EV_SLAB_NEW, 1);
	return s;
}

/* Hand out up to n never-used objects of s, in address order, as addresses in out[]: nothing
 * is written to them. Returns how many. Owner only. */
uint32_t sm_slab_carve(struct slab *s, void **out, uint32_t n)
{
	uint32_t left = s->objects - s->carved;
	if (n > left)
		n = left;
	char *p = s->start + (size_t)s->carved * s->size;
	for (uint32_t i = n; i-- > 0; p += s->size) /* stacks pop the top: lowest address first */
		out[i] = p;
	s->carved += n;
	return n;
}
