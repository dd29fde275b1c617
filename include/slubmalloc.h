/* slubmalloc.h: the public API of libslubmalloc beyond the standard malloc family, which the
 * library also provides (link with -lslubmalloc, or LD_PRELOAD=libslubmalloc.so).
 * Every function here is thread-safe. */
#ifndef SLUBMALLOC_H
#define SLUBMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Print the allocator's statistics (slabs per cache, large allocations) to fd. */
void slub_stats_print(int fd);

#ifdef __cplusplus
}
#endif

#endif
