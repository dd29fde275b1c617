/* override.c: the libc names (the glibc manual's "Replacing malloc" set and its extras), each a
 * one-line call into the engine. These and include/slubmalloc.h are all the library exports. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "slubmalloc.h"

#include "fastpath.h"
#include "internal.h"

SM_EXPORT SM_FASTPATH_TEXT(4096) void *malloc(size_t size)
{
	return sm_alloc_fast(size);
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
	sm_free_sized_fast(p, size);
}

SM_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
	(void)align;
	sm_free_sized_fast(p, size);
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
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return errno = ENOMEM, NULL;
	return sm_realloc(p, total);
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
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = sm_memalign(align, size);
	if (!p)
		return ENOMEM; /* errno is ENOMEM too, as glibc leaves it */
	*out = p;
	return 0;
}

SM_EXPORT void *valloc(size_t size)
{
	return sm_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

SM_EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t rounded = (size + page - 1) & ~(page - 1);
	if (rounded < size)
		return errno = ENOMEM, NULL;
	return sm_memalign(page, rounded ? rounded : page);
}

SM_EXPORT size_t malloc_usable_size(void *p)
{
	return sm_usable_size(p);
}

/* ---- glibc's malloc.h extras, answered from slubmalloc's own figures (stats.c) ---- */

/* glibc's parameters are all accepted and have no effect here (slubmalloc has no arenas,
 * top pad or mmap threshold); its tests expect 1 for unknown ones too. */
SM_EXPORT int mallopt(int param, int value)
{
	(void)param, (void)value;
	return 1;
}

SM_EXPORT int malloc_trim(size_t pad)
{
	(void)pad;
	return sm_trim();
}

static size_t clamp_int(size_t v)
{
	return v > INT_MAX ? INT_MAX : v;
}

/* glibc's meanings: arena = non-mmapped bytes (our slab regions), uordblks/fordblks = bytes
 * in use/free in them, hblks/hblkhd = mmapped blocks (our large blocks). */
SM_EXPORT struct mallinfo2 mallinfo2(void)
{
	struct slub_stats t;
	slub_stats_get(&t, NULL, 0);
	struct mallinfo2 m = {0};
	m.arena = t.slab_bytes_mapped;
	m.uordblks = t.small_bytes_in_use;
	m.fordblks = t.slab_bytes_mapped > t.small_bytes_in_use
			     ? t.slab_bytes_mapped - t.small_bytes_in_use : 0;
	m.hblks = t.large_count;
	m.hblkhd = t.large_bytes;
	m.usmblks = 0;
	m.ordblks = 1;
	return m;
}

SM_EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m = {0};
	m.arena = (int)clamp_int(m2.arena);
	m.ordblks = (int)clamp_int(m2.ordblks);
	m.hblks = (int)clamp_int(m2.hblks);
	m.hblkhd = (int)clamp_int(m2.hblkhd);
	m.uordblks = (int)clamp_int(m2.uordblks);
	m.fordblks = (int)clamp_int(m2.fordblks);
	return m;
}

SM_EXPORT void malloc_stats(void)
{
	sm_malloc_stats();
}

SM_EXPORT int malloc_info(int options, FILE *fp)
{
	return sm_malloc_info(options, fp);
}
