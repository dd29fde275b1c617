/* retained.c: the retained large ranges, free address space that stays mapped (large.c).
 * A range freed inside a mapping and unmapped would split the mapping in two, and the kernel
 * caps a process's mappings (vm.max_map_count). So freed ranges stay mapped, purged, with no
 * cap on their number but LARGE_RETAINED_MAX, and the next large blocks are cut from them.
 * The index is a treap: a search tree by base address, balanced by random priorities. Each
 * node also holds the longest range below it (max), so the lowest range that fits is found
 * in one descent (address-ordered first fit).
 * Nodes are numbered in a pool mapped at first use, and doubled with mremap when full: a
 * number stays valid when the pool moves.
 * Invariants: ranges are disjoint and never touch (neighbours merge); node 0 is the empty
 * tree; a node's max is the longest len in its subtree; a parent's priority is at least its
 * children's; every call is made under large_lock. */
#include "config.h"
#include "platform.h"
#include "retained.h"

struct rnode {
	uintptr_t base;
	size_t len;
	size_t max;       /* the longest len in this subtree */
	uint32_t kid[2];  /* lower, higher bases; 0: none */
	uint32_t prio;
	uint8_t guard;
};
#define POOL_FIRST 1024u /* nodes in the first pool: 40 KiB */

static struct rnode *pool;
static uint32_t pool_cap, pool_top = 1; /* node 0 is never handed out */
static uint32_t free_nodes;             /* a list through kid[0] */
static uint32_t root;
static size_t n_bytes;
static uint32_t rng = 2463534242u;

static size_t max_of(uint32_t t)
{
	return t ? pool[t].max : 0;
}

static void pull(uint32_t t)
{
	size_t a = max_of(pool[t].kid[0]), b = max_of(pool[t].kid[1]), m = pool[t].len;
	m = a > m ? a : m;
	pool[t].max = b > m ? b : m;
}

/* Tree t in two: *lo the nodes below key, *hi the rest. */
static void split(uint32_t t, uintptr_t key, uint32_t *lo, uint32_t *hi)
{
	if (!t) {
		*lo = *hi = 0;
	} else if (pool[t].base < key) {
		split(pool[t].kid[1], key, &pool[t].kid[1], hi);
		*lo = t;
		pull(t);
	} else {
		split(pool[t].kid[0], key, lo, &pool[t].kid[0]);
		*hi = t;
		pull(t);
	}
}

/* Trees a and b in one; every base in a is below every base in b. */
static uint32_t join(uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (pool[a].prio >= pool[b].prio) {
		pool[a].kid[1] = join(pool[a].kid[1], b);
		pull(a);
		return a;
	}
	pool[b].kid[0] = join(a, pool[b].kid[0]);
	pull(b);
	return b;
}

static uint32_t node_new(void)
{
	uint32_t t = free_nodes;
	if (t) {
		free_nodes = pool[t].kid[0];
		return t;
	}
	if (pool_top == pool_cap || !pool) {
		size_t cap = pool ? 2 * (size_t)pool_cap : POOL_FIRST;
		if (cap > LARGE_RETAINED_MAX)
			return 0;
		void *p = pool ? sm_os_remap(pool, pool_cap * sizeof *pool, cap * sizeof *pool)
			       : sm_os_map(cap * sizeof *pool);
		if (!p)
			return 0;
		pool = p;
		pool_cap = (uint32_t)cap;
	}
	return pool_top++;
}

/* The node with the highest base below key (below) or the lowest at or above it; 0: none. */
static uint32_t near(uintptr_t key, bool below)
{
	uint32_t t = root, found = 0;
	while (t) {
		bool lower = pool[t].base < key;
		if (lower == below)
			found = t;
		t = pool[t].kid[lower];
	}
	return found;
}

/* Take node t (in the tree) out, into *r. */
static void take(uint32_t t, struct lcached *r)
{
	uint32_t lo, mid, hi;
	*r = (struct lcached){.base = pool[t].base, .len = pool[t].len, .guard = pool[t].guard};
	split(root, r->base, &lo, &mid);
	split(mid, r->base + 1, &mid, &hi);
	root = join(lo, hi);
	pool[t].kid[0] = free_nodes;
	free_nodes = t;
	n_bytes -= r->len;
}

bool sm_ret_add(const struct lcached *r)
{
	struct lcached m = *r, o;
	uint32_t p = near(m.base, true), n = near(m.base, false);
	bool with_p = p && pool[p].base + pool[p].len == m.base;
	bool with_n = n && m.base + m.len == pool[n].base;
	if (with_p) { /* the lower one's guard before, the upper one's after */
		take(p, &o);
		m.guard = (o.guard & GUARD_BEFORE) | (m.guard & GUARD_AFTER);
		m.base = o.base;
		m.len += o.len;
	}
	if (with_n) {
		take(n, &o);
		m.guard = (m.guard & GUARD_BEFORE) | (o.guard & GUARD_AFTER);
		m.len += o.len;
	}
	uint32_t t = node_new(); /* (one was freed above, if a neighbour merged) */
	if (!t)
		return false;
	rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
	pool[t] = (struct rnode){.base = m.base, .len = m.len, .max = m.len, .prio = rng,
				 .guard = m.guard};
	uint32_t lo, hi;
	split(root, m.base, &lo, &hi);
	root = join(join(lo, t), hi);
	n_bytes += m.len;
	return true;
}

bool sm_ret_fit(size_t len, struct lcached *r)
{
	uint32_t t = root;
	if (max_of(t) < len)
		return false;
	for (;;) {
		if (max_of(pool[t].kid[0]) >= len)
			t = pool[t].kid[0];
		else if (pool[t].len >= len)
			break;
		else
			t = pool[t].kid[1];
	}
	take(t, r);
	return true;
}

bool sm_ret_take_at(uintptr_t base, size_t len, struct lcached *r)
{
	uint32_t t = near(base, false);
	if (!t || pool[t].base != base || pool[t].len < len)
		return false;
	take(t, r);
	return true;
}

bool sm_ret_pop(struct lcached *r)
{
	if (!root)
		return false;
	take(root, r);
	return true;
}

size_t sm_ret_bytes(void)
{
	return n_bytes;
}

static uint64_t resident(uint32_t t)
{
	if (!t)
		return 0;
	return sm_os_resident((void *)pool[t].base, pool[t].len) + resident(pool[t].kid[0]) +
	       resident(pool[t].kid[1]);
}

uint64_t sm_ret_resident(void)
{
	uint64_t n = pool ? sm_os_resident(pool, pool_cap * sizeof *pool) : 0;
	return n + resident(root);
}
