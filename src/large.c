/* large.c: allocations above MAX_SMALL, each its own range of pages.
 * A hash table maps the address handed out to its range (open addressing, linear probing,
 * backward-shift deletion). So free() tells a large block of ours from any other pointer
 * without reading memory in front of it.
 * Freed ranges wait in a cache of LARGE_CACHE_SLOTS ranges. It holds at most LARGE_CACHE_BYTES,
 * or the live large bytes, or their peak of about the last purge delay up to
 * LARGE_CACHE_PEAK_MAX, whichever is most (cache_cap); and each range for at most the purge
 * delay (checked at large calls, and on time by the background thread).
 * So malloc and free of large sizes reuse resident pages, instead of mapping, unmapping and
 * faulting them in again.
 * A request takes the best-fitting cached range and leaves the rest of it cached. Or it grows
 * the largest cached range with mremap, whose resident pages move along: only when most of its
 * pages are in memory, since a move leaves a hole that splits a mapping. A range that fails
 * that probe is marked cold and not probed again until it merges or is cut. realloc grows a
 * block over the cached range just above it first.
 * A range of up to LARGE_RECENT_MAX freed last waits apart first (recent), until the next
 * large free sends it to the cache: such a block is never handed back at once, so a use after
 * free does not land in the next block. It counts as cached for the figures, the purge delay
 * and malloc_trim. Larger ranges go to the cache at once: there a best fit saves the most.
 * (No access while it waits would cost a write fault per page when it is reused.)
 * Ranges are parts of anonymous mappings, each inside one mapping, so any of them can be
 * unmapped or remapped on its own.
 * A new mapping starts and ends with a guard page, no access: a linear overflow or underflow
 * out of the block next to one faults. Only while fewer than LARGE_GUARDED_MAX blocks are
 * live. Each guard splits the mappings, and the kernel caps a process's mappings
 * (vm.max_map_count, 65530): a program with tens of thousands of large blocks would find
 * mmap failing. Past the budget a block needing a new mapping maps LARGE_MAP_CHUNK at least,
 * and the rest is retained (below): one mmap for many blocks, and the kernel merges the plain
 * mappings with their neighbours. A range split in the cache hands out its lower part,
 * which keeps the guard before; the rest keeps the one after. A range that mremap grows or
 * moves loses its guards (they are unmapped first, so the range may grow in place).
 * With SLUBMALLOC_DEBUG (Z, P or Q, for the cache name "large"), each block is a mapping of its
 * own: a guard page, the block's pages, a guard page. The block ends at the second guard (to
 * its alignment; the few bytes after it, and those before it in its first page, are red zone).
 * A freed one loses its pages and all access, and waits in a quarantine of mappings before it
 * is unmapped: a use after free faults, and its address is not handed out again meanwhile.
 * A range that leaves the cache (past the delay, pushed out, malloc_trim) is purged and kept
 * mapped among the retained ranges (retained.c): free address space with no page in memory,
 * neighbours merged. A request the cache cannot serve takes the lowest one that fits before it
 * maps anything: no mmap, no munmap, and the page tables are still there. No range is
 * unmapped but out of memory (every cached and retained one then) or past
 * LARGE_RETAINED_MAX: an unmapped range inside a mapping would split it, and a program with
 * tens of thousands of large blocks would reach the kernel's cap on mappings. Merged retained
 * ranges may span two mappings (VMAs): mremap of one fails, and its callers fall back (a new
 * mapping, a copy).
 * Invariants: everything here is under large_lock, except the system calls that map, unmap or
 * purge a range no other thread can see (and the retained index's pool, which grows under
 * it, rarely); table entries have key != 0; cached ranges are dirty,
 * and calloc clears a reused one; retained ranges are purged (zero); debug entries have
 * req != 0 and never enter the cache. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "background.h"
#include "config.h"
#include "diag/diag.h"
#include "engine.h"
#include "large.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "report.h"
#include "retained.h"
#include "types.h"

struct lentry {
	uintptr_t key;  /* address handed out; 0 = empty slot */
	uintptr_t base; /* its range */
	size_t len;
	uint64_t map;   /* the mapping (VMA) the range lies in */
	size_t req;     /* debug blocks: the size asked for; 0 otherwise */
	uint8_t guard;  /* GUARD_BEFORE, GUARD_AFTER: a page with no access is on that side */
	uint32_t prof;  /* the profiler's stack id when the block is a sample (prof.c); 0: none */
	size_t preq;    /* ... and the size it was sampled with */
};

unsigned sm_large_debug; /* SLUBMALLOC_DEBUG flags for large blocks (set at init) */

static uint64_t next_map = 1; /* mapping ids: one per mmap, and per mremap that moved */

static sm_lock_t large_lock;
static struct lentry *table;
static size_t table_cap, table_used;
static struct lcached cached[LARGE_CACHE_SLOTS];
static size_t cached_bytes;   /* of cached[] */
static uint64_t cached_since = UINT64_MAX; /* no cached range was freed before (expire) */
static struct lcached recent; /* the range freed last (up to LARGE_RECENT_MAX); base 0: none */
/* A large call unmaps at most LARGE_DROP_BATCH ranges a step (expire, cache_put), so its array
 * of them is small on the caller's stack; expired ranges beyond that wait for the next call. */
#define LARGE_DROP_BATCH 16
#define LARGE_DROP_MAX (3 * (LARGE_DROP_BATCH + 1)) /* expire and two cache_put */
uint64_t sm_stat_large, sm_stat_large_req;
static uint64_t live_n, live_bytes, peak_n, peak_bytes; /* blocks handed out (statistics) */
/* The most live bytes since recent_peak_at; it starts over from the live bytes once it is a
 * purge delay old (cache_cap). */
static uint64_t recent_peak, recent_peak_at;

static void live_add(int64_t n, int64_t bytes)
{
	live_n += (uint64_t)n;
	live_bytes += (uint64_t)bytes;
	if (live_n > peak_n)
		peak_n = live_n;
	if (live_bytes > peak_bytes)
		peak_bytes = live_bytes;
	if (live_bytes > recent_peak)
		recent_peak = live_bytes;
}

static size_t slot_of(uintptr_t key)
{
	return (size_t)((key >> 12) * 0x9E3779B97F4A7C15ULL >> 20) & (table_cap - 1);
}

static struct lentry *lookup(uintptr_t key)
{
	if (!table_cap)
		return NULL;
	for (size_t i = slot_of(key);; i = (i + 1) & (table_cap - 1)) {
		if (table[i].key == key)
			return &table[i];
		if (!table[i].key)
			return NULL;
	}
}

static void insert_nogrow(struct lentry e)
{
	size_t i = slot_of(e.key);
	while (table[i].key)
		i = (i + 1) & (table_cap - 1);
	table[i] = e;
	table_used++;
}

static int grow(void)
{
	size_t cap = table_cap ? table_cap * 2 : 1024;
	struct lentry *t = sm_os_map(cap * sizeof *t), *old = table;
	if (!t)
		return -1;
	size_t oldcap = table_cap;
	table = t, table_cap = cap, table_used = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].key)
			insert_nogrow(old[i]);
	if (old)
		sm_os_unmap(old, oldcap * sizeof *old);
	return 0;
}

static void erase(struct lentry *e)
{
	size_t i = (size_t)(e - table), j = i;
	for (;;) {
		j = (j + 1) & (table_cap - 1);
		if (!table[j].key)
			break;
		size_t k = slot_of(table[j].key);
		/* move j back to i unless its home k lies cyclically in (i, j] */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		table[i] = table[j];
		i = j;
	}
	table[i].key = 0;
	table_used--;
}

/* Drop cached ranges older than the delay (all of them when force): up to LARGE_DROP_BATCH,
 * and the recent one. Lock held; the caller unmaps them after unlocking. */
static unsigned expire(struct lcached *out, bool force)
{
	if (!cached_bytes && !recent.base)
		return 0;
	uint64_t now = sm_os_now_ns(), since = UINT64_MAX;
	unsigned n = 0, i = 0;
	if (cached_bytes &&
	    (force || (cached_since != UINT64_MAX && now - cached_since > sm_opt.purge_delay_ns))) {
		for (; i < LARGE_CACHE_SLOTS && n < LARGE_DROP_BATCH; i++) {
			if (!cached[i].base)
				continue;
			if (force || now - cached[i].when > sm_opt.purge_delay_ns) {
				out[n++] = cached[i];
				cached_bytes -= cached[i].len;
				cached[i].base = 0;
			} else if (cached[i].when < since) {
				since = cached[i].when;
			}
		}
		if (i == LARGE_CACHE_SLOTS) /* (a batch cut short leaves it as it was) */
			cached_since = since;
	}
	if (recent.base && (force || now - recent.when > sm_opt.purge_delay_ns)) {
		out[n++] = recent;
		recent.base = 0;
	}
	return n;
}

/* Unmap a range with its guard pages. */
static void unmap_range(uintptr_t base, size_t len, unsigned guard)
{
	size_t before = guard & GUARD_BEFORE ? sm_page_size : 0;
	size_t after = guard & GUARD_AFTER ? sm_page_size : 0;
	sm_os_unmap((void *)(base - before), before + len + after);
}

/* Unmap a range's guard pages alone (before mremap). */
static void unmap_guards(uintptr_t base, size_t len, unsigned guard)
{
	if (guard & GUARD_BEFORE)
		sm_os_unmap((void *)(base - sm_page_size), sm_page_size);
	if (guard & GUARD_AFTER)
		sm_os_unmap((void *)(base + len), sm_page_size);
}

static size_t unmap_all(struct lcached *v, unsigned n) /* returns their bytes */
{
	size_t bytes = 0;
	for (unsigned i = 0; i < n; i++) {
		unmap_range(v[i].base, v[i].len, v[i].guard);
		bytes += v[i].len;
	}
	return bytes;
}

/* Cut len bytes from the bottom of range r: all of it when the rest would be under 1/8 of len,
 * so no sliver stays behind. Returns the bytes cut; *guard: their guards (the one before; the
 * one after too when r is used up, r->len 0). */
static size_t cut_lower(struct lcached *r, size_t len, uint8_t *guard)
{
	if (r->len - len < len / 8)
		len = r->len;
	*guard = r->len > len ? r->guard & GUARD_BEFORE : r->guard;
	r->guard &= GUARD_AFTER;
	r->cold = false; /* (its first pages are others now) */
	r->base += len;
	r->len -= len;
	return len;
}

/* Take len bytes from the best-fitting cached range; the rest of it stays cached, unless it is
 * under 1/8 of len: then the whole range goes (*have > len), so no sliver stays behind. When
 * no range is big enough, take the largest one of at least len / 2 whole and say its length in
 * *have (< len): the caller extends it with mremap, which keeps its resident pages. A range
 * whose growth probe failed (cold) is passed over until it merges or is cut. 0: none fits.
 * *map: the range's mapping; *guard: the guards of the range taken (a split hands out the
 * lower part, with the guard before, if any: so a block reused from a range starts where an
 * earlier one did, and finds the pages that one touched resident). */
static uintptr_t cache_take(size_t len, size_t *have, uint64_t *map, uint8_t *guard)
{
	int best = -1, largest = -1;
	for (int i = 0; i < LARGE_CACHE_SLOTS; i++) {
		if (!cached[i].base)
			continue;
		if (cached[i].len >= len && (best < 0 || cached[i].len < cached[best].len))
			best = i;
		if (!cached[i].cold && (largest < 0 || cached[i].len > cached[largest].len))
			largest = i;
	}
	*have = len;
	if (best < 0) {
		if (largest < 0 || cached[largest].len < len / 2)
			return 0;
		uintptr_t base = cached[largest].base;
		*have = cached[largest].len;
		*map = cached[largest].map;
		*guard = cached[largest].guard;
		cached_bytes -= *have;
		cached[largest].base = 0;
		return base;
	}
	uintptr_t base = cached[best].base;
	*map = cached[best].map;
	*have = cut_lower(&cached[best], len, guard);
	cached_bytes -= *have;
	if (!cached[best].len)
		cached[best].base = 0;
	return base;
}

/* The bytes the cache may hold: LARGE_CACHE_BYTES; or the live large bytes; or the most live
 * large bytes within the last purge delay or so, up to LARGE_CACHE_PEAK_MAX; whichever is
 * most. A program that keeps a window of large blocks then finds a fit among the freed ones,
 * instead of faulting new pages in; so does one whose threads free all their blocks and the
 * next ones take as many again (a wave). The purge delay ends the share, at the next large
 * call: a program that frees its blocks and makes no more large calls keeps up to
 * LARGE_CACHE_PEAK_MAX resident (SLUBMALLOC_BACKGROUND=1 purges it on time). */
static size_t cache_cap(void)
{
	uint64_t now = sm_os_now_ns();
	if (now - recent_peak_at > sm_opt.purge_delay_ns) {
		recent_peak = live_bytes;
		recent_peak_at = now;
	}
	uint64_t cap = recent_peak < LARGE_CACHE_PEAK_MAX ? recent_peak : LARGE_CACHE_PEAK_MAX;
	cap = cap > live_bytes ? cap : live_bytes;
	return cap > LARGE_CACHE_BYTES ? cap : LARGE_CACHE_BYTES;
}

/* Cache the range m, merged with cached neighbours of the same mapping (a range spanning two
 * mappings could not be remapped); ranges that no longer fit (slots, bytes: oldest first) go
 * to drop[] for the caller to unmap. When LARGE_DROP_BATCH of them do not make room, m goes
 * there too. Returns how many (at most LARGE_DROP_BATCH + 1). */
static unsigned cache_put(struct lcached m, struct lcached *drop)
{
	unsigned nd = 0;
	int free_slot = -1, oldest = -1;
	for (int i = 0; i < LARGE_CACHE_SLOTS; i++) { /* one pass: no two cached ranges touch */
		struct lcached *c = &cached[i];
		if (c->base && c->map == m.map &&
		    (c->base + c->len == m.base || m.base + m.len == c->base)) {
			m.guard = c->base < m.base /* the lower one's before, the upper one's after */
					  ? (c->guard & GUARD_BEFORE) | (m.guard & GUARD_AFTER)
					  : (m.guard & GUARD_BEFORE) | (c->guard & GUARD_AFTER);
			m.base = c->base < m.base ? c->base : m.base;
			m.len += c->len;
			m.cold = false; /* (unknown: probe it again) */
			cached_bytes -= c->len;
			c->base = 0;
		}
		if (!c->base)
			free_slot = i;
		else if (oldest < 0 || c->when < cached[oldest].when)
			oldest = i;
	}
	size_t cap = cache_cap();
	for (;;) {
		if (m.len > cap || nd == LARGE_DROP_BATCH) {
			drop[nd++] = m;
			return nd;
		}
		if (free_slot >= 0 && cached_bytes + m.len <= cap) {
			cached[free_slot] = m;
			cached_bytes += m.len;
			cached_since = m.when < cached_since ? m.when : cached_since;
			return nd;
		}
		drop[nd++] = cached[oldest];
		cached_bytes -= cached[oldest].len;
		cached[oldest].base = 0;
		free_slot = oldest;
		oldest = -1;
		for (int i = 0; i < LARGE_CACHE_SLOTS; i++)
			if (cached[i].base && (oldest < 0 || cached[i].when < cached[oldest].when))
				oldest = i;
	}
}

/* ---- retained ranges ---- */

/* The lowest retained range of len bytes or more: its lower part (all of it when the rest
 * would be under 1/8 of len); *have: the bytes handed out; *guard: their guards. 0: none fits.
 * Lock held. */
static uintptr_t retained_take(size_t len, size_t *have, uint8_t *guard)
{
	struct lcached r;
	uint32_t node = sm_ret_fit(len, &r);
	if (!node)
		return 0;
	uintptr_t base = r.base;
	*have = cut_lower(&r, len, guard);
	sm_ret_cut(node, &r);
	return base;
}

/* Ranges that left the cache (no lock held): purged and retained; those that cannot be (a
 * failed purge: locked pages; LARGE_RETAINED_MAX ranges) are unmapped. Returns the bytes
 * purged. */
static size_t let_go(struct lcached *v, unsigned n)
{
	size_t bytes = 0;
	bool purged[LARGE_DROP_MAX];
	if (!n)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		purged[i] = sm_os_purge((void *)v[i].base, v[i].len);
		bytes += purged[i] ? v[i].len : 0;
	}
	unsigned nd = 0;
	sm_lock(&large_lock);
	for (unsigned i = 0; i < n; i++)
		if (!purged[i] || !sm_ret_add(&v[i]))
			v[nd++] = v[i];
	sm_unlock(&large_lock);
	unmap_all(v, nd);
	return bytes;
}

/* ---- debug blocks ---- */
#define LQUAR_SLOTS 64
#define LRZ_BYTE 0xbb
static struct lcached lquar[LQUAR_SLOTS]; /* freed debug mappings, oldest next */
static unsigned lquar_next;

static bool in_quarantine(uintptr_t p)
{
	for (unsigned i = 0; i < LQUAR_SLOTS; i++)
		if (lquar[i].base && p - lquar[i].base < lquar[i].len)
			return true;
	return false;
}

static void *debug_alloc(size_t size, size_t align)
{
	size_t page = sm_page_size, a = align > MIN_ALIGN ? align : MIN_ALIGN;
	size_t body = (size + a - 1 + page - 1) & ~(page - 1);
	size_t len = body + 2 * page;
	char *map = sm_os_reserve(len);
	if (!map)
		return errno = ENOMEM, NULL;
	sm_os_protect(map + page, body, true);
	char *end = map + page + body;
	char *p = (char *)((uintptr_t)(end - size) & ~(a - 1));
	if (sm_large_debug & DBG_Z) {
		memset(map + page, LRZ_BYTE, (size_t)(p - (map + page)));
		memset(p + size, LRZ_BYTE, (size_t)(end - (p + size)));
	}
	sm_lock(&large_lock);
	if ((table_used + 1) * 2 > table_cap && grow() < 0) {
		sm_unlock(&large_lock);
		sm_os_unmap(map, len);
		return errno = ENOMEM, NULL;
	}
	insert_nogrow((struct lentry){.key = (uintptr_t)p, .base = (uintptr_t)map, .len = len,
				      .map = 0, .req = size});
	sm_stat_large++;
	live_add(1, (int64_t)body);
	sm_unlock(&large_lock);
	return p;
}

/* The red zone's first changed byte around debug block e, or NULL. */
static const unsigned char *debug_bad_zone(const struct lentry *e)
{
	const unsigned char *lo = (const unsigned char *)e->base + sm_page_size;
	const unsigned char *hi = (const unsigned char *)e->base + e->len - sm_page_size;
	const unsigned char *p = (const unsigned char *)e->key;
	for (const unsigned char *q = lo; q < p; q++)
		if (*q != LRZ_BYTE)
			return q;
	for (const unsigned char *q = p + e->req; q < hi; q++)
		if (*q != LRZ_BYTE)
			return q;
	return NULL;
}

/* "slubmalloc: redzone overwritten at 0x.. (large block 0x.., offset N, size S)", abort.
 * when: "at exit", ...: the scan that found it; NULL: a free. */
SM_NORETURN static void zone_report(const struct lentry *e, const unsigned char *bad,
				    const char *when)
{
	const unsigned char *p = (const unsigned char *)e->key;
	sm_write(2, "slubmalloc: redzone overwritten at 0x");
	sm_write_num(2, (uintptr_t)bad, 16);
	sm_write(2, " (large block 0x");
	sm_write_num(2, (uintptr_t)p, 16);
	sm_write(2, bad < p ? ", offset -" : ", offset ");
	sm_write_num(2, (uint64_t)(bad < p ? p - bad : bad - p), 10);
	sm_write(2, ", size ");
	sm_write_num(2, e->req, 10);
	sm_write(2, ")\n");
	if (when) {
		sm_write(2, "slubmalloc:   found ");
		sm_write(2, when);
		sm_write(2, "\n");
	}
	abort();
}

void sm_large_debug_scan(const char *when)
{
	if (!(sm_large_debug & DBG_Z))
		return;
	sm_lock(&large_lock);
	for (size_t i = 0; table && i < table_cap; i++) {
		const unsigned char *bad = table[i].key && table[i].req ? debug_bad_zone(&table[i]) : NULL;
		if (bad) {
			struct lentry m = table[i];
			sm_unlock(&large_lock);
			zone_report(&m, bad, when);
		}
	}
	sm_unlock(&large_lock);
}

/* Free debug block e (lock held; released here). */
static void debug_free(struct lentry *e)
{
	struct lentry m = *e;
	if (sm_large_debug & DBG_Z) {
		const unsigned char *bad = debug_bad_zone(&m);
		if (bad) {
			sm_unlock(&large_lock);
			zone_report(&m, bad, NULL);
		}
	}
	erase(e);
	live_add(-1, -(int64_t)(m.len - 2 * sm_page_size));
	struct lcached out = lquar[lquar_next];
	lquar[lquar_next] = (struct lcached){.base = m.base, .len = m.len};
	lquar_next = (lquar_next + 1) % LQUAR_SLOTS;
	sm_unlock(&large_lock);
	sm_os_purge((void *)m.base, m.len);
	sm_os_protect((void *)m.base, m.len, false);
	if (out.base)
		sm_os_unmap((void *)out.base, out.len);
}

/* A new mapping: a guard page, len bytes (aligned to align), a guard page. Returns the address
 * of the len bytes. *guard: the guards there (none when they cannot be set: too many mappings;
 * none before an aligned block, whose mapping is trimmed to its alignment). Without guards
 * (over the budget): the len bytes alone. */
static uintptr_t map_guarded(size_t len, size_t align, bool guards, uint8_t *guard)
{
	size_t page = sm_page_size;
	*guard = 0;
	if (!guards)
		return (uintptr_t)(align > page ? sm_os_map_aligned(len, align) : sm_os_map(len));
	if (align > page) {
		char *p = sm_os_map_aligned(len + page, align);
		if (!p)
			return 0;
		*guard = sm_os_protect(p + len, page, false) ? GUARD_AFTER : 0;
		if (!*guard)
			sm_os_unmap(p + len, page);
		return (uintptr_t)p;
	}
	char *p = sm_os_reserve(len + 2 * page);
	if (!p)
		return 0;
	if (!sm_os_protect(p + page, len, true)) { /* too many mappings: a plain one */
		sm_os_unmap(p, len + 2 * page);
		*guard = 0;
		return (uintptr_t)sm_os_map(len);
	}
	*guard = GUARD_BEFORE | GUARD_AFTER;
	return (uintptr_t)(p + page);
}

/* calloc's block in a reused range, whose first n bytes (of len) hold the last user's data.
 * A memset clears a page in memory for a small part of a page fault, but faults in each page
 * that is not; a purge makes the program fault in each page it writes. So the pages in memory
 * decide (mincore): at least half of them, and below LARGE_PURGE_ZERO: memset; else purge.
 * Locked pages (mlockall) stay as they were when purged: they get the memset too. */
static void zero_reused(uintptr_t base, size_t n, size_t len)
{
	size_t pages = (n + sm_page_size - 1) & ~(sm_page_size - 1);
	if (len < LARGE_PURGE_ZERO && 2 * sm_os_resident((void *)base, pages) >= pages)
		memset((void *)base, 0, n);
	else if (!sm_os_purge((void *)base, pages))
		memset((void *)base, 0, n);
}

void *sm_large_alloc(size_t size, size_t align, bool zero)
{
	if (size > PTRDIFF_MAX - 2 * REGION_SIZE || align > REGION_SIZE * 256)
		return errno = ENOMEM, NULL;
	if (sm_large_debug)
		return debug_alloc(size, align); /* (fresh pages: zero) */
	size_t len = size ? (size + sm_page_size - 1) & ~(sm_page_size - 1) : sm_page_size;
	struct lcached drop[LARGE_DROP_MAX];
	uintptr_t base = 0;

	size_t have = len;
	uint64_t map = 0;
	uint8_t guard = 0;
	bool fresh = false; /* a retained range: purged, zero */
	sm_lock(&large_lock);
	unsigned nd = expire(drop, false);
	if (align <= sm_page_size) {
		base = cache_take(len, &have, &map, &guard);
		if (!base)
			fresh = (base = retained_take(len, &have, &guard)) != 0;
	}
	bool guards = live_n < LARGE_GUARDED_MAX;
	sm_unlock(&large_lock);
	let_go(drop, nd);

	if (base && have < len) { /* the largest cached range, to grow */
		void *q = NULL;
		size_t probe = have < LARGE_GROW_PROBE ? have : LARGE_GROW_PROBE;
		if (2 * sm_os_resident((void *)base, probe) >= probe) { /* they move along */
			unmap_guards(base, have, guard); /* (so that the range may grow in place) */
			guard = 0;
			q = sm_os_remap((void *)base, have, len);
		}
		if (q) {
			map = (uintptr_t)q == base ? map : 0; /* moved: a mapping of its own */
			base = (uintptr_t)q;
		} else { /* few pages in memory, or out of address space: it stays cached, cold */
			struct lcached r = {.base = base, .len = have, .when = sm_os_now_ns(),
					    .map = map, .guard = guard, .cold = true};
			sm_lock(&large_lock);
			if ((nd = cache_put(r, drop))) { /* pushed out: retained first, so they fit too */
				sm_unlock(&large_lock);
				let_go(drop, nd);
				sm_lock(&large_lock);
			}
			sm_bg_kick(); /* (the cache may have been empty) */
			fresh = (base = retained_take(len, &have, &guard)) != 0;
			sm_unlock(&large_lock);
		}
	}
	if (base && have > len)
		len = have; /* the whole range, sliver included */
	bool dirty = base && !fresh;
	size_t old = have; /* the reused bytes: a range grown by mremap is zero past them */
	if (!base) {
		/* Past the guards' budget, a chunk: its rest is retained for the next blocks. */
		size_t chunk = guards || align > sm_page_size || len >= LARGE_MAP_CHUNK ? len
										 : LARGE_MAP_CHUNK;
		base = map_guarded(chunk, align, guards, &guard);
		if (!base && chunk > len)
			base = map_guarded(chunk = len, align, guards, &guard);
		if (!base && sm_large_release(true, NULL)) /* the cache held the address space */
			base = map_guarded(chunk = len, align, guards, &guard);
		if (!base)
			return errno = ENOMEM, NULL;
		map = 0;
		if (chunk > len) {
			struct lcached rest = {.base = base + len, .len = chunk - len};
			sm_lock(&large_lock);
			bool kept = sm_ret_add(&rest);
			sm_unlock(&large_lock);
			if (!kept)
				sm_os_unmap((void *)rest.base, rest.len);
		}
	}
	sm_lock(&large_lock);
	if (!map)
		map = next_map++;
	if ((table_used + 1) * 2 > table_cap && grow() < 0) {
		sm_unlock(&large_lock);
		unmap_range(base, len, guard);
		return errno = ENOMEM, NULL;
	}
	insert_nogrow((struct lentry){.key = base, .base = base, .len = len, .map = map,
				      .guard = guard});
	sm_stat_large++;
	if (sm_opt.stats)
		sm_stat_large_req += size;
	live_add(1, (int64_t)len);
	sm_unlock(&large_lock);
	if (zero && dirty)
		zero_reused(base, size < old ? size : old, len);
	return (void *)base;
}

/* Is p inside a cached (freed) range? Lock held. */
static bool in_cached(uintptr_t p)
{
	for (unsigned i = 0; i < LARGE_CACHE_SLOTS; i++)
		if (cached[i].base && p - cached[i].base < cached[i].len)
			return true;
	return recent.base && p - recent.base < recent.len;
}

/* Unregister p; keep its range in the cache, or unmap it. 1: done; 0: p is not ours; -1: p is
 * in a range freed and still cached (a double free, seen while the range waits). */
int sm_large_free(void *p)
{
	struct lcached drop[LARGE_DROP_MAX];
	sm_lock(&large_lock);
	struct lentry *e = lookup((uintptr_t)p);
	if (!e) {
		int r = in_cached((uintptr_t)p) || in_quarantine((uintptr_t)p) ? -1 : 0;
		sm_unlock(&large_lock);
		return r;
	}
	uint32_t prof = e->prof;
	size_t preq = e->preq;
	if (e->req) {
		debug_free(e);
		if (prof)
			sm_prof_drop(prof, preq);
		return 1;
	}
	struct lcached m = {.base = e->base, .len = e->len, .when = sm_os_now_ns(), .map = e->map,
			    .guard = e->guard};
	erase(e);
	live_add(-1, -(int64_t)m.len);
	unsigned nd = expire(drop, false);
	struct lcached prev = recent;
	recent.base = 0;
	if (prev.base)
		nd += cache_put(prev, drop + nd);
	if (m.len <= LARGE_RECENT_MAX && m.len <= cache_cap())
		recent = m;
	else
		nd += cache_put(m, drop + nd);
	sm_bg_kick(); /* (the cache may have been empty) */
	sm_unlock(&large_lock);
	if (prof)
		sm_prof_drop(prof, preq);
	let_go(drop, nd);
	return 1;
}

/* p (a live large block) is the profiler's sample id, of req bytes. */
void sm_large_set_prof(void *p, uint32_t id, size_t req)
{
	sm_lock(&large_lock);
	struct lentry *e = lookup((uintptr_t)p);
	if (e) {
		e->prof = id;
		e->preq = req;
	}
	sm_unlock(&large_lock);
	if (!e && id)
		sm_prof_drop(id, req);
}

size_t sm_large_usable(const void *p)
{
	sm_lock(&large_lock);
	struct lentry *e = lookup((uintptr_t)p);
	size_t n = !e ? 0 : e->req ? e->req : e->len - ((uintptr_t)p - e->base);
	sm_unlock(&large_lock);
	return n;
}

/* Grow block m over range c, which starts at its end and holds at least need bytes (cut_lower:
 * perhaps all of c). Returns the bytes taken. Lock held. */
static size_t grow_over(struct lentry *m, struct lcached *c, size_t need)
{
	uint8_t guard;
	need = cut_lower(c, need, &guard);
	m->guard |= guard & GUARD_AFTER; /* (c used up: its guard after is m's now) */
	live_add(0, (int64_t)need);
	m->len += need;
	return need;
}

/* Grow block m to len bytes in place, over the cached range just above it (of the same
 * mapping, long enough): its pages are resident, and no system call is needed. A realloc'd
 * block that took the lower part of a cached range grows so, where mremap would have to move
 * it (the rest is mapped) and fault its new pages in. Lock held. */
static bool grow_into_cached(struct lentry *m, size_t len)
{
	size_t need = len - m->len;
	for (int i = 0; i < LARGE_CACHE_SLOTS; i++) {
		struct lcached *c = &cached[i];
		if (!c->base || c->map != m->map || c->base != m->base + m->len || c->len < need)
			continue;
		cached_bytes -= grow_over(m, c, need);
		if (!c->len)
			c->base = 0;
		return true;
	}
	return false;
}

/* The same over a retained range just above m (purged: the pages grown over read as zero).
 * Lock held. */
static bool grow_into_retained(struct lentry *m, size_t len)
{
	struct lcached r;
	uint32_t node = sm_ret_at(m->base + m->len, len - m->len, &r);
	if (!node)
		return false;
	grow_over(m, &r, len - m->len);
	sm_ret_cut(node, &r);
	return true;
}

/* Resize the large block p (one of ours) in place, or by mremap. NULL when that cannot be
 * done (an aligned block that does not start its mapping, or mremap failed): the caller
 * copies. */
void *sm_large_realloc(void *p, size_t size)
{
	size_t len = (size + sm_page_size - 1) & ~(sm_page_size - 1);
	if (size > PTRDIFF_MAX - 2 * REGION_SIZE)
		return NULL;
	sm_lock(&large_lock);
	struct lentry *e = lookup((uintptr_t)p);
	if (!e || e->key != e->base) {
		sm_unlock(&large_lock);
		return NULL;
	}
	struct lentry m = *e;
	bool grown = len > m.len && !(m.guard & GUARD_AFTER) &&
		     (grow_into_cached(&m, len) || grow_into_retained(&m, len));
	if (grown) {
		e->len = m.len;
		e->guard = m.guard;
		e->prof = 0;
	} else {
		erase(e);
	}
	sm_unlock(&large_lock);
	if (m.prof) /* a new block now, as far as the profiler goes (alloc.c) */
		sm_prof_drop(m.prof, m.preq);
	if (grown)
		return p;
	m.prof = 0;
	unmap_guards(m.base, m.len, m.guard); /* (so that the block may grow in place) */
	m.guard = 0;
	void *q = sm_os_remap((void *)m.base, m.len, len);
	sm_lock(&large_lock);
	insert_nogrow(q ? (struct lentry){.key = (uintptr_t)q, .base = (uintptr_t)q, .len = len,
					  .map = (uintptr_t)q == m.base ? m.map : next_map++}
			: m);
	if (q)
		live_add(0, (int64_t)len - (int64_t)m.len);
	sm_unlock(&large_lock);
	return q;
}

/* For fault.c, in a signal handler: no lock, racy reads. Whether a is in a guard page of a live
 * block (which is then *block, of *size bytes), or in a freed debug block. */
int sm_large_fault(uintptr_t a, uintptr_t *block, size_t *size)
{
	const size_t page = sm_page_size;
	const struct lentry *t = __atomic_load_n(&table, __ATOMIC_RELAXED);
	size_t cap = __atomic_load_n(&table_cap, __ATOMIC_RELAXED);
	for (size_t i = 0; t && i < cap; i++) {
		const struct lentry *e = &t[i];
		if (!e->key)
			continue;
		*block = e->key;
		*size = e->req ? e->req : e->len;
		/* a debug block's range is its mapping, guards included */
		uintptr_t lo = e->req ? e->base + page : e->base, hi = e->base + e->len - (e->req ? page : 0);
		bool before = e->req || (e->guard & GUARD_BEFORE), after = e->req || (e->guard & GUARD_AFTER);
		if (before && a < lo && lo - a <= page)
			return LF_BEFORE;
		if (after && a >= hi && a - hi < page)
			return LF_AFTER;
	}
	for (unsigned i = 0; i < LQUAR_SLOTS; i++)
		if (lquar[i].base && a - lquar[i].base < lquar[i].len) {
			*block = lquar[i].base;
			*size = lquar[i].len;
			return LF_FREED;
		}
	return LF_NONE;
}

/* For the debug library's memcpy checks: the live debug block whose pages hold a (no lock:
 * the caller writes into it, so it is live unless the program is wrong). */
bool sm_large_debug_find(uintptr_t a, uintptr_t *block, size_t *size)
{
	const struct lentry *t = __atomic_load_n(&table, __ATOMIC_RELAXED);
	size_t cap = __atomic_load_n(&table_cap, __ATOMIC_RELAXED);
	for (size_t i = 0; t && i < cap; i++) {
		const struct lentry *e = &t[i];
		if (e->key && e->req && a - (e->base + sm_page_size) < e->len - 2 * sm_page_size) {
			*block = e->key;
			*size = e->req;
			return true;
		}
	}
	return false;
}

void sm_large_figures(uint64_t *n, uint64_t *bytes, uint64_t *cached, uint64_t *pn,
		      uint64_t *pbytes)
{
	sm_lock(&large_lock);
	*n = live_n, *bytes = live_bytes; /* cached: the retained ranges too (mapped, purged) */
	*cached = cached_bytes + (recent.base ? recent.len : 0) + sm_ret_bytes();
	*pn = peak_n, *pbytes = peak_bytes;
	sm_unlock(&large_lock);
}

uint64_t sm_large_retained(void)
{
	sm_lock(&large_lock);
	uint64_t n = sm_ret_bytes();
	sm_unlock(&large_lock);
	return n;
}

/* The bytes in memory (mincore) of the live blocks, the cached ranges and the table. */
uint64_t sm_large_resident(void)
{
	sm_lock(&large_lock);
	uint64_t n = table ? sm_os_resident(table, table_cap * sizeof *table) : 0;
	for (size_t i = 0; i < table_cap; i++)
		if (table[i].key)
			n += sm_os_resident((void *)table[i].base, table[i].len);
	for (unsigned i = 0; i < LARGE_CACHE_SLOTS; i++)
		if (cached[i].base)
			n += sm_os_resident((void *)cached[i].base, cached[i].len);
	if (recent.base)
		n += sm_os_resident((void *)recent.base, recent.len);
	n += sm_ret_resident(); /* (none, unless locked) */
	sm_unlock(&large_lock);
	return n;
}

/* The cached ranges past the delay are purged and retained. force (out of memory): every
 * cached and retained range is unmapped. Returns the bytes purged or unmapped; *due (unless
 * NULL): when the next is due (the background thread), 0: none is left. */
size_t sm_large_release(bool force, uint64_t *due)
{
	struct lcached drop[LARGE_DROP_MAX];
	size_t bytes = 0;
	unsigned nd;
	uint64_t oldest;
	do { /* a batch at a time */
		sm_lock(&large_lock);
		nd = expire(drop, force);
		while (force && nd < LARGE_DROP_BATCH && sm_ret_pop(&drop[nd]))
			nd++;
		oldest = recent.base ? recent.when : UINT64_MAX;
		for (unsigned i = 0; i < LARGE_CACHE_SLOTS; i++)
			if (cached[i].base && cached[i].when < oldest)
				oldest = cached[i].when;
		sm_unlock(&large_lock);
		bytes += force ? unmap_all(drop, nd) : let_go(drop, nd);
	} while (nd >= LARGE_DROP_BATCH);
	if (due)
		*due = oldest == UINT64_MAX ? 0 : oldest + sm_opt.purge_delay_ns;
	return bytes;
}

/* malloc_trim: every cached range is purged and retained, whatever its age. Returns the bytes
 * purged. */
size_t sm_large_purge(void)
{
	struct lcached drop[LARGE_DROP_MAX];
	size_t bytes = 0;
	unsigned nd;
	do {
		sm_lock(&large_lock);
		nd = expire(drop, true);
		sm_unlock(&large_lock);
		bytes += let_go(drop, nd);
	} while (nd >= LARGE_DROP_BATCH);
	return bytes;
}

void sm_large_lock_all(void)
{
	sm_lock(&large_lock);
}

void sm_large_unlock_all(bool reinit)
{
	(void)reinit;
	sm_unlock(&large_lock);
}
