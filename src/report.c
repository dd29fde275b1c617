/* report.c: error reports and small numbers written straight to a file descriptor with
 * write(2) (sm_os_write: no cancellation point): usable inside the allocator, where printf
 * (which allocates) is not.
 * A heap-corruption report is one line on stderr, then abort(). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform.h"
#include "report.h"
#include "types.h"

void sm_write(int fd, const char *s)
{
	int saved = errno;
	sm_os_write(fd, s, strlen(s));
	errno = saved;
}

/* v in base (10 or 16), right-aligned in width columns (0: no padding). */
void sm_write_num_pad(int fd, uint64_t v, int base, int width)
{
	char buf[24];
	int i = sizeof buf - 1;
	buf[i] = 0;
	do {
		buf[--i] = "0123456789abcdef"[v % (unsigned)base];
		v /= (unsigned)base;
	} while (v && i > 0);
	for (int pad = width - (int)(sizeof buf - 1 - (size_t)i); pad > 0; pad--)
		sm_write(fd, " ");
	sm_write(fd, buf + i);
}

void sm_write_num(int fd, uint64_t v, int base)
{
	sm_write_num_pad(fd, v, base, 0);
}

void sm_write_hex(int fd, uint64_t v)
{
	sm_write(fd, "0x");
	sm_write_num(fd, v, 16);
}

/* "slubmalloc: <what> of 0x<p> <detail>" on stderr, then abort(). */
void sm_fatal(const char *what, const void *p, const char *detail)
{
	sm_write(2, "slubmalloc: ");
	sm_write(2, what);
	sm_write(2, " of ");
	sm_write_hex(2, (uintptr_t)p);
	if (detail && *detail) {
		sm_write(2, " ");
		sm_write(2, detail);
	}
	sm_write(2, "\n");
	abort();
}

/* "slubmalloc: <what> of 0x<p> in cache <name>" on stderr, then abort(). */
void sm_fatal_in(const char *what, const void *p, const struct cache *c)
{
	char detail[sizeof c->name + 16] = "in cache ";
	strcat(detail, c->name);
	sm_fatal(what, p, detail);
}

/* "slubmalloc:   WHAT by thread T:", then one line a frame: its address, and its file and
 * offset (what addr2line -e file takes). */
void sm_write_stack(const char *what, uint32_t tid, void *const *bt, int n)
{
	sm_write(2, "slubmalloc:   ");
	sm_write(2, what);
	sm_write(2, " by thread ");
	sm_write_num(2, tid, 10);
	sm_write(2, ":\n");
	for (int i = 0; i < n; i++) {
		sm_write(2, "slubmalloc:     #");
		sm_write_num(2, (uint64_t)i, 10);
		sm_write(2, " ");
		sm_write_hex(2, (uintptr_t)bt[i]);
		uintptr_t off; /* "(file+0x..)": what addr2line -e file takes */
		const char *mod = sm_os_module(bt[i], &off);
		if (mod) {
			sm_write(2, " (");
			sm_write(2, mod);
			sm_write(2, "+");
			sm_write_hex(2, off);
			sm_write(2, ")");
		}
		sm_write(2, "\n");
	}
}
