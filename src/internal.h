/* internal.h: the engine's types and, grouped by file, every cross-file function: an index of
 * which file defines what. Internal names begin with sm_; public ones with slub_ or libc's.
 * The engine depends only on the platform layer (platform/platform.h) below it.
 * The concurrency rules for these types are written once, at the top of freelist.c. */
#ifndef SM_INTERNAL_H
#define SM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "platform.h"
#include "report.h"

/* Everything declared below is the library's own: hidden, so a global is one RIP-relative
 * load (no GOT) and a call a direct one. The public entry points say SM_EXPORT. */
#pragma GCC visibility push(hidden)

/* The entry points the benchmarks time start on a cache line, so that their speed does not
 * move with the size of unrelated code placed before them. */
#define SM_HOT __attribute__((aligned(64)))
/* malloc's and free's own section, malloc at a page boundary: where they sit in the i-cache,
 * the uop cache and the branch predictors then stays put when other code grows or shrinks
 * (such a move, 0x140 -> 0x280 in the page, cost cfrac 5% on the 2-core VM) */
#define SM_FASTPATH_TEXT(align) __attribute__((section(".text.hot.sm"), aligned(align)))
/* This library's own definition of an exported function (the address of its code, never that
 * of another module's which interposes it): local, a hidden alias of the symbol sym. */
#if defined(__has_attribute) && __has_attribute(copy)
#define SM_COPY_ATTRS(name) __attribute__((copy(name)))
#else
#define SM_COPY_ATTRS(name)
#endif
#define SM_STR(x) #x
#define SM_XSTR(x) SM_STR(x)
#define SM_SELF_SYM(local, name, sym)                                              \
	extern __typeof__(name) local SM_COPY_ATTRS(name)                          \
		__attribute__((alias(sym), visibility("hidden")))
#define SM_SELF(local, name) SM_SELF_SYM(local, name, SM_XSTR(name))

/* A test-and-test-and-set lock for slow paths only (partial lists, page runs, large table). */
typedef struct {
	int locked;
} sm_lock_t;

/* counters half of a slab's shared word (see freelist.c): low 32 bits inuse, bit 32 frozen. */
#define SLAB_FROZEN (1ULL << 32)
#define SLAB_INUSE(c) ((uint32_t)(c))

struct cache;

/* A slab descriptor ("struct slab"), out of band in its region's header page, one per page.
 * A slab of several pages is described by the descriptor of its first page (the head); the
 * descriptors of its other pages carry copies of the read-only fields (start .. shift, size,
 * pages) and head, so free() finds what it needs at an address it computes, without a load.
 * Its objects fill the slab up to its end; what is left over (less than one object) comes
 * before them, so an address past the last object is in another page, with another
 * descriptor. A page that belongs to no slab has start == NULL, and inverse odd and bad_q_bits != 0
 * (region.c sets 1 and ~0 before any slab uses the page; a released slab leaves its own), which
 * every object check rejects: q = a * inverse passes only for an a below twice the bytes of the
 * slab those values came from, and no address in a region is that low. start is written last
 * when a slab is made and first when it is released (slab.c, region.c). */
struct slab {
	/* line 0: set when the slab is made (owner: when it is frozen), read by free() */
	struct slab *head;        /* the descriptor of the slab's first page (itself if first) */
	char *start;              /* first object (in the first page, after the leftover); NULL:
				   * no slab (written last and cleared first: see above) */
	uint64_t inverse;         /* the inverse mod 2^64 of size's odd part (see object_q) */
	uint64_t bad_q_bits;      /* the bits no valid q has: is_object() (see object_q) */
	struct cache *cache;      /* the cache whose objects it holds (from here on, fields
				   * sm_pages_alloc clears: inverse and bad_q_bits keep rejecting) */
	uint64_t objects;         /* objects per slab (64 bits: the bulk checks broadcast it) */
	int64_t free_stack_off;   /* free()'s stack: sm_tcp + free_stack_off is the calling
				   * thread's &free_stack[cls] (an offset in struct tcache;
				   * free_stack_in adds the way to the remote stack) */
	uint16_t subline_owner;   /* objects smaller than a cache line: the id of the thread that
				   * froze the slab last (others' frees of them go to their
				   * remote_stack); 0 for larger objects, which any thread reuses */
	uint8_t cls;              /* size class; NCLASS (no thread stack) for a typed cache */
	uint8_t shift;            /* size = odd part << shift */
	uint32_t size;            /* object size (sized free checks its size against it) */
	/* line 1: the shared word, changed only by cas16(); the partial-list links; fields no
	 * fastpath reads */
	dword_t word __attribute__((aligned(64))); /* lo: freelist head, hi: counters */
	struct slab *next, *prev; /* cache->partial links (cache lock); head only */
	uint32_t carved;          /* objects handed out since the slab was made or started over;
				   * the rest are on no freelist (slab.c) */
	uint16_t frozen_by;       /* head: the id of the thread that froze it last (depot.c) */
	uint8_t pages;            /* 64 KiB pages spanned */
	uint8_t on_partial;       /* on cache->partial (cache lock) */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct slab) == 128, "page_desc() scales the page index by 128");
_Static_assert(offsetof(struct slab, size) < 64, "free()'s fields share line 0");
_Static_assert(NCLASS < 256, "slab->cls is a byte");

/* A 4 MiB region: page 0 is this header, pages 1..63 are slab pages. The descriptors come
 * first, at the region's start, so free() reaches the fields it reads (offsets below 128) with
 * one-byte displacements: a shorter fastpath. */
struct region {
	struct slab slabs[REGION_PAGES];  /* descriptor of the slab that starts at page i */
	uint64_t free_mask;               /* bit i: page i is free (page lock) */
	uint64_t dirty_mask;              /* free pages not yet purged (page lock) */
	uint64_t dirty_since;             /* when dirty_mask last became non-zero (page lock) */
	struct region *next;              /* all regions (page lock) */
	uint32_t open;                    /* pages [0, open) are read-write, the rest have no
					   * access until first used (page lock) */
	struct slab *map[REGION_PAGES];   /* page -> the slab covering it, NULL when free */
};
_Static_assert(offsetof(struct region, slabs) == 0, "free() reads descriptors at disp8");

/* Where a thread's objects of one cache come from, after its stack: a spill chain (a take-all's
 * objects beyond the array, encoded links at the cache's fpoff), then its active slab. */
struct source {
	void *spill;          /* encoded chain */
	uint32_t nspill;      /* objects on it (statistics read it from other threads) */
	uint32_t refills;     /* sm_refill calls for this class since the thread began (or since
			       * malloc_trim): the second grows the stacks (a producer) */
	struct slab *active;  /* frozen for this thread */
	uint32_t kf_left;     /* SLUBMALLOC_KFENCE: allocations of the class until the sampled one,
			       * counted up to smp_mark, the allocation stack's top then (sample.c) */
	uint32_t plain;       /* the next plain objects of spill are no group's head: their words
			       * past the key are not read (take_spill, freelist.c) */
	void **smp_mark;
	int64_t pf_left;      /* SLUBMALLOC_PROF: bytes of the class until its sample; 0: not drawn
			       * yet, -1: due (sample.c) */
};

/* A cache ("struct kmem_cache"): one per size class, or one per typed cache. */
struct cache {
	sm_lock_t lock;        /* guards the partial list, nr_*, on_partial, slab transitions */
	uint32_t size;         /* object size */
	uint32_t objects;      /* objects per slab */
	uint32_t pages;        /* slab pages per slab */
	uint32_t cap;          /* thread cache slots (objects) at first */
	uint32_t cap_grown;    /* ... and once the class's free stack has overflowed, or it has
				* refilled twice (>= cap; sm_flush, sm_refill) */
	uint32_t cap_burst;    /* ... and once it overflows again with own objects (>= cap_grown;
				* sm_flush) */
	uint32_t fpoff;        /* where a free object keeps its free pointer (past a ctor's body) */
	uint64_t inverse;      /* slab_index's multiplier (struct slab) */
	uint8_t shift;
	uint16_t cls;
	uint16_t id;           /* typed caches: index in the typed table and in struct tcache */
	struct slab *partial;  /* slabs with free objects, not frozen */
	uint32_t nr_partial;   /* slabs on the partial list */
	uint32_t nr_empty;     /* of them, slabs with no object in use */
	uint64_t nr_slabs;     /* slabs alive (atomic adds) */
	void (*ctor)(void *);  /* typed caches: run on each object when it is first carved */
	unsigned flags;        /* typed caches: SLUB_* flags */
	int dead;              /* typed caches: 3 while slub_cache_destroy runs, then 1: destroyed,
				* freed when its last slab goes (2) */
	unsigned debug;        /* SLUBMALLOC_DEBUG flags (DBG_*); 0: a normal cache (debug.c) */
	uint32_t osize;        /* debug caches: the object size inside each slot */
	sm_lock_t dlock;       /* debug caches: guards debug_source */
	struct source debug_source; /* debug caches: where objects come from (no thread stacks) */
	char name[32];
} __attribute__((aligned(64)));

#include "stack.h"

enum tstate { T_NEW = 0, T_LIVE = 1, T_DEAD = 2 };

/* A class's countdown to its next sample, in the profiler's patched mode: bytes until the
 * sample, less one (sample.c). The size of a stack (pf_count_beside). */
struct pf_count {
	int64_t left;
	uint8_t drawn;   /* left was drawn */
	uint8_t pad[sizeof(struct stack) - sizeof(int64_t) - 1];
};

struct tcache {
	/* malloc's fastpath pops free_stack first, then alloc_stack */
	struct stack alloc_stack[NCLASS + 1];
	/* free's fastpath pushes free_stack. free_stack[NCLASS] stays empty (cap 0): typed objects
	 * (cls NCLASS) take free()'s slow path. free_stack follows alloc_stack (free_stack_beside). */
	struct stack free_stack[NCLASS + 1];
	/* free() pushes here the objects smaller than a cache line of slabs another thread froze
	 * last (free_stack_in). They are never reused here (no passive false sharing) and go back
	 * to their slabs in batches, when the stack is full (sm_free_slow). remote_stack follows
	 * free_stack (REMOTE_OFF). */
	struct stack remote_stack[NCLASS + 1];
	/* SLUBMALLOC_PROF's patched mode: each class counts its bytes down to its next sample
	 * (fastpath.h). A stack's size apart, as the stacks are, so that the fastpath finds a
	 * class's countdown from its stack. */
	struct pf_count pf_direct[NCLASS + 1];
	struct source source[NCLASS]; /* slow path: what refills come from */
	void **block;                 /* the memory of the size classes' slot arrays */
	void **burst[NCLASS];         /* the arrays of alloc_stack[c] and free_stack[c] once grown
				       * to cap_burst (sm_flush; unmapped at thread exit), else NULL */
	uint32_t state;               /* enum tstate */
	uint16_t id;                  /* this thread's id, 1..65535, for slab->subline_owner (two
				       * threads may share one: a cost, false sharing, never an
				       * error) */
	uint8_t smp_armed;            /* sampling counts this thread's allocations: every free
				       * stack is held (sample.c) */
	uint64_t smp_rng;             /* its random numbers (sample.c) */
	int64_t pf_other;             /* SLUBMALLOC_PROF: bytes of large, aligned and debug blocks
				       * until their next sample (sample.c) */

	/* Typed caches (typed.c): touched only inside slub_cache_* calls, which set sm_typed_in to
	 * their cache meanwhile, and by slub_cache_destroy of another thread once it is not that
	 * cache. */
	struct cache *const *typed_in; /* &sm_typed_in of its thread (TLS: a thread without a
					* cache of its own sets it too) */
	struct cache *typed_for[MAX_TYPED];    /* the cache typed_alloc[id] serves (NULL: none) */
	struct stack typed_alloc[MAX_TYPED];   /* slub_cache_alloc pops here (allocation stack) */
	struct stack typed_free[MAX_TYPED];    /* slub_cache_free pushes here (free stack) */
	void **typed_mem[MAX_TYPED];           /* the memory of both stacks' slot arrays */
	struct source typed_source[MAX_TYPED];
	struct tcache *rnext, *rprev;    /* the registry of live thread caches (typed.c) */
	struct sm_tstats *st;            /* SLUBMALLOC_STATS=1: this thread's event counters */
	uint64_t trim_gen;               /* the last malloc_trim this thread has drained for */
	uint32_t slow_n;      /* its refills and flushes: a sign of life (its relaxed stores) */
	uint32_t bg_seen;     /* slow_n at the background thread's last look (that thread's,
			       * under the registry lock, as the two below) */
	uint32_t bg_poked_at; /* slow_n when it was poked last */
	uint8_t bg_poked;     /* poked, and not at work since */
	/* free_bulk's unkeyed run (bulk.c): the free stack whose objects at its lim and above
	 * carry no free key, NULL when none; zone_lim is that stack's real lim. */
	struct stack *zone;
	void **zone_lim;
	void **zone_rlim; /* below a line: the class's remote stack's real lim, else NULL */
};

/* The thread-local state is two words of initial-exec TLS, so that a copy loaded by dlopen
 * fits in glibc's spare static TLS. sm_tcp is the calling thread's cache: until the thread is
 * set up, sm_tc_new, and after its exit, sm_tc_dead. Both are read-only, with no room in any
 * stack, so every call on them takes the slow path (thread.c).
 * (outside the hidden block: clang, building an executable, then drops the reference's TLS
 * type when the address is only compared, and the link fails) */
#pragma GCC visibility pop
extern __thread struct tcache *sm_tcp TLS_IE;
extern __thread uint8_t sm_in_unwind TLS_IE; /* inside the unwinder (backtrace.c) */
extern __thread struct cache *sm_typed_in TLS_IE; /* the typed cache of the call in progress */
#pragma GCC visibility push(hidden)
extern const struct tcache sm_tc_new, sm_tc_dead;

/* From a thread's free stack of a class to its remote stack of that class, in bytes. */
#define REMOTE_OFF \
	((int64_t)(offsetof(struct tcache, remote_stack) - offsetof(struct tcache, free_stack)))

/* Objects below this size share cache lines: free() keeps another thread's apart (below). */
#define SUBLINE 64

/* free()'s stack for an object of s in thread tc, so that tc never reuses an object next to
 * ones another thread writes. A slab of objects smaller than a line (SUBLINE) points free()
 * at remote_stack[s->cls]; the thread that froze it last (subline_owner == tc->id) takes
 * REMOTE_OFF off, to its free_stack[s->cls]. A slab of larger objects points at free_stack and
 * has subline_owner 0, which is no thread's id (thread.c; sm_tc_new's and sm_tc_dead's stacks
 * have no room). Without a branch: a program frees objects of both kinds in any order, and a
 * branch here mispredicts. With SLUBMALLOC_STATS=1 the slabs point at free_stack[NCLASS] or
 * remote_stack[NCLASS]: both have no room, and every free takes its counted slow path
 * (slab.c). */
static inline struct stack *free_stack_in(const struct tcache *tc, const struct slab *s)
{
	uint16_t owner = __atomic_load_n(&s->subline_owner, __ATOMIC_RELAXED);
	uintptr_t at = (uintptr_t)tc + (uintptr_t)s->free_stack_off;
	return (struct stack *)select_eq16(owner, &tc->id, at - REMOTE_OFF, at);
}

/* Whether free_stack_in gives tc its remote stack for s. */
static inline bool slab_other(const struct tcache *tc, const struct slab *s)
{
	return (char *)free_stack_in(tc, s) >= (const char *)tc->remote_stack;
}

static inline struct stack *free_stack_of(const struct slab *s)
{
	return free_stack_in(sm_tcp, s);
}

/* Set once a second thread gets a cache (thread.c): the profiler then patches no entry. */
extern int sm_second_thread;
extern int sm_sampling; /* sample.c: KFENCE is on; an armed thread holds every free stack */
void sm_free_stack_floor(struct tcache *tc, unsigned cls); /* after its slots or lim change */

/* Whether held free stack f should become the allocation stack now: always, unless the
 * thread is armed for sampling (sample.c); then once it holds SAMPLE_BATCH objects or a
 * quarter of its room. */
static inline bool swap_pays(const struct tcache *tc, const struct stack *f)
{
	uint32_t n = stack_count(f);
	return !tc->smp_armed || n >= SAMPLE_BATCH || n * 4 >= stack_cap(f);
}

/* The free stack of the same class as the allocation stack b. */
static inline struct stack *free_stack_beside(struct stack *b)
{
	return b + (offsetof(struct tcache, free_stack) - offsetof(struct tcache, alloc_stack)) /
			   sizeof(struct stack);
}
/* The profiler's countdown of allocation stack b's class. */
static inline struct pf_count *pf_count_beside(struct stack *b)
{
	_Static_assert(sizeof(struct pf_count) == sizeof(struct stack), "stack-sized");
	return (struct pf_count *)(void *)(b + (offsetof(struct tcache, pf_direct) -
						offsetof(struct tcache, alloc_stack)) /
						       sizeof(struct stack));
}

#include "options.h"

/* Global engine state: written once at init (secret, tables), then read-only. */
struct sm_global {
	uint64_t secret;          /* freelist hardening key */
	int ready;                /* init finished (acquire/release) */
	struct cache caches[NCLASS];
};

extern struct sm_global sm_g;
extern size_t sm_page_size;                    /* the OS page, read at init (engine.c) */
/* The bytes of a thread's burst arrays of cls (tcache.burst: stack's and free_stack's, cap_burst
 * slots after a NULL guard each). */
static inline size_t burst_bytes(unsigned cls)
{
	return 2 * (sm_g.caches[cls].cap_burst + 1) * sizeof(void *);
}
/* The shortest array the bulk calls' AVX2 paths take (bulk.c): 4 once init has found AVX2 (and
 * SLUBMALLOC_AVX2 is not 0); SIZE_MAX before init and without it. */
extern size_t sm_vec_min;
extern uint8_t sm_region_map[NREGION_SLOTS];   /* 1 byte per 4 MiB of address space: ours? */
/* (size-1)>>4 -> offsetof(tcache, alloc_stack[class]) */
extern uint16_t sm_stack_at[CLASS_INDEX_MAX];
_Static_assert(offsetof(struct tcache, alloc_stack) + (NCLASS + 1) * sizeof(struct stack) <=
		       UINT16_MAX,
	       "sm_stack_at[] holds 16-bit offsets");

/* The calling thread's malloc stack for size bytes, 1 <= size <= MAX_SMALL (size - 1 <
 * MAX_SMALL: one compare rules out 0 and the large sizes). */
static inline struct stack *alloc_stack_for(size_t size)
{
	return (struct stack *)(void *)((char *)sm_tcp + sm_stack_at[(size - 1) >> 4]);
}

/* ---- free pointer encoding (CONFIG_SLAB_FREELIST_HARDENED): ptr ^ secret ^ swab(&slot) ---- */
/* The free pointer of obj lives at obj + off: 0, or past the body for caches with a ctor. */
static inline void fp_set(void *obj, void *next, uint32_t off)
{
	uintptr_t slot = (uintptr_t)obj + off;
	*(uintptr_t *)slot = (uintptr_t)next ^ sm_g.secret ^ __builtin_bswap64(slot);
}
static inline void *fp_get(void *obj, uint32_t off)
{
	uintptr_t slot = (uintptr_t)obj + off;
	return (void *)(*(uintptr_t *)slot ^ sm_g.secret ^ __builtin_bswap64(slot));
}

/* ---- the free key: double frees caught in the default mode (harden.c) ----
 * free() stores FREE_KEY in word 1 of each object it pushes on a thread stack (and a refill
 * in each object it carves). free_bulk's runs get it late, in sm_zone_settle (bulk.c). Every
 * path that hands an object out clears it (malloc, the slow paths, malloc_bulk). A free that
 * finds the key already there takes the slow path, which looks for the object on the
 * thread's stacks and its slab's freelist and reports a double free when it is there; else
 * (the program wrote the key itself) the free goes on. Word 0 stays the freelist link.
 * Word 1, not 0: a program's small store to its block's first bytes just before free would
 * stall free's 8-byte load of the key (no store forwarding): +29% on st_churn loop. */
/* A constant: a 32-bit immediate, sign-extended, in the compare and the store. Top bit set: no
 * pointer, no small number. A secret key would buy nothing: a program that forges it only sends
 * its free to the search, and one that overwrites it defeats any key. */
#define FREE_KEY ((uint64_t)(int64_t)(int32_t)0x9e3779b9u)
static inline bool free_key_is_set(const void *p)
{
	return ((const uint64_t *)p)[1] == FREE_KEY;
}
static inline void free_key_set(void *p)
{
	((uint64_t *)p)[1] = FREE_KEY;
}
static inline void *free_key_clear(void *p)
{
	((uint64_t *)p)[1] = 0;
	return p;
}

/* The thread's unkeyed zone (bulk.c) gets its keys before a slow path reads a stack's lim or
 * moves its objects: every slow path that does calls this first. */
void sm_zone_settle(struct tcache *tc);
static inline void zone_settle(struct tcache *tc)
{
	if (unlikely(tc->zone))
		sm_zone_settle(tc);
}

/* Whether a sized free of size bytes fits a block of have bytes from below: malloc puts a size
 * in the smallest class that holds it, classes are at most twice apart, and realloc keeps a
 * block it shrinks to more than half. So a size of at most half the block, less MIN_ALIGN, is
 * a wrong one. */
static inline bool lower_ok(size_t size, size_t have)
{
	return 2 * size + MIN_ALIGN >= have;
}

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
/* Whether a is the start of an object, and its index. With size = d << k (d odd) and inverse = d^-1
 * mod 2^64, q = (a - start) * inverse is i << k exactly when a = start + i * size; otherwise q has
 * one of its low k bits set, or is far above objects << k (Granlund and Montgomery's divisibility
 * test, without rotating q). bad_q_bits has those low k bits set and every bit from B up, where 2^B
 * is the least power of two above (objects - 1) << k: one test. An address before start in the
 * slab's first page fails it too: a = start - x with 0 < x < size, and -x * inverse has a bit of
 * bad_q_bits set. One past the last object is in another page. So the one test is exact for a in
 * s's own pages; for any address, slab_index and bulk's runs add the bound (q >> k below objects).
 */
static inline uint64_t object_q(const struct slab *s, uintptr_t a)
{
	return (a - (uintptr_t)s->start) * s->inverse;
}
/* d must be page_desc(a): the descriptor of a's own page. */
static inline bool is_object(const struct slab *d, uintptr_t a)
{
	return !(object_q(d, a) & d->bad_q_bits);
}
/* The object index of a (any address), or UINT32_MAX when a is not the start of an object of
 * s. */
static inline uint32_t slab_index(const struct slab *s, uintptr_t a)
{
	uint64_t q = object_q(s, a);
	if (unlikely(q & s->bad_q_bits) || unlikely((q >> s->shift) >= s->objects))
		return UINT32_MAX;
	return (uint32_t)(q >> s->shift);
}
/* Whether the n pointers at ptrs (n = 2 or 3: the short bulk frees) may go on a stack as one
 * push: each unlike the one before it (the first unlike top, the stack's top) and, after the
 * first (which the caller checked as free() does, finding d, its page's descriptor), an object
 * in the first one's page, where is_object()'s one test is exact. */
static inline bool short_run_ok(const struct slab *d, void *const *ptrs, size_t n, void *top)
{
	uintptr_t first = (uintptr_t)ptrs[0], lo = (uintptr_t)d->start;
	uint64_t inverse = d->inverse, bad_q_bits = d->bad_q_bits;
	if (ptrs[0] == top)
		return false;
	for (size_t i = 1; i < n; i++) {
		uintptr_t a = (uintptr_t)ptrs[i];
		if (((a ^ first) >> SPAGE_SHIFT) | (((a - lo) * inverse) & bad_q_bits) || ptrs[i] == ptrs[i - 1])
			return false;
	}
	return true;
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

/* ---- freelist links (freelist.c) ----
 * A free pointer read from an object of slab s must be NULL or an object of s. Anything else
 * is a corrupted link (a write after free), reported before it is followed. */
SM_COLD SM_NORETURN void sm_bad_link(const struct slab *s, uintptr_t obj);
/* Whether next is neither NULL nor an object of the slab whose start, span (objects * size),
 * inverse and bad_q_bits these are (inside the span, is_object's one test is exact). */
static inline bool link_bad(uintptr_t next, uintptr_t start, uint64_t span, uint64_t inverse,
			    uint64_t bad_q_bits)
{
	return next && (next - start >= span || ((next - start) * inverse) & bad_q_bits);
}
/* Group records (freelist.c): a push cuts its chain into groups of a head and up to rec_room
 * objects that follow it. The head's word 2 is where the chain goes on after them, with their
 * count in its low 4 bits (0: no record); words 3.. are their addresses. Encoded as links are,
 * each at its own word. Size classes of 32 bytes and more. */
#define REC_MAX 8u
static inline uint32_t rec_room(const struct cache *c)
{
	uint32_t words = c->size / 8;
	if (c->cls >= NCLASS || c->debug || c->fpoff || words < 4)
		return 0;
	return words - 3 < REC_MAX ? words - 3 : REC_MAX;
}
static inline void rec_put(uintptr_t obj, unsigned word, uintptr_t v)
{
	fp_set((void *)obj, (void *)v, word * (uint32_t)sizeof(uintptr_t));
}
static inline uintptr_t rec_get(uintptr_t obj, unsigned word)
{
	return (uintptr_t)fp_get((void *)obj, word * (uint32_t)sizeof(uintptr_t));
}
static inline void *checked_next(struct slab *s, void *obj, uint32_t fpoff)
{
	uintptr_t next = (uintptr_t)fp_get(obj, fpoff);
	if (unlikely(link_bad(next, (uintptr_t)s->start, (uint64_t)s->objects * s->size, s->inverse,
			      s->bad_q_bits)))
		sm_bad_link(s, (uintptr_t)obj);
	return (void *)next;
}

/* ---- locks (inline; slow paths only) ---- */
void sm_lock_slow(sm_lock_t *l);
static inline void sm_lock(sm_lock_t *l)
{
	if (likely(!__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE)))
		return;
	sm_lock_slow(l);
}
static inline void sm_unlock(sm_lock_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/* "sizeclass.c" */
void sm_sizeclass_init(bool counted);          /* counted: SLUBMALLOC_STATS=1 */
unsigned sm_size_to_class(size_t size);       /* computed, no table: any time */
unsigned sm_class_size(unsigned cls);
unsigned sm_class_for_align(size_t size, size_t align); /* NCLASS when none fits */

/* "region.c": 64 KiB page runs inside 4 MiB regions */
void sm_region_first(void);                    /* init: map the first region */
struct slab *sm_pages_alloc(unsigned pages);   /* a descriptor with start/pages set, or NULL */
void sm_pages_free(struct slab *s);            /* free; purged later, in batches */
void sm_slabs_census(const struct cache *c, uint64_t *inuse, uint64_t *frozen); /* all slabs */
size_t sm_pages_purge_all(void);               /* malloc_trim: every dirty page; bytes */
uint64_t sm_pages_purge_due(void);             /* background: the due ones; next due or 0 */
void sm_region_figures(uint64_t *mapped, uint64_t *dirty);
uint64_t sm_region_resident(void);             /* in memory (mincore) */
void sm_region_walk_locked(void (*fn)(struct slab *head, void *arg), void *arg); /* page lock */
void sm_region_lock(void);
void sm_region_unlock(void);
void sm_region_lock_all(void);
void sm_region_unlock_all(bool reinit);

/* "slab.c" */
void sm_cache_setup(struct cache *c, const char *name, uint32_t size, uint16_t cls);
struct slab *sm_slab_new(struct cache *c);     /* frozen, nothing carved */
uint32_t sm_slab_carve(struct slab *s, void **out, uint32_t n); /* owner; addresses only */

/* "freelist.c": the slabs' shared words and the partial lists (the concurrency rules live at
 * its top) */
void sm_free_to_slab(struct slab *s, void *obj);  /* one object, any thread, no thread cache */
void sm_push_chain(struct slab *s, void *head, void *tail, uint32_t n);
void *sm_slab_take_all(struct slab *s, uint32_t *n); /* owner of frozen s; NULL if none */
bool sm_slab_unfreeze_full(struct slab *s);        /* false: a free got in first */
struct slab *sm_slab_freeze_partial(struct cache *c, void **head, uint32_t *n);
struct slab *sm_slab_freeze_fullest(struct cache *c, void **head, uint32_t *n); /* a mover's */
void sm_slab_unfreeze(struct slab *s);             /* the owner's active slab, at exit */
void sm_cache_shrink(struct cache *c);            /* free its empty slabs now */
void sm_caches_lock_all(void);
void sm_caches_unlock_all(bool reinit);

/* "tcache.c": the thread caches' slow paths */
uint32_t sm_fill(struct cache *c, uint16_t owner, struct source *source, void **out, uint32_t want);
void *sm_refill(struct tcache *tc, unsigned cls);
size_t sm_take_n(struct cache *c, uint16_t owner, struct stack *b, struct stack *f,
		 struct source *source,
		 void **out, size_t n);
void sm_flush(struct tcache *tc, unsigned cls);  /* free_stack[cls] is full: swap, grow, or older
						  * half back */
void sm_flush_remote(struct tcache *tc, unsigned cls); /* remote_stack[cls] is full: all back */
void sm_stacks_resize(struct tcache *tc, unsigned cls, uint32_t cap); /* both stacks' room */
uint64_t sm_burst_held(const struct tcache *tc); /* bytes of objects its burst stacks hold at
						 * most (<= TCACHE_BURST_BUDGET) */
void sm_free_chain(void *head, uint32_t fpoff);   /* objects of any slabs, grouped by slab */
void sm_free_array(void **v, size_t n);           /* the same for an array (NULLs skipped) */
void sm_drop(struct stack *b, struct source *source, uint32_t fpoff); /* all back */

/* "thread.c": thread life cycle and the orphan cache */
void sm_thread_init(void);                /* once, at init: the thread-exit key */
struct tcache *sm_thread_start(void);    /* the calling thread's own cache, set up, and its
					  * teardown at exit: the new sm_tcp (still sm_tc_new
					  * without memory) */
void sm_thread_setup(struct tcache *tc);  /* T_LIVE, or still T_NEW without memory */
void sm_thread_teardown(struct tcache *tc);
struct tcache *sm_orphan_enter(void);     /* the orphan cache, locked (again, by its holder) */
void sm_orphan_leave(void);
void *sm_orphan_alloc(unsigned cls);      /* NULL: no memory */
/* Every thread cache (the registry, then the orphan), under their locks. */
void sm_tcache_walk(void (*fn)(struct tcache *tc, void *arg), void *arg);
uint64_t sm_thread_resident(void); /* the threads' blocks in memory (mincore) */
void sm_orphan_lock_all(void);
void sm_orphan_unlock_all(bool child);
void sm_block_lock_all(void);
void sm_block_unlock_all(void);

/* "depot.c": full stacks' objects passed between threads (classes of 64 bytes and up) */
bool sm_depot_put(unsigned cls, void **v, uint32_t n);          /* false: no room, or a class
								  * below a cache line */
uint32_t sm_depot_take(unsigned cls, void **out, uint32_t want);  /* how many */
uint32_t sm_depot_held(unsigned cls);
void sm_depot_drain(void);                                        /* all back to the slabs */
void sm_depot_lock_all(void);
void sm_depot_unlock_all(void);

/* "bulk.c": the run check of free_bulk, and pointer copies (AVX2 when the CPU has it) */
void **sm_bulk_runs(struct tcache *tc, void **src, void **end, struct cache *typed);
size_t sm_copy_ptrs(void **dst, void *const *src, size_t n); /* returns n */
/* dst[0, n) = src[0, n), two pointers per move, inline (short arrays: no call). */
static inline void copy_ptrs(void **dst, void *const *src, size_t n)
{
	size_t m = n & ~(size_t)1;
	for (size_t i = 0; i < m; i += 2)
		__builtin_memcpy(dst + i, src + i, 2 * sizeof(void *));
	if (n & 1)
		dst[m] = src[m];
}

/* "typed.c": typed object caches */
void sm_typed_gone(struct cache *c);          /* a dead typed cache lost its last slab */
void sm_typed_register(struct tcache *tc);    /* a new live thread cache */
void sm_typed_thread_exit(struct tcache *tc); /* its typed stacks back; unregistered */
void sm_typed_lock_all(void);
void sm_typed_unlock_all(bool reinit);
void sm_typed_registry_walk(void (*fn)(struct tcache *tc, void *arg), void *arg); /* its lock */
bool sm_typed_copy(unsigned id, struct cache *out);  /* typed cache id, if alive */

/* "large.c": allocations above MAX_SMALL, straight from mmap */
void *sm_large_alloc(size_t size, size_t align, bool zero);
int sm_large_free(void *p);                   /* 1 freed; 0 not ours; -1 freed already */
size_t sm_large_usable(const void *p);        /* 0: not one of ours */
void *sm_large_realloc(void *p, size_t size); /* NULL: could not; copy instead */
void sm_large_figures(uint64_t *live_n, uint64_t *live_bytes, uint64_t *cached_bytes,
		      uint64_t *peak_n, uint64_t *peak_bytes);
size_t sm_large_release(bool all, uint64_t *due); /* unmap the cached ranges due (all: malloc_trim);
						   * due may be NULL */
uint64_t sm_large_resident(void);             /* in memory (mincore), the table too */
void sm_large_lock_all(void);
void sm_large_unlock_all(bool reinit);

/* "alloc.c": the slow halves of the public entry points */
/* form (enum form): the call's, for SLUBMALLOC_DEBUG's M; FORM_C for the C calls */
void *sm_alloc_slow(size_t size, unsigned form);
void *sm_alloc_swap(struct stack *b, size_t size, unsigned form); /* malloc's stack b is empty */
void sm_free_slow(void *p, unsigned form);
void *sm_calloc(size_t n, size_t size);
void *sm_realloc(void *p, size_t size);
void *sm_memalign(size_t align, size_t size);
size_t sm_usable_size(const void *p);
void sm_free_sized(void *p, size_t size, bool lower, unsigned form);
int sm_posix_memalign(void **out, size_t align, size_t size);
void *sm_valloc(size_t size);
void *sm_pvalloc(size_t size);
void *sm_reallocarray(void *p, size_t n, size_t size);
SM_COLD void *sm_new_failed(size_t n, size_t align, bool nothrow,
			    unsigned form); /* new-handler, bad_alloc */

/* "options.c" */
void sm_options_read(void);                /* init only: the environment -> sm_opt */
bool sm_options_debugs(const char *name);  /* is this cache in SLUBMALLOC_DEBUG's list? */
void sm_options_print(void);               /* SLUBMALLOC_VERBOSE=1 */

/* "harden.c": the default mode's checks */
bool sm_free_listed(struct tcache *tc, struct slab *d, void *p); /* p (key set) free here? */

/* "debug.c": SLUBMALLOC_DEBUG caches (no thread stacks; every call comes here) */
void sm_debug_setup(struct cache *c, unsigned flags);
void sm_debug_slab_init(struct slab *s);   /* a new slab of a debug cache */
void *sm_debug_alloc(struct cache *c, size_t req, void *caller, unsigned form);
void sm_debug_free(struct slab *s, void *p, void *caller, unsigned form);
size_t sm_debug_usable(struct slab *s, const void *p);
void sm_debug_scan(const char *when);      /* every debug slot's red zones and poison */
void sm_large_debug_scan(const char *when); /* large.c: every debug large block's red zones */
bool sm_large_debug_find(uintptr_t a, uintptr_t *block, size_t *size); /* the one a is in */
/* a write of n bytes at dst by call (memcpy, ...), from ra: within one block, or a report */
void sm_debug_check_write(const void *dst, size_t n, const char *call, const void *ra);
void sm_debug_set_prof(void *p, uint32_t id); /* p (a debug block) is sample id */
extern unsigned sm_large_debug;            /* large.c: debug flags for large blocks, or 0 */
void sm_debug_lock_all(void);              /* fork: the quarantine lock */
void sm_debug_unlock_all(void);

/* "zero.c": the blocks of malloc(0), each an address of its own where every access faults */
void sm_zero_init(void);                   /* reserve their range (at init) */
void *sm_zero_alloc(void);                 /* NULL: none left (or no range) */
bool sm_zero_has(const void *p);           /* p is in their range */
void sm_zero_free(void *p);                /* p in the range: reports a double or bad free */

#include "diag/diag.h"

/* "report.c": the rest is in report.h */
SM_NORETURN void sm_fatal_in(const char *what, const void *p, const struct cache *c);

#include "stats.h"

/* "trim.c": giving memory back on request */
int sm_trim(void);                             /* malloc_trim(0): 1 when memory went back */
int sm_malloc_trim(size_t pad);
void sm_trim_self(struct tcache *tc);          /* drain tc's caches (its thread, slow path) */
void sm_poke(struct tcache *tc);               /* another thread's: tc drains at its next malloc */

/* "background.c": SLUBMALLOC_BACKGROUND's thread, which purges on time */
void sm_bg_start(void);  /* no engine lock held (pthread_create mallocs): at load, or sm_bg_poll */
void sm_bg_kick(void);   /* memory became pending (page_lock or large_lock held), or a flush */
void sm_bg_forked(void); /* fork's child handler */
bool sm_bg_running(void); /* started, not failed */
void sm_bg_thread_left(void); /* a thread's exit: the thread ends the process once it is alone */
extern int sm_bg_want;   /* a forked child wants its thread */
/* The slow paths of malloc and free, with no lock held: start a forked child's thread. */
static inline void sm_bg_poll(void)
{
	if (unlikely(__atomic_load_n(&sm_bg_want, __ATOMIC_RELAXED)))
		sm_bg_start();
}

/* "jemalloc.c", "mallctl.c": jemalloc 5's calls, for programs built against it */
void *sm_mallocx(size_t size, int flags);
void *sm_rallocx(void *p, size_t size, int flags);
size_t sm_xallocx(void *p, size_t size, size_t extra, int flags);
size_t sm_nallocx(size_t size, int flags);
void sm_sdallocx(void *p, size_t size, int flags);
bool sm_ctl_arena_exists(unsigned a); /* 0, or a number arenas.create gave, not destroyed */
int sm_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int sm_mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int sm_mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
		    size_t newlen);
void sm_malloc_stats_print(void (*cb)(void *, const char *), void *opaque, const char *opts);
void sm_ctl_after_fork(void); /* a child: mallctl's locks free */
/* a size class's figures at the last census (taken again when older than DEFRAG_SNAP_NS) */
void sm_ctl_bin(unsigned cls, uint64_t *curregs, uint64_t *curslabs, uint64_t *nonfull);

/* "defrag.c": for programs that move their objects */
struct sm_util {              /* a block's slab, in jemalloc's utilization terms */
	size_t nfree, nregs, size; /* free objects, objects, bytes (a large block: 0, 1, its size) */
	struct slab *slab;         /* NULL: not a size class's block */
	bool frozen;               /* some thread's active slab */
	unsigned cls;
};
void sm_util_of(const void *p, struct sm_util *u); /* all zero: not ours */
void *sm_alloc_fullest(size_t size); /* from the fullest partial slab; NULL: none */

/* "fork.c": the allocator across fork (the rule: the lock order, top of freelist.c) */
void sm_fork_register(void);              /* once, at init: the pthread_atfork handlers */

/* "engine.c" */
void sm_init(void);                       /* idempotent; safe to call from any slow path */

#pragma GCC visibility pop

#endif
