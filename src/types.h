/* types.h: the engine's types: slabs, regions, caches, the thread stacks and thread caches,
 * the global state; and the attributes of the engine's own symbols. Types only: each part's
 * functions and inline helpers are in its own header (region.h, slab.h, tcache.h, ...).
 * Internal names begin with sm_; public ones with slub_ or libc's.
 * The concurrency rules for these types are written once, at the top of freelist.c. */
#ifndef SM_TYPES_H
#define SM_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "platform.h"

/* Everything the engine's headers declare is the library's own: hidden (each header says so),
 * so a global is one RIP-relative load (no GOT) and a call a direct one. The public entry
 * points say SM_EXPORT. */
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
	uint8_t zero;             /* head: its pages read as zero when it was made, and it never
				   * started over, so objects [carved, objects) are zero; set by
				   * sm_pages_alloc (page lock), cleared by its owner */
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
	uint64_t capped_mask;             /* free pages the dirty cap purged (page lock) */
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
			       * malloc_trim): the second full one grows the stacks (a producer) */
	struct slab *active;  /* frozen for this thread */
	uint32_t kf_left;     /* SLUBMALLOC_KFENCE: allocations of the class until the sampled one,
			       * counted up to smp_mark, the allocation stack's top then (sample.c) */
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
	uint32_t first_want;   /* a thread's first refill: half of cap, at most FIRST_REFILL_BYTES
				* of objects, at least one (sm_refill) */
	uint32_t fpoff;        /* where a free object keeps its free pointer (past a ctor's body) */
	uint32_t koff;         /* where it keeps its free key (harden.h): word 1, or the word after
				* a ctor cache's free pointer */
	uint64_t inverse;      /* slab_index's multiplier (struct slab) */
	uint8_t shift;
	uint16_t cls;
	uint16_t id;           /* typed caches: index in the typed table and in struct tcache */
	struct slab *partial;  /* slabs with free objects, not frozen */
	uint32_t nr_partial;   /* slabs on the partial list */
	uint32_t nr_empty;     /* of them, slabs with no object in use (stored atomically, read
				* without the lock by sm_cache_shrink) */
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

/* A thread's object cache of one class ("kmem_cache_cpu", shaped as the kernel's sheaves) is two
 * stacks of object pointers, each a struct stack.
 * free pushes *top++ of the free stack (tcache.free_stack).
 * malloc pops *--top of the free stack first, unless it is held: the object freed last comes
 * back first, while its lines are likely still cached.
 * Else malloc pops the allocation stack (tcache.alloc_stack). It holds what a refill brought
 * and what a swap moved over.
 * malloc that finds the allocation stack empty while the free stack is held swaps the two
 * first (stack_swap).
 * free that finds its stack full swaps them when malloc's is empty, else sends the older half
 * back. A remote stack (tcache.remote_stack) goes back whole.
 * Pointers, not a count: the fastpaths compare and store without scaling an index. */
struct stack {
	void **top;      /* objects are slots[0, top - slots) */
	void **lim;      /* slots + capacity: free's fastpath pushes while top < lim; equal to
			  * slots (no room) until the thread is set up, and again after it exits */
	void **slots;    /* slots[-1] is a NULL guard (the double-free check reads it) */
	void **floor;    /* malloc's fastpath pops while top > floor. A free stack's is slots, or
			  * lim while the stack is held (stack_held: the thread is armed for
			  * sampling, sample.c). An allocation stack's is slots, or raised
			  * to stop at a sample (kfence.c). Poked: FLOOR_POKED set as well */
};

enum tstate { T_NEW = 0, T_LIVE = 1, T_DEAD = 2 };

/* A class's countdown to its next sample, in the profiler's patched mode: bytes until the
 * sample, less one (sample.c). The size of a stack (pf_count_beside). */
struct pf_count {
	int64_t left;
	uint8_t drawn;   /* left was drawn */
	uint8_t pad[sizeof(struct stack) - sizeof(int64_t) - 1];
};

struct tcache {
	/* this thread's id, 1..65535, for slab->subline_owner (two threads may share one: a cost,
	 * false sharing, never an error). First: free's fastpath reads it on every call, so it
	 * shares a page with the stacks of the small classes, not one 16 KiB further on. */
	uint16_t id;
	/* malloc's fastpath pops free_stack first, then alloc_stack. 32-byte aligned: no stack
	 * straddles two cache lines. */
	struct stack alloc_stack[NCLASS + 1] __attribute__((aligned(32)));
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
};

/* Global engine state: written once at init (secret, tables), then read-only. */
struct sm_global {
	uint64_t secret;          /* freelist hardening key */
	int ready;                /* init finished (acquire/release) */
	struct cache caches[NCLASS];
};

#pragma GCC visibility pop

#endif
