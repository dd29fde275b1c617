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

static void stat_line(const char *what, uint64_t v)
{
	sm_write(2, what);
	sm_write_num_pad(2, v, 10, 10);
	sm_write(2, "\n");
}

/* glibc's layout, on stderr, one arena. */
SM_EXPORT void malloc_stats(void)
{
	struct slub_stats t;
	slub_stats_get(&t, NULL, 0);
	sm_write(2, "Arena 0:\n");
	stat_line("system bytes     = ", t.slab_bytes_mapped);
	stat_line("in use bytes     = ", t.small_bytes_in_use);
	sm_write(2, "Total (incl. mmap):\n");
	stat_line("system bytes     = ", t.bytes_mapped);
	stat_line("in use bytes     = ", t.bytes_in_use);
	stat_line("max mmap regions = ", t.large_peak_count);
	stat_line("max mmap bytes   = ", t.large_peak_bytes);
}

/* glibc's XML shape: one heap, a <sizes> element per size class in use (free objects of
 * each), then the totals. Called by the program, outside the allocator: stdio may allocate. */
SM_EXPORT int malloc_info(int options, FILE *fp)
{
	if (options != 0)
		return errno = EINVAL, -1;
	static struct slub_cache_stats rows[NCLASS + MAX_TYPED];
	static sm_lock_t info_lock;
	struct slub_stats t;
	sm_lock(&info_lock);
	size_t n = slub_stats_get(&t, rows, NCLASS + MAX_TYPED);
	size_t free_objs = 0, free_bytes = 0;
	fprintf(fp, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
	for (size_t i = 0; i < n; i++) {
		size_t f = rows[i].num_objs - rows[i].active_objs;
		if (!f)
			continue;
		fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n",
			rows[i].objsize, rows[i].objsize, f * rows[i].objsize, f);
		free_objs += f, free_bytes += f * rows[i].objsize;
	}
	sm_unlock(&info_lock);
	fprintf(fp, "</sizes>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		"<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
		"<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
		"<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n"
		"</heap>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		"<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
		"<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n"
		"<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
		"<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n"
		"</malloc>\n",
		free_objs, free_bytes, t.slab_bytes_mapped, t.slab_bytes_mapped,
		t.slab_bytes_mapped, t.slab_bytes_mapped, free_objs, free_bytes, t.large_count,
		t.large_bytes, t.bytes_mapped, t.bytes_mapped, t.bytes_mapped, t.bytes_mapped);
	return 0;
}
