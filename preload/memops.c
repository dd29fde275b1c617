/* memops.c: memcpy, memmove, memset and their _chk forms, in libslubmalloc-debug.so only.
 * With SLUBMALLOC_DEBUG set, each checks its destination against the bounds of the block it
 * lies in before it writes (sm_debug_check_write), so an overflow is caught at the call.
 * Then, and without the debug mode, glibc's own code does the work. libslubmalloc.so leaves a
 * program's memcpy alone. */
#include <stddef.h>
#include <wchar.h>

#include "diag/diag.h"
#include "options.h"
#include "platform.h"

/* glibc's own functions under names these do not define, each as fast as the one it stands
 * for: __mempcpy is memcpy returning the end, bcopy is memmove with its arguments swapped,
 * wmemset fills words (the tail bytes are stored one by one). */
void *__mempcpy(void *, const void *, size_t);
void bcopy(const void *, void *, size_t);
wchar_t *wmemset(wchar_t *, wchar_t, size_t);
SM_NORETURN void __chk_fail(void);

static void *fill(void *d, int c, size_t n)
{
	unsigned char *p = d, b = (unsigned char)c;
	size_t words = n / sizeof(wchar_t);
	if (words)
		wmemset((wchar_t *)(void *)p, (wchar_t)(b * 0x01010101u), words);
	for (size_t i = words * sizeof(wchar_t); i < n; i++)
		((volatile unsigned char *)p)[i] = b; /* volatile: never made a call of memset */
	return d;
}

#define CHECK(call, d, n)                                                                  \
	do {                                                                               \
		if (unlikely(sm_opt.debug))                                                \
			sm_debug_check_write(d, n, call, __builtin_return_address(0));     \
	} while (0)

SM_EXPORT void *memcpy(void *d, const void *s, size_t n)
{
	CHECK("memcpy", d, n);
	__mempcpy(d, s, n);
	return d;
}

SM_EXPORT void *memmove(void *d, const void *s, size_t n)
{
	CHECK("memmove", d, n);
	bcopy(s, d, n);
	return d;
}

SM_EXPORT void *memset(void *d, int c, size_t n)
{
	CHECK("memset", d, n);
	return fill(d, c, n);
}

SM_EXPORT void *__memcpy_chk(void *d, const void *s, size_t n, size_t room)
{
	CHECK("memcpy", d, n);
	if (room < n)
		__chk_fail();
	__mempcpy(d, s, n);
	return d;
}

SM_EXPORT void *__memmove_chk(void *d, const void *s, size_t n, size_t room)
{
	CHECK("memmove", d, n);
	if (room < n)
		__chk_fail();
	bcopy(s, d, n);
	return d;
}

SM_EXPORT void *__memset_chk(void *d, int c, size_t n, size_t room)
{
	CHECK("memset", d, n);
	if (room < n)
		__chk_fail();
	return fill(d, c, n);
}
