/* override.c: the libc names (the glibc manual's "Replacing malloc" set and its extras), each a
 * one-line call into the engine. These and include/slubmalloc.h are all the library exports. */
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>

#include "slubmalloc.h"

#include "alloc.h"
#include "bulk.h"
#include "diag/diag.h"
#include "fastpath.h"
#include "options.h"
#include "platform.h"
#include "stats.h"
#include "trim.h"
#include "types.h"

SM_EXPORT SM_FASTPATH_TEXT(4096) void *malloc(size_t size)
{
	return sm_alloc_fast(size);
}

/* With SLUBMALLOC_PROF=1, malloc's first instruction becomes a jump here (sm_prof_entries). */
static void *malloc_prof(size_t size)
{
	return sm_alloc_prof_form(size, FORM_C);
}

SM_SELF(malloc_self, malloc);

/* With SLUBMALLOC_PROF=1: malloc's entry, malloc_bulk's and operator new's (cxx.c), patched
 * all together. */
__attribute__((constructor)) static void prof_entries(void)
{
	void *entry[6][2] = {{(void *)malloc_self, (void *)malloc_prof},
			     {sm_bulk_prof_entry[0], sm_bulk_prof_entry[1]}};
	unsigned n = 2;
	for (unsigned i = 0; sm_cxx_prof_entry && i < 4; i++, n++)
		entry[n][0] = sm_cxx_prof_entry[i][0], entry[n][1] = sm_cxx_prof_entry[i][1];
	sm_prof_entries((void *const(*)[2])entry, n);
}

SM_EXPORT SM_FASTPATH_TEXT(64) void free(void *p)
{
	sm_free_fast(p);
}

SM_EXPORT void cfree(void *p)
{
	sm_free_fast(p);
}

SM_EXPORT void free_sized(void *p, size_t size)
{
	sm_free_sized_fast(p, size, FORM_C);
}

SM_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
	(void)align;
	sm_free_aligned_sized_fast(p, size);
}

SM_EXPORT void *calloc(size_t n, size_t size)
{
	return sm_calloc(n, size);
}

SM_EXPORT void *realloc(void *p, size_t size)
{
	return sm_realloc(p, size);
}

SM_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	return sm_reallocarray(p, n, size);
}

SM_EXPORT void *memalign(size_t align, size_t size)
{
	return sm_memalign(align, size);
}

SM_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return sm_memalign(align, size);
}

SM_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	return sm_posix_memalign(out, align, size);
}

SM_EXPORT void *valloc(size_t size)
{
	return sm_valloc(size);
}

SM_EXPORT void *pvalloc(size_t size)
{
	return sm_pvalloc(size);
}

SM_EXPORT size_t malloc_usable_size(void *p)
{
	return sm_usable_size(p);
}

/* ---- glibc's malloc.h extras, answered from slubmalloc's own figures (stats.c) ---- */

SM_EXPORT int mallopt(int param, int value)
{
	return sm_mallopt(param, value);
}

SM_EXPORT int malloc_trim(size_t pad)
{
	return sm_malloc_trim(pad);
}

SM_EXPORT struct mallinfo2 mallinfo2(void)
{
	return sm_mallinfo2();
}

SM_EXPORT struct mallinfo mallinfo(void)
{
	return sm_mallinfo();
}

SM_EXPORT void malloc_stats(void)
{
	sm_malloc_stats();
}

SM_EXPORT int malloc_info(int options, FILE *fp)
{
	return sm_malloc_info(options, fp);
}
