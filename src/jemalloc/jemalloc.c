/* jemalloc.c: jemalloc 5's allocation calls (mallocx, rallocx, xallocx, sallocx, sdallocx,
 * nallocx), for programs built against libjemalloc. preload/jemalloc.c exports the names.
 * The flags keep jemalloc's encoding:
 *   bits 0-5: lg of the alignment (0: none); bit 6: MALLOCX_ZERO;
 *   bits 8-19: tcache + 2 (0: the thread's, 1: none); bits 20-31: arena + 1 (0: automatic).
 * There is one heap. Arena 0 is it. mallctl's "arenas.create" gives other numbers for it
 * (mallctl.c): a flag with an arena that was never created fails, as in jemalloc.
 * MALLOCX_TCACHE_NONE takes a small block from the fullest partial slab, as a mover needs
 * (defrag.c). MALLOCX_TCACHE(t) takes the thread's cache, as no flag does.
 * A block of MALLOCX_ZERO is zero up to its usable size. So rallocx's zeroing may start at the
 * old usable size, as jemalloc's does, or where the copy ended when the block moved.
 * A size of 0 is taken as 1, as jemalloc's release builds do. */
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "compat.h"
#include "config.h"
#include "defrag.h"
#include "fastpath.h"
#include "mallctl.h"
#include "options.h"
#include "platform.h"
#include "sizeclass.h"

#define LG_ALIGN_MASK 0x3f
#define FLAG_ZERO 0x40
#define TCACHE_MASK 0xfff00
#define TCACHE_NONE 0x100
#define ARENA_SHIFT 20

static size_t flag_align(int flags)
{
	unsigned lg = (unsigned)flags & LG_ALIGN_MASK;
	return lg ? (size_t)1 << lg : 0;
}

/* The arena of flags exists (0: automatic). */
static bool flag_arena_ok(int flags)
{
	unsigned field = (unsigned)flags >> ARENA_SHIFT;
	return field == 0 || sm_ctl_arena_exists(field - 1);
}

/* Zero [from, usable size) of p. */
static void zero_tail(void *p, size_t from)
{
	size_t n = sm_usable_size(p);
	if (n > from)
		memset((char *)p + from, 0, n - from);
}

void *sm_mallocx(size_t size, int flags)
{
	size_t align = flag_align(flags);
	if (!size)
		size = 1;
	if (!flag_arena_ok(flags) || align > SIZE_MAX / 2 + 1)
		return errno = ENOMEM, NULL;
	void *p;
	if ((flags & TCACHE_MASK) == TCACHE_NONE && align <= MIN_ALIGN && (p = sm_alloc_fullest(size))) {
		if (flags & FLAG_ZERO)
			zero_tail(p, 0);
		return p;
	}
	if (align <= MIN_ALIGN) {
		if (!(flags & FLAG_ZERO))
			return sm_alloc_counted(size);
		p = size > MAX_SMALL ? sm_calloc(1, size) : sm_alloc_counted(size);
		if (p)
			zero_tail(p, size > MAX_SMALL ? size : 0);
		return p;
	}
	p = sm_memalign(align, size);
	if (p && (flags & FLAG_ZERO))
		zero_tail(p, 0);
	return p;
}

/* NULL when it cannot: p stays as it was. */
void *sm_rallocx(void *p, size_t size, int flags)
{
	size_t align = flag_align(flags);
	if (!p)
		return sm_mallocx(size, flags);
	if (!size)
		size = 1;
	if (!flag_arena_ok(flags))
		return errno = ENOMEM, NULL;
	size_t old = sm_usable_size(p);
	void *q;
	if (align <= MIN_ALIGN) {
		q = sm_realloc(p, size);
	} else if (!((uintptr_t)p & (align - 1)) && size <= old && size > old / 2) {
		q = p;
	} else {
		q = sm_mallocx(size, flags & ~FLAG_ZERO);
		if (q) {
			memcpy(q, p, old < size ? old : size);
			sm_free_fast(p);
		}
	}
	/* zero from the old usable size; a block that moved holds only what was copied */
	if (q && (flags & FLAG_ZERO))
		zero_tail(q, q == p || old < size ? old : size);
	return q;
}

/* Blocks are not resized in place: the usable size says whether size fits already. */
size_t sm_xallocx(void *p, size_t size, size_t extra, int flags)
{
	(void)size, (void)extra, (void)flags;
	return sm_usable_size(p);
}

/* The usable size mallocx(size, flags) would give; 0 when no block can be that big. */
size_t sm_nallocx(size_t size, int flags)
{
	size_t align = flag_align(flags);
	if (!size)
		size = 1;
	if (size > PTRDIFF_MAX || align > SIZE_MAX / 2 + 1)
		return 0;
	if (size <= MAX_SMALL && align <= MAX_SMALL) {
		unsigned cls = sm_class_for_align(size, align > MIN_ALIGN ? align : MIN_ALIGN);
		if (cls < NCLASS)
			return sm_class_size(cls);
	}
	size_t page = sm_os_page_size();
	return (size + page - 1) & ~(page - 1);
}

/* sdallocx: size may be any from the size asked for up to the usable size. With an alignment
 * a block may be of a class far larger than its size: only the upper bound is checked. */
void sm_sdallocx(void *p, size_t size, int flags)
{
	if (!size)
		size = 1;
	if (flag_align(flags) > MIN_ALIGN)
		sm_free_aligned_sized_fast(p, size);
	else
		sm_free_sized_fast(p, size, FORM_C);
}
