/* retained.c: the retained large ranges, free address space that stays mapped (large.c).
 * A range freed inside a mapping and unmapped would split the mapping in two, and the kernel
 * caps a process's mappings (vm.max_map_count). So freed ranges stay mapped, purged, with no
 * cap on their number but LARGE_RETAINED_MAX, and the next large blocks are cut from them.
 * The index is a treap: a search tree by base address, balanced by random priorities. Each
 * node also holds the longest range in its subtree (max), so the lowest range that fits is
 * found in one descent (address-ordered first fit). A block is cut from a range's lower end
 * in place: its base stays between its neighbours', so only the maxima on its path change.
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

/* The nodes with the highest base below key (*lo) and the lowest at or above it (*hi); 0:
 * none. */
static void around(uintptr_t key, uint32_t *lo, uint32_t *hi)
{
	uint32_t t = root;
	*lo = *hi = 0;
	while (t) {
		bool lower = pool[t].base < key;
		*(lower ? lo : hi) = t;
		t = pool[t].kid[lower];
	}
}

/* The maxima on the path from tree t to the node at key, after that node changed in place
 * (its base still between its neighbours'). */
static void refresh(uint32_t t, uintptr_t key)
{
	if (pool[t].base != key)
		refresh(pool[t].kid[pool[t].base < key], key);
	pull(t);
}

/* Node t out of the tree, and free. */
static void drop_node(uint32_t t)
{
	uint32_t lo, mid, hi;
	split(root, pool[t].base, &lo, &mid);
	split(mid, pool[t].base + 1, &mid, &hi);
	root = join(lo, hi);
	pool[t].kid[0] = free_nodes;
	free_nodes = t;
}

bool sm_ret_add(const struct lcached *r)
{
	uint32_t p, n, t;
	around(r->base, &p, &n);
	bool with_p = p && pool[p].base + pool[p].len == r->base;
	bool with_n = n && r->base + r->len == pool[n].base;
	if (with_p) { /* p grows over r (and n): the lower one's guard before, the upper one's after */
		pool[p].len += r->len;
		pool[p].guard = (pool[p].guard & GUARD_BEFORE) | (r->guard & GUARD_AFTER);
		if (with_n) {
			pool[p].len += pool[n].len;
			pool[p].guard = (pool[p].guard & GUARD_BEFORE) | (pool[n].guard & GUARD_AFTER);
			drop_node(n);
		}
		t = p;
	} else if (with_n) { /* n grows down over r */
		pool[n].base = r->base;
		pool[n].len += r->len;
		pool[n].guard = (r->guard & GUARD_BEFORE) | (pool[n].guard & GUARD_AFTER);
		t = n;
	} else {
		if (!(t = node_new()))
			return false;
		rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
		pool[t] = (struct rnode){.base = r->base, .len = r->len, .max = r->len, .prio = rng,
					 .guard = r->guard};
		uint32_t lo, hi;
		split(root, r->base, &lo, &hi);
		root = join(join(lo, t), hi);
		n_bytes += r->len;
		return true;
	}
	refresh(root, pool[t].base);
	n_bytes += r->len;
	return true;
}

static uint32_t copy_out(uint32_t t, struct lcached *r)
{
	*r = (struct lcached){.base = pool[t].base, .len = pool[t].len, .guard = pool[t].guard};
	return t;
}

uint32_t sm_ret_fit(size_t len, struct lcached *r)
{
	uint32_t t = root;
	if (max_of(t) < len)
		return 0;
	while (t) {
		if (max_of(pool[t].kid[0]) >= len)
			t = pool[t].kid[0];
		else if (pool[t].len >= len)
			return copy_out(t, r);
		else
			t = pool[t].kid[1];
	}
	return 0; /* (only if a max were wrong) */
}

uint32_t sm_ret_at(uintptr_t base, size_t len, struct lcached *r)
{
	uint32_t lo, t;
	around(base, &lo, &t);
	return t && pool[t].base == base && pool[t].len >= len ? copy_out(t, r) : 0;
}

void sm_ret_cut(uint32_t t, const struct lcached *r)
{
	n_bytes -= pool[t].len - r->len;
	if (!r->len) {
		drop_node(t);
		return;
	}
	pool[t].base = r->base;
	pool[t].len = r->len;
	pool[t].guard = r->guard;
	refresh(root, r->base);
}

bool sm_ret_pop(struct lcached *r)
{
	if (!root)
		return false;
	copy_out(root, r);
	n_bytes -= r->len;
	drop_node(root);
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
