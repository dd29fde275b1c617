/* config.h: every constant of the engine, each with a one-line reason.
 * Invariants: REGION_SIZE is a power of two and every region is aligned to it; a slab page is
 * REGION_SIZE / REGION_PAGES bytes and page 0 of each region holds that region's header. */
#ifndef SM_CONFIG_H
#define SM_CONFIG_H

#define REGION_SHIFT 22                         /* 4 MiB regions, aligned to their size */
#define REGION_SIZE (1UL << REGION_SHIFT)
#define SPAGE_SHIFT 16                          /* 64 KiB slab pages: a slab is 1..8 of them */
#define SPAGE_SIZE (1UL << SPAGE_SHIFT)
#define REGION_PAGES (REGION_SIZE / SPAGE_SIZE) /* 64: one bit each in region->free_mask */
#define SLAB_MAX_PAGES 8                        /* a slab spans at most 512 KiB */
#define REGION_OPEN_FIRST (REGION_PAGES / 2)   /* pages open at a region's start; the rest open
						 * whole later: two mprotects a region, each of
						 * which stalls other threads' faults (region.c) */
#if defined(__aarch64__)
#define ADDR_BITS 48                            /* user address space on aarch64 (48-bit VA) */
#else
#define ADDR_BITS 47                            /* user address space on x86-64 (4-level) */
#endif
#define NREGION_SLOTS (1UL << (ADDR_BITS - REGION_SHIFT)) /* entries of the ownership map */

#define MIN_ALIGN 16                            /* every object is 16-byte aligned */
#define MAX_SMALL 131072                        /* largest size class; above: large.c */
#define NCLASS_TINY 8                           /* 16..128 in steps of 16 */
#define CLASSES_PER_DOUBLING 8                  /* above 128: rounding waste <= 1/9 */
#define NCLASS (NCLASS_TINY + 10 * CLASSES_PER_DOUBLING) /* 88 size classes up to 128 KiB */
#define TYPED_MAX 32768                         /* typed caches: largest object and alignment */
#define CLASS_INDEX_MAX (MAX_SMALL / MIN_ALIGN) /* sm_stack_at[] covers (size-1)/16 */
#define MAX_TYPED 32                            /* typed caches alive at once */

#define TCACHE_BYTES 16384                      /* bytes a thread caches per class */
#define TCACHE_MIN 4                            /* ... but at least this many objects */
#define TCACHE_MIN_HUGE 2                       /* ... or this many, above 32 KiB */
#define TCACHE_MAX 256                          /* ... and at most this many */
#define FIRST_REFILL_BYTES 4096                 /* a class's first refill in a thread: at most
						 * this many bytes of objects, at least one
						 * (each carved object gets its free key, which
						 * makes its page resident) */
/* A class whose free stack overflows (a burst of frees, a consumer) or that refills again after
 * a full refill (a producer) caches TCACHE_GROWN_BYTES from then on: fewer, larger flushes and
 * refills.
 * A malloc/free loop, which only swaps, keeps the smaller stacks and reuses fewer lines. */
#define TCACHE_GROWN_BYTES 32768
#define TCACHE_GROWN_MAX 448                    /* ... and at most this many objects: a page
						 * of slots less 8 lines, so that the grown
						 * stacks of small classes start at different
						 * lines of their pages (thread.c, array_at) */
/* A grown class whose free stack overflows again with only objects of this thread's own slabs
 * on it (bursts of frees of what it just allocated, larger than the grown stacks) caches
 * TCACHE_BURST_BYTES, at most TCACHE_BURST_MAX objects. Its loop then keeps its objects
 * instead of flushing and refilling each round. A consumer's frees of others' objects never
 * grow it. */
#define TCACHE_BURST_BYTES 262144
#define TCACHE_BURST_MAX 8192                   /* (tcmalloc's longest thread free list) */
/* A thread's burst stacks, all classes together, hold at most TCACHE_BURST_BUDGET bytes of
 * objects. A class whose stacks would pass it keeps cap_grown. */
#define TCACHE_BURST_BUDGET (1024 * 1024)
#define POKE_AGAIN 64                           /* a thread the background thread poked is
						 * poked again after this many more refills and
						 * flushes (background.c) */
/* Sampling (sample.c): a first refill brings at most SAMPLE_BATCH objects, doubling with each
 * refill after. A held free stack of this many becomes the allocation stack, so a malloc/free
 * loop cycles through this many objects. */
#define SAMPLE_BATCH 32
#define SAMPLE_GAP_NS 10000000ull              /* KFENCE samples this far apart at least: each
						 * costs two mprotects and two unwinds */
#define PROF_SAMPLE_DEFAULT 524288              /* the profiler samples once per this many bytes
						 * on average (jemalloc's lg_prof_sample 19) */
#define PROF_FRAMES 64                          /* frames a profile sample records */
#define SHORT_BULK 4                            /* bulk frees of fewer pointers skip the runs
                                                 * (their setup costs more than it saves) */
#define DEPOT_MAX 512                           /* objects a class's depot holds, at most
						 * (and 2 stacks' worth): depot.c */
#define FLUSH_PREFETCH 8                        /* objects a flush prefetches ahead */
/* A refill that takes a slab's whole freelist reads the slab in address order instead of
 * walking the list (the sweep, tcache.c) when the list holds SWEEP_MIN objects or more and
 * at least 1/SWEEP_SHARE of those carved: a walk of a list freed in random order misses once
 * a link, and a sweep reads the carved objects at the prefetcher's pace. */
#define SWEEP_MIN 32
#define SWEEP_SHARE 4
#define SWEEP_MAX 4096                          /* carved objects at most: its two bitmaps,
						 * 1 KiB on the stack (a 64 KiB slab of 16 bytes) */
#define FLUSH_GROUPS 64                        /* slabs a flush gathers objects for at once
						 * (direct-mapped: frees in any order) */

#define EMPTY_RESERVE 2                         /* empty slabs a cache keeps (min_partial);
						 * SLUBMALLOC_MIN_PARTIAL overrides */
#define PURGE_DELAY_MS_DEFAULT 1000             /* freed memory stays this long before it is
						 * purged; SLUBMALLOC_PURGE_DELAY_MS */
#define DIRTY_CAP (32UL << 20)                  /* freed slab pages kept resident, at most, */
#define DIRTY_CAP_MAX (512UL << 20)             /* ... until the program takes back, within
						 * the purge delay, pages that cap purged: then
						 * the cap doubles, up to this (region.c) */
#define DIRTY_CAP_CALM 4                        /* purge delays with no such page taken back,
						 * after which the cap's next purge halves it */
#define BG_SLACK_NS 5000000ULL                  /* the background thread sleeps this much past
						 * a deadline: the coarse clock's tick is 4 ms */
#define ALONE_WAIT_MS 200                       /* after a thread's exit, the background thread
						 * counts the threads this long, once a ms */

#define SLABINFO_PAGE 4096UL                    /* /proc/slabinfo's pagesperslab counts 4 KiB
						 * pages, whatever the OS page (stats.c) */
#define FULLEST_SCAN 64                         /* partial slabs a mover's allocation looks at */
#define DEFRAG_SNAP_NS 100000000ULL             /* the defrag hint's figures: at most this old */
#define LARGE_CACHE_SLOTS 256                   /* freed large ranges kept for reuse */
#define LARGE_RETAINED_MAX (1u << 20)           /* purged ranges kept mapped for reuse, at most
						 * (their index: 40 bytes each, retained.c) */
#define LARGE_MAP_CHUNK (256UL << 20)          /* past LARGE_GUARDED_MAX live large blocks,
						 * a new mapping is at least this long */
#define LARGE_GROW_PROBE (1UL << 20)           /* a cached range grows by mremap only when
						 * half the pages of its first this many
						 * bytes are in memory */
#define LARGE_RECENT_MAX (1u << 20)             /* a large block freed last, up to this size,
						 * is not reused before the next large free */
#define LARGE_CACHE_BYTES (128UL << 20)          /* ... holding at most this many bytes */
#define LARGE_CACHE_PEAK_MAX (512UL << 20)      /* ... or the recent peak of live large
						 * bytes, up to this (or the live bytes) */
#define LARGE_PURGE_ZERO (64UL << 20)           /* calloc of a reused range this big: purge;
						 * below it, memset when half its pages are in
						 * memory (zero_reused, large.c) */
#define LARGE_GUARDED_MAX 4096                  /* new large mappings get guard pages while
						 * fewer large blocks than this are live */

#endif
