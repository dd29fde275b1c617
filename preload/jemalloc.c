/* jemalloc.c: jemalloc 5's non-standard names, each a one-line call into the engine
 * (src/jemalloc/jemalloc.c, src/jemalloc/mallctl.c). A program linked with libjemalloc binds
 * them here when libslubmalloc.so is preloaded, so its memory is all slubmalloc's. */
#include <stddef.h>

#include "alloc.h"
#include "fastpath.h"
#include "jemalloc/compat.h"
#include "platform.h"

SM_EXPORT void *mallocx(size_t size, int flags)
{
	return sm_mallocx(size, flags);
}

SM_EXPORT void *rallocx(void *p, size_t size, int flags)
{
	return sm_rallocx(p, size, flags);
}

SM_EXPORT size_t xallocx(void *p, size_t size, size_t extra, int flags)
{
	return sm_xallocx(p, size, extra, flags);
}

SM_EXPORT size_t sallocx(const void *p, int flags)
{
	(void)flags;
	return sm_usable_size(p);
}

SM_EXPORT void dallocx(void *p, int flags)
{
	(void)flags;
	sm_free_fast(p);
}

SM_EXPORT void sdallocx(void *p, size_t size, int flags)
{
	sm_sdallocx(p, size, flags);
}

SM_EXPORT size_t nallocx(size_t size, int flags)
{
	return sm_nallocx(size, flags);
}

SM_EXPORT int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	return sm_mallctl(name, oldp, oldlenp, newp, newlen);
}

SM_EXPORT int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp)
{
	return sm_mallctlnametomib(name, mibp, miblenp);
}

SM_EXPORT int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
			   void *newp, size_t newlen)
{
	return sm_mallctlbymib(mib, miblen, oldp, oldlenp, newp, newlen);
}

SM_EXPORT void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
				  const char *opts)
{
	sm_malloc_stats_print(write_cb, cbopaque, opts);
}
