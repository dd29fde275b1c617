/* unit_remap.c: sm_os_remap (platform/os.c), the mremap behind large blocks.
 * A range that must move keeps its offset within 2 MiB, so the kernel moves whole page
 * tables; its bytes move along; the space reserved for the move is all given back; a range
 * grows in place when it can; a small range moves too; errno stays as it was. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "platform.h"

#define MIB ((size_t)1 << 20)
#define SPAN (2 * MIB)

/* A read-write range of size bytes at 4 KiB past a 2 MiB boundary, with a page of no access
 * right after it, so it cannot grow in place. */
static char *blocked_range(size_t size)
{
	char *raw = mmap(NULL, size + 2 * SPAN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(raw != MAP_FAILED, "mmap of %zu bytes failed", size + 2 * SPAN);
	char *p = (char *)(((uintptr_t)raw + SPAN - 1) & ~(uintptr_t)(SPAN - 1)) + 4096;
	CHECK(mprotect(p, size, PROT_READ | PROT_WRITE) == 0, "mprotect failed");
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	/* keep one page of no access after the range, drop the rest */
	char *end = raw + size + 2 * SPAN;
	if (p + size + 4096 < end)
		munmap(p + size + 4096, (size_t)(end - (p + size + 4096)));
	return p;
}

/* Whether a mapping with no access but the one at skip starts at a or ends at a
 * (/proc/self/maps). */
static int none_mapping_at(uintptr_t a, uintptr_t skip)
{
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL, "cannot open /proc/self/maps");
	char line[512];
	int found = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && !strcmp(perms, "---p") &&
		    lo != skip && (lo == a || hi == a))
			found = 1;
	}
	fclose(f);
	return found;
}

static void fill(char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (char)(seed + i / 4096);
}

static void check_fill(const char *p, size_t n, unsigned seed, const char *what)
{
	for (size_t i = 0; i < n; i += 4096)
		CHECK(p[i] == (char)(seed + i / 4096), "%s: byte %zu lost in the move", what, i);
}

int main(void)
{
	/* a large range that must move: same offset within 2 MiB, bytes kept, tail zero */
	size_t old = 16 * MIB, size = 24 * MIB;
	char *p = blocked_range(old);
	fill(p, old, 7);
	errno = EDOM;
	char *q = sm_os_remap(p, old, size);
	CHECK(q != NULL, "sm_os_remap(16 MiB -> 24 MiB) failed");
	CHECK(errno == EDOM, "a move that succeeded changed errno to %d", errno);
	CHECK(q != p, "the range grew in place past a page of no access");
	unsigned long from = (uintptr_t)p & (SPAN - 1), to = (uintptr_t)q & (SPAN - 1);
	CHECK(from == to, "moved from offset %#lx to offset %#lx within 2 MiB", from, to);
	check_fill(q, old, 7, "large move");
	for (size_t i = old; i < size; i += 4096)
		CHECK(q[i] == 0, "byte %zu of the grown part is not zero", i);
	q[size - 1] = 1;
	uintptr_t blocker = (uintptr_t)p + old;
	CHECK(!none_mapping_at((uintptr_t)q, blocker) &&
		      !none_mapping_at((uintptr_t)q + size, blocker),
	      "a piece of the reservation for the move is still mapped beside the range");
	munmap(p + old, 4096);

	/* free space after it: grows in place */
	char *g = mmap(NULL, 16 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(g != MAP_FAILED, "mmap of 16 MiB failed");
	munmap(g + 8 * MIB, 8 * MIB);
	fill(g, 8 * MIB, 5);
	char *r = sm_os_remap(g, 8 * MIB, 12 * MIB);
	CHECK(r == g, "8 MiB -> 12 MiB with 8 MiB free after it: moved to %p from %p", (void *)r,
	      (void *)g);
	check_fill(r, 8 * MIB, 5, "growth in place");
	munmap(r, 12 * MIB);
	munmap(q, size);

	/* a small range (under 4 MiB) moves the plain way */
	char *s = blocked_range(MIB);
	fill(s, MIB, 3);
	char *t = sm_os_remap(s, MIB, 3 * MIB);
	CHECK(t != NULL && t != s, "sm_os_remap(1 MiB -> 3 MiB) failed or did not move");
	check_fill(t, MIB, 3, "small move");
	munmap(t, 3 * MIB);
	munmap(s + MIB, 4096);
	printf("unit_remap: all checks passed\n");
	return 0;
}
