/* slubmalloc.h: the public API of libslubmalloc beyond the standard malloc family, which the
 * library also provides (link with -lslubmalloc, or LD_PRELOAD=libslubmalloc.so).
 * Every function here is thread-safe. */
#ifndef SLUBMALLOC_H
#define SLUBMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bulk allocation, after the kernel's kmem_cache_alloc_bulk: fill ptrs[0..n) with n objects of
 * `size` bytes each (any size, small or large), taking them many at a time. All or nothing:
 * returns n, or 0 with errno ENOMEM and nothing allocated (EINVAL when ptrs is NULL).
 * The objects are ordinary malloc blocks: free(), realloc() and free_bulk() all take them. */
size_t malloc_bulk(size_t size, size_t n, void **ptrs);

/* Bulk free, after kmem_cache_free_bulk: free ptrs[0..n), pointers from malloc, malloc_bulk
 * or any other allocation function of this library, of any sizes, from any thread. NULL
 * entries are skipped. Invalid pointers are reported and abort, as with free(). */
void free_bulk(size_t n, void **ptrs);

/* Typed object caches, after the kernel's kmem_cache_*. A cache hands out objects of one size
 * and alignment from slabs of its own. Up to 32 typed caches exist at once. */
struct slub_cache;

#define SLUB_HWCACHE_ALIGN 0x1u /* align objects to a cache line (half or less for small) */
#define SLUB_ZERO 0x2u          /* every object is zeroed when allocated (not with a ctor) */

/* Create a cache of objects of `size` bytes (at most 32 KiB) aligned to `align` (0 or a
 * power of two up to 32 KiB; at least 8). ctor, if given, runs once on each object when it is
 * first carved from a new slab, as in the kernel: a freed object keeps its constructed state.
 * Returns NULL with errno EINVAL (bad arguments) or ENOMEM. */
struct slub_cache *slub_cache_create(const char *name, size_t size, size_t align,
				     unsigned flags, void (*ctor)(void *));
/* One object, or NULL with errno ENOMEM. */
void *slub_cache_alloc(struct slub_cache *cache);
/* Free an object of this cache (free() takes it too). Another cache's object is reported. */
void slub_cache_free(struct slub_cache *cache, void *obj);
/* n objects into ptrs, all or nothing: n, or 0 with errno ENOMEM. */
size_t slub_cache_alloc_bulk(struct slub_cache *cache, size_t n, void **ptrs);
/* Free n objects of this cache (NULL entries skipped). */
void slub_cache_free_bulk(struct slub_cache *cache, size_t n, void **ptrs);
/* Destroy the cache. Objects still allocated are reported on stderr; the cache's memory then
 * stays until they are freed (freeing them stays valid). */
void slub_cache_destroy(struct slub_cache *cache);

/* Print the allocator's statistics (slabs per cache, large allocations) to fd. */
void slub_stats_print(int fd);

#ifdef __cplusplus
}
#endif

#endif
