/* override.c: the libc names (the glibc manual's "Replacing malloc" set and its extras), each a
 * one-line call into the engine. These and include/slubmalloc.h are all the library exports. */
#include <errno.h>
#include <stddef.h>
#include <unistd.h>

#include "fastpath.h"
#include "internal.h"

SM_EXPORT void *malloc(size_t size)
{
	return sm_alloc_fast(size);
}

SM_EXPORT void free(void *p)
{
	sm_free_fast(p);
}

SM_EXPORT void cfree(void *p)
{
	sm_free_fast(p);
}

SM_EXPORT void free_sized(void *p, size_t size)
{
	sm_free_sized(p, size);
}

SM_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
	(void)align;
	sm_free_sized(p, size);
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
	int saved = errno;
	void *p = sm_memalign(align, size);
	if (!p)
		return errno = saved, ENOMEM;
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
