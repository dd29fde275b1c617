/* compat.h: jemalloc 5's calls, for programs built against it: the one header of src/jemalloc/
 * that the rest of the library includes (preload/jemalloc.c; fork.c, for mallctl's child
 * handler). The folder's other headers are its own. */
#ifndef SM_JEMALLOC_COMPAT_H
#define SM_JEMALLOC_COMPAT_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

/* "jemalloc.c": the mallocx family */
void *sm_mallocx(size_t size, int flags);
void *sm_rallocx(void *p, size_t size, int flags);
size_t sm_xallocx(void *p, size_t size, size_t extra, int flags);
size_t sm_nallocx(size_t size, int flags);
void sm_sdallocx(void *p, size_t size, int flags);

/* "mallctl.c": the control names and malloc_stats_print */
int sm_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int sm_mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int sm_mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
		    size_t newlen);
void sm_malloc_stats_print(void (*cb)(void *, const char *), void *opaque, const char *opts);
void sm_ctl_after_fork(void); /* a child: mallctl's locks free */

#pragma GCC visibility pop

#endif
