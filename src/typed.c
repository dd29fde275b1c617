/* typed.c: typed object caches, after the kernel's kmem_cache_create/alloc/free/destroy.
 * A typed cache is a struct cache of its own (its own slabs, so a constructor's work survives
 * free and reuse) with an id: its thread bins are bin[NCLASS + id], so free() of its objects
 * takes the ordinary fastpath, and slub_cache_alloc pops the same bin.
 * Invariants: an id is reused only after the destroyed cache that held it has lost its last
 * slab (sm_typed_gone), so a bin never mixes objects of two caches; a thread's typed bin is
 * set up (slots allocated, cap set) on its first slub_cache_alloc of that cache; the ctor
 * runs once per object, when it is carved; SLUB_ZERO caches clear each object on allocation.
 * Destroying a cache with objects still allocated reports them on stderr; the cache then
 * lives on (dead) until they are freed. */
#include <errno.h>
#include <string.h>

#include "fastpath.h"
#include "internal.h"
#include "slubmalloc.h"

#define KNOWN_FLAGS (SLUB_HWCACHE_ALIGN | SLUB_ZERO)

struct cache *sm_typed[MAX_TYPED];
static sm_lock_t typed_lock;

static inline struct cache *cache_from(struct slub_cache *sc)
{
	return (struct cache *)sc;
}

SM_EXPORT struct slub_cache *slub_cache_create(const char *name, size_t size, size_t align,
					       unsigned flags, void (*ctor)(void *))
{
	if (!name || !size || size > MAX_SMALL || (align & (align - 1)) || align > MAX_SMALL ||
	    (flags & ~KNOWN_FLAGS) || ((flags & SLUB_ZERO) && ctor))
		return errno = EINVAL, NULL;
	sm_init();
	if (align < 8)
		align = 8;
	if (flags & SLUB_HWCACHE_ALIGN) { /* the kernel's rule: a line, or half for small objects */
		size_t line = 64;
		while (size <= line / 2 && line > 8)
			line /= 2;
		if (line > align)
			align = line;
	}
	size_t osize = (size + align - 1) & ~(align - 1);
	if (osize < 16)
		osize = 16;
	if (osize > MAX_SMALL)
		return errno = EINVAL, NULL;
	struct cache *c = sm_memalign(64, sizeof *c);
	if (!c)
		return NULL;
	sm_lock(&typed_lock);
	unsigned id = 0;
	while (id < MAX_TYPED && sm_typed[id])
		id++;
	if (id == MAX_TYPED) {
		sm_unlock(&typed_lock);
		sm_free_fast(c);
		return errno = ENOMEM, NULL;
	}
	sm_cache_setup(c, name, (uint32_t)osize, (uint16_t)(NCLASS + id));
	c->ctor = ctor;
	c->flags = flags;
	sm_typed[id] = c;
	sm_unlock(&typed_lock);
	return (struct slub_cache *)c;
}

/* Give the thread a bin for c (first use), or NULL when its memory cannot be had. */
static struct bin *typed_bin(struct tcache *tc, struct cache *c)
{
	struct bin *b = &tc->bin[c->cls];
	if (likely(b->slots && b->cap == c->cap))
		return b;
	if (b->slots) { /* left from an earlier cache with this id: empty by the invariant */
		sm_bin_drop(tc, c->cls);
		sm_free_fast(b->slots - 1);
		b->slots = NULL;
		b->cap = 0;
	}
	void **v = sm_alloc_fast((c->cap + 1) * sizeof(void *));
	if (!v)
		return NULL;
	v[0] = NULL; /* the guard before slots[0] */
	b->slots = v + 1;
	b->count = 0;
	b->cap = c->cap;
	return b;
}

static sm_lock_t orphan_typed_lock;
static struct tcache orphan_typed; /* for threads past their exit destructor */

static void *typed_alloc_slow(struct cache *c)
{
	struct tcache *tc = &sm_tc;
	if (tc->state == T_NEW)
		sm_thread_start(tc);
	bool orphan = tc->state != T_LIVE;
	if (orphan) {
		sm_lock(&orphan_typed_lock);
		tc = &orphan_typed;
	}
	struct bin *b = typed_bin(tc, c);
	void *p = !b ? NULL : b->count ? b->slots[--b->count] : sm_refill(tc, c->cls);
	if (orphan)
		sm_unlock(&orphan_typed_lock);
	if (!p)
		errno = ENOMEM;
	return p;
}

SM_EXPORT void *slub_cache_alloc(struct slub_cache *sc)
{
	struct cache *c = cache_from(sc);
	struct bin *b = &sm_tc.bin[c->cls];
	void *p;
	if (likely(b->count))
		p = b->slots[--b->count];
	else if (!(p = typed_alloc_slow(c)))
		return NULL;
	if (c->flags & SLUB_ZERO)
		memset(p, 0, c->size);
	return p;
}

static void wrong_cache(const struct cache *c, const void *p)
{
	sm_write(2, "slubmalloc: slub_cache_free to ");
	sm_write(2, c->name);
	sm_fatal("of an object of another cache", p, "");
}

SM_EXPORT void slub_cache_free(struct slub_cache *sc, void *p)
{
	if (!p)
		return;
	uintptr_t a = (uintptr_t)p;
	if (region_is_ours(a)) {
		struct slab *s = slab_of(a);
		if (s && s->cache != cache_from(sc))
			wrong_cache(cache_from(sc), p);
	}
	sm_free_fast(p);
}

SM_EXPORT size_t slub_cache_alloc_bulk(struct slub_cache *sc, size_t n, void **ptrs)
{
	struct cache *c = cache_from(sc);
	if (!n)
		return 0;
	if (!ptrs)
		return errno = EINVAL, 0;
	struct tcache *tc = &sm_tc;
	struct bin *b = &tc->bin[c->cls];
	size_t got = 0;
	if (unlikely(tc->state != T_LIVE || b->cap != c->cap || !b->slots)) {
		if (tc->state == T_NEW)
			sm_thread_start(tc);
		if (tc->state != T_LIVE || !(b = typed_bin(tc, c))) { /* one at a time */
			for (; got < n; got++)
				if (!(ptrs[got] = slub_cache_alloc(sc)))
					goto fail;
			return n;
		}
	}
	while (got < n) {
		uint32_t k = b->count < n - got ? b->count : (uint32_t)(n - got);
		memcpy(ptrs + got, b->slots + (b->count - k), k * sizeof(void *));
		b->count -= k;
		got += k;
		if (got == n)
			break;
		size_t want = n - got < UINT32_MAX ? n - got : UINT32_MAX;
		uint32_t f = sm_fill(tc, c->cls, ptrs + got, (uint32_t)want);
		if (!f)
			goto fail;
		got += f;
	}
	if (c->flags & SLUB_ZERO)
		for (size_t i = 0; i < n; i++)
			memset(ptrs[i], 0, c->size);
	return n;
fail:
	free_bulk(got, ptrs);
	errno = ENOMEM;
	return 0;
}

SM_EXPORT void slub_cache_free_bulk(struct slub_cache *sc, size_t n, void **ptrs)
{
	struct cache *c = cache_from(sc);
	struct slab *last = NULL;
	for (size_t i = 0; ptrs && i < n; i++) {
		uintptr_t a = (uintptr_t)ptrs[i];
		if (!a || !region_is_ours(a))
			continue; /* NULL skipped; a foreign pointer is reported by free_bulk */
		struct slab *s = slab_of(a);
		if (s != last && s && s->cache != c)
			wrong_cache(c, ptrs[i]);
		last = s;
	}
	free_bulk(n, ptrs);
}

/* A dead cache's last slab is gone: its id can serve a new cache. */
void sm_typed_gone(struct cache *c)
{
	sm_lock(&typed_lock);
	bool gone = c->dead && sm_typed[c->cls - NCLASS] == c &&
		    !__atomic_load_n(&c->nr_slabs, __ATOMIC_ACQUIRE);
	if (gone)
		sm_typed[c->cls - NCLASS] = NULL;
	sm_unlock(&typed_lock);
	if (gone)
		sm_free_fast(c);
}

SM_EXPORT void slub_cache_destroy(struct slub_cache *sc)
{
	struct cache *c = cache_from(sc);
	if (!c)
		return;
	struct tcache *tc = &sm_tc;
	if (tc->bin[c->cls].slots && tc->bin[c->cls].cap == c->cap)
		sm_bin_drop(tc, c->cls);
	sm_cache_shrink(c);
	uint64_t inuse, frozen;
	sm_slabs_census(c, &inuse, &frozen);
	if (inuse || frozen) {
		sm_write(2, "slubmalloc: slub_cache_destroy(");
		sm_write(2, c->name);
		sm_write(2, "): ");
		sm_write_num(2, inuse, 10);
		sm_write(2, " objects still allocated");
		if (frozen) {
			sm_write(2, ", ");
			sm_write_num(2, frozen, 10);
			sm_write(2, " slabs held by other threads");
		}
		sm_write(2, "; the cache stays until they are freed\n");
	}
	sm_lock(&typed_lock);
	c->dead = 1;
	sm_unlock(&typed_lock);
	if (!__atomic_load_n(&c->nr_slabs, __ATOMIC_ACQUIRE))
		sm_typed_gone(c);
}

void sm_typed_lock_all(void)
{
	sm_lock(&orphan_typed_lock);
	sm_lock(&typed_lock);
	for (unsigned i = 0; i < MAX_TYPED; i++)
		if (sm_typed[i])
			sm_lock(&sm_typed[i]->lock);
}

void sm_typed_unlock_all(bool reinit)
{
	(void)reinit;
	for (unsigned i = 0; i < MAX_TYPED; i++)
		if (sm_typed[i])
			sm_unlock(&sm_typed[i]->lock);
	sm_unlock(&typed_lock);
	sm_unlock(&orphan_typed_lock);
}
