/* unit_jemalloc: jemalloc 5's calls as a program built against libjemalloc makes them, linked
 * with libslubmalloc. The prototypes and flag macros are written here, with jemalloc's
 * encoding, as jemalloc.h has them. Checks: mallocx's alignment and zeroing, rallocx (content,
 * zeroing past the old usable size, NULL with the block intact when it cannot), xallocx,
 * sallocx and nallocx agree with the blocks made; sdallocx takes the asked size and the usable
 * size, and reports a size larger than the block; arenas.create's numbers work in
 * MALLOCX_ARENA until destroyed; mallctl's errors (unknown names, sizes, read-only names,
 * actions, the utilization queries) are jemalloc's; stats.allocated and the bins' curregs
 * follow what the program holds; stats.retained holds a large block's range once it is freed
 * and purged; stats.resident and slub_stats' bytes_resident are within 1%
 * (or 1 MiB) of what the kernel says is resident in the program's anonymous mappings;
 * mallctlnametomib and mallctlbymib work with numbers patched in; malloc_stats_print reaches
 * its callback. Two movers, one written like Valkey's active defrag (batch_query, the bins'
 * figures, MALLOCX_TCACHE_NONE) and one with slub_defrag_move, take a heap with 7 of 8 blocks
 * freed at random back to within 1.3x of the live bytes, every block intact. Each case runs
 * in a child of its own (run_cases). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "slubmalloc.h"
#include "api_util.h"

#define MALLOCX_LG_ALIGN(la) ((int)(la))
#define MALLOCX_ALIGN(a) ((int)(__builtin_ffsll((long long)(a)) - 1))
#define MALLOCX_ZERO ((int)0x40)
#define MALLOCX_TCACHE(tc) ((int)(((tc) + 2) << 8))
#define MALLOCX_TCACHE_NONE MALLOCX_TCACHE(-1)
#define MALLOCX_ARENA(a) ((int)(((unsigned)(a) + 1) << 20))
#define MALLCTL_ARENAS_ALL 4096

void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t sallocx(const void *ptr, int flags);
void dallocx(void *ptr, int flags);
void sdallocx(void *ptr, size_t size, int flags);
size_t nallocx(size_t size, int flags);
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
		 size_t newlen);
void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque, const char *opts);

static const size_t sizes[] = {1, 8, 16, 17, 100, 1000, 4096, 5000, 65536, 131072, 131073,
			       1 << 20, (5 << 20) + 3};

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void t_mallocx(void)
{
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i];
		void *p = mallocx(n, 0);
		CHECK(p && sallocx(p, 0) >= n, "mallocx(%zu)", n);
		CHECK(sallocx(p, 0) == malloc_usable_size(p), "sallocx(%zu)", n);
		CHECK(nallocx(n, 0) == sallocx(p, 0), "nallocx(%zu) %zu, block %zu", n,
		      nallocx(n, 0), sallocx(p, 0));
		memset(p, 0xa5, sallocx(p, 0));
		dallocx(p, 0);
		for (unsigned lg = 5; lg <= 13; lg += 4) {
			void *q = mallocx(n, MALLOCX_LG_ALIGN(lg) | MALLOCX_ZERO);
			CHECK(q && !((uintptr_t)q & ((1u << lg) - 1)), "mallocx(%zu, 2^%u)", n, lg);
			CHECK(all_zero(q, sallocx(q, 0)), "MALLOCX_ZERO, %zu, 2^%u: not zero", n, lg);
			CHECK(nallocx(n, MALLOCX_LG_ALIGN(lg)) <= sallocx(q, 0), "aligned nallocx");
			memset(q, 0xa5, sallocx(q, 0));
			sdallocx(q, n, MALLOCX_LG_ALIGN(lg));
		}
		void *z = mallocx(n, MALLOCX_ZERO);
		CHECK(z && all_zero(z, sallocx(z, 0)), "MALLOCX_ZERO %zu: not zero to its usable size", n);
		sdallocx(z, sallocx(z, 0), 0); /* the usable size, as bind's isc_mem_free gives */
	}
	void *p = mallocx(0, 0); /* jemalloc's release builds: the smallest class */
	CHECK(p && sallocx(p, 0) >= 1, "mallocx(0)");
	sdallocx(p, 0, 0);
	CHECK(!mallocx(1, MALLOCX_LG_ALIGN(63)), "an alignment of 2^63 cannot be");
	CHECK(nallocx(SIZE_MAX, 0) == 0, "nallocx(SIZE_MAX)");
	CHECK(!mallocx(SIZE_MAX / 2, 0), "mallocx(SIZE_MAX / 2)");
	printf("mallocx, sallocx, nallocx, sdallocx: sizes 1 to 5 MiB, aligned, zeroed\n");
}

static void t_rallocx(void)
{
	for (size_t i = 0; i + 1 < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i], m = sizes[i + 1];
		unsigned char *p = mallocx(n, MALLOCX_ZERO);
		memset(p, 0x5a, n);
		size_t old = sallocx(p, 0);
		unsigned char *q = rallocx(p, m, MALLOCX_ZERO);
		CHECK(q && sallocx(q, 0) >= m, "rallocx %zu -> %zu", n, m);
		for (size_t k = 0; k < n; k++)
			CHECK(q[k] == 0x5a, "rallocx %zu -> %zu: byte %zu lost", n, m, k);
		CHECK(all_zero(q + n, old - n) && all_zero(q + old, sallocx(q, 0) - old),
		      "rallocx %zu -> %zu with MALLOCX_ZERO: not zero past the data", n, m);
		unsigned char *r = rallocx(q, n, MALLOCX_ALIGN(4096));
		CHECK(r && !((uintptr_t)r & 4095) && r[0] == 0x5a && r[n - 1] == 0x5a,
		      "rallocx to 4 KiB alignment, %zu", n);
		CHECK(!rallocx(r, SIZE_MAX / 2, 0), "rallocx to SIZE_MAX / 2 succeeded");
		CHECK(r[0] == 0x5a && sallocx(r, 0) >= n, "rallocx's failure changed the block");
		CHECK(xallocx(r, n, 0, 0) >= n && xallocx(r, n, 0, 0) == sallocx(r, 0), "xallocx fits");
		size_t big = sallocx(r, 0) + 1;
		CHECK(xallocx(r, big, 0, 0) < big, "xallocx grew in place and said it did not");
		dallocx(r, MALLOCX_TCACHE_NONE);
	}
	unsigned char *z = mallocx(400, MALLOCX_ZERO); /* shrink and move, then grow */
	memset(z, 0x77, 100);
	void *dirty = mallocx(100, 0); /* the next block of 100 bytes' class is dirty */
	memset(dirty, 0xee, sallocx(dirty, 0));
	dallocx(dirty, 0);
	z = rallocx(z, 100, MALLOCX_ZERO);
	z = rallocx(z, 300, MALLOCX_ZERO);
	CHECK(z[99] == 0x77 && all_zero(z + 100, sallocx(z, 0) - 100),
	      "MALLOCX_ZERO: a block shrunk, moved and grown again is not zero past its data");
	dallocx(z, 0);
	printf("rallocx and xallocx: content kept, zeroed past it, NULL and intact on failure\n");
}

static void wrong_size(void *arg)
{
	(void)arg;
	void *p = mallocx(100, 0);
	sdallocx(p, 4096, 0);
}

static void wrong_aligned_size(void *arg)
{
	(void)arg;
	void *p = mallocx(100, MALLOCX_ALIGN(64));
	sdallocx(p, 1 << 20, MALLOCX_ALIGN(64));
}

static void t_sdallocx_bad(void)
{
	expect_report(wrong_size, NULL, "sdallocx with a size larger than the block");
	expect_report(wrong_aligned_size, NULL, "aligned sdallocx with a size larger than the block");
	printf("sdallocx: a size larger than the block is reported\n");
}

static void t_arenas(void)
{
	unsigned a, n0, n1;
	size_t len = sizeof a;
	CHECK(mallctl("arenas.narenas", &n0, &len, NULL, 0) == 0 && n0 == 1, "narenas %u", n0);
	CHECK(mallctl("arenas.create", &a, &len, NULL, 0) == 0 && a == 1, "arenas.create %u", a);
	CHECK(mallctl("arenas.narenas", &n1, &len, NULL, 0) == 0 && n1 == 2, "narenas %u", n1);
	int fl = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
	void *p = mallocx(200, fl);
	CHECK(p, "mallocx in arena %u", a);
	p = rallocx(p, 400, fl);
	CHECK(p && sallocx(p, fl) >= 400, "rallocx in arena %u", a);
	sdallocx(p, 400, fl);
	CHECK(!mallocx(8, MALLOCX_ARENA(7)), "an arena never created gave a block");
	ssize_t d = 0, got;
	len = sizeof got;
	char name[64];
	snprintf(name, sizeof name, "arena.%u.dirty_decay_ms", a);
	CHECK(mallctl(name, NULL, NULL, &d, sizeof d) == 0, "write %s", name);
	CHECK(mallctl(name, &got, &len, NULL, 0) == 0 && got == 0, "read %s back", name);
	snprintf(name, sizeof name, "arena.%u.destroy", a);
	CHECK(mallctl(name, NULL, NULL, NULL, 0) == 0, "%s", name);
	CHECK(!mallocx(8, MALLOCX_ARENA(a)), "a destroyed arena gave a block");
	CHECK(mallctl("arena.0.destroy", NULL, NULL, NULL, 0) == EFAULT, "the heap destroyed");
	CHECK(mallctl("arena.9.purge", NULL, NULL, NULL, 0) == ENOENT, "arena.9.purge");
	snprintf(name, sizeof name, "arena.%u.purge", n1); /* redis: narenas stands for all */
	CHECK(mallctl(name, NULL, NULL, NULL, 0) == 0, "%s", name);
	CHECK(mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0, "arena.4096.purge");
	unsigned tc;
	len = sizeof tc;
	CHECK(mallctl("tcache.create", &tc, &len, NULL, 0) == 0, "tcache.create");
	p = mallocx(64, MALLOCX_TCACHE(tc));
	CHECK(p, "mallocx with MALLOCX_TCACHE(%u)", tc);
	dallocx(p, MALLOCX_TCACHE(tc));
	CHECK(mallctl("tcache.destroy", NULL, NULL, &tc, sizeof tc) == 0, "tcache.destroy");
	printf("arenas.create, MALLOCX_ARENA, destroy, decay, purge of all, tcache.create\n");
}

static size_t read_z(const char *name)
{
	size_t z = 0, len = sizeof z;
	CHECK(mallctl(name, &z, &len, NULL, 0) == 0, "read %s", name);
	return z;
}

static void refresh(void)
{
	uint64_t e = 1;
	size_t el = sizeof e;
	CHECK(mallctl("epoch", &e, &el, &e, sizeof e) == 0, "epoch");
}

static void t_errors(void)
{
	size_t z, len = sizeof z;
	uint64_t e;
	const char *v;
	size_t vl = sizeof v;
	CHECK(mallctl("version", &v, &vl, NULL, 0) == 0 && !strncmp(v, "5.", 2), "version");
	CHECK(mallctl("no.such.name", &z, &len, NULL, 0) == ENOENT, "unknown name");
	CHECK(mallctl("arenas", &z, &len, NULL, 0) == ENOENT, "an inner node");
	CHECK(mallctl("epoch.x", &z, &len, NULL, 0) == ENOENT, "past a leaf");
	CHECK(mallctl("arenas..page", &z, &len, NULL, 0) == ENOENT, "an empty component");
	CHECK(mallctl("", &z, &len, NULL, 0) == ENOENT, "an empty name");
	CHECK(mallctl("0", &v, &vl, NULL, 0) == ENOENT, "a number for a word");
	CHECK(mallctl("arena.version.purge", NULL, NULL, NULL, 0) == ENOENT, "a word for a number");
	CHECK(mallctl("arenas.bin.epoch.size", &z, &len, NULL, 0) == ENOENT, "a word for a bin");
	CHECK(mallctl("tcache.flush", NULL, NULL, NULL, 0) == EFAULT, "tcache.flush of no number");
	ssize_t never = -1, got = 0, huge = (ssize_t)1 << 60;
	size_t gl = sizeof got;
	CHECK(mallctl("arenas.dirty_decay_ms", NULL, NULL, &huge, sizeof huge) == EFAULT,
	      "a decay too long to keep");
	CHECK(mallctl("arenas.dirty_decay_ms", &got, &gl, &never, sizeof never) == 0 && got == 1000,
	      "the purge delay, 1000 ms, read as it is set to never (%zd)", got);
	CHECK(mallctl("arenas.dirty_decay_ms", &got, &gl, NULL, 0) == 0 && got == -1,
	      "never reads back as -1 (%zd)", got);
	unsigned a1, a2;
	size_t al = 2;
	CHECK(mallctl("arenas.create", &a1, &al, NULL, 0) == EINVAL && al == 0,
	      "arenas.create with a wrong size");
	al = sizeof a1;
	CHECK(mallctl("arenas.create", &a1, &al, NULL, 0) == 0 &&
	      mallctl("arenas.create", &a2, &al, NULL, 0) == 0 && a1 == 1 && a2 == 2,
	      "a wrong size used up a number (%u, %u)", a1, a2);
	CHECK(mallctl("arenas.bin.999.size", &z, &len, NULL, 0) == ENOENT, "bin out of range");
	CHECK(mallctl("stats.arenas.99999999999999999999999.pactive", &z, &len, NULL, 0) == ENOENT,
	      "a number too long");
	uint32_t small = 0;
	len = sizeof small;
	CHECK(mallctl("arenas.page", &small, &len, NULL, 0) == EINVAL && len == sizeof small,
	      "a short read: EINVAL, and what fits");
	len = sizeof z;
	CHECK(mallctl("arenas.page", &z, &len, NULL, 0) == 0 && z == (size_t)sysconf(_SC_PAGESIZE),
	      "arenas.page");
	CHECK(mallctl("arenas.page", NULL, NULL, &z, sizeof z) == EPERM, "write to read-only");
	CHECK(mallctl("thread.tcache.flush", &z, &len, NULL, 0) == EPERM, "read of an action");
	CHECK(mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0, "thread.tcache.flush");
	e = 1;
	CHECK(mallctl("epoch", NULL, NULL, &e, 4) == EINVAL, "a short write");
	size_t el = sizeof e;
	uint64_t e0;
	CHECK(mallctl("epoch", &e0, &el, &e, sizeof e) == 0, "epoch");
	CHECK(mallctl("epoch", &e, &el, &e, sizeof e) == 0 && e == e0 + 1, "epoch moves");
	bool b;
	size_t bl = sizeof b;
	CHECK(mallctl("background_thread", &b, &bl, NULL, 0) == 0 && !b, "background_thread off");
	unsigned nb;
	len = sizeof nb;
	CHECK(mallctl("arenas.nbins", &nb, &len, NULL, 0) == 0 && nb > 10, "nbins");
	uint32_t nregs;
	len = sizeof nregs;
	CHECK(mallctl("arenas.bin.0.nregs", &nregs, &len, NULL, 0) == 0 && nregs > 1, "nregs (4 bytes)");
	len = sizeof z;
	CHECK(mallctl("arenas.bin.0.size", &z, &len, NULL, 0) == 0 && z == nallocx(1, 0), "bin 0");
	void *in[2] = {mallocx(100, 0), mallocx(1 << 20, 0)};
	size_t out[6], outl = sizeof out;
	CHECK(mallctl("experimental.utilization.batch_query", out, &outl, in, sizeof in) == 0 &&
	      out[1] > 1 && out[0] < out[1] && out[2] >= out[1] * 100 &&
	      out[3] == 0 && out[4] == 1 && out[5] == sallocx(in[1], 0),
	      "batch_query: a small block's slab, a large block");
	outl = sizeof out - 8;
	CHECK(mallctl("experimental.utilization.batch_query", out, &outl, in, sizeof in) == EINVAL,
	      "batch_query with a wrong oldlen");
	CHECK(mallctl("experimental.utilization.batch_query", out, &outl, in, 0) == EINVAL,
	      "batch_query with nothing in");
	struct { void *cur; size_t nfree, nregs, size, bin_nfree, bin_nregs; } q;
	size_t ql = sizeof q;
	int local;
	void *foreign = &local;
	CHECK(mallctl("experimental.utilization.query", &q, &ql, &foreign, sizeof foreign) == 0 &&
	      !q.nregs && !q.size, "query of a pointer not ours: zeros");
	refresh();
	CHECK(mallctl("experimental.utilization.query", &q, &ql, in, sizeof in[0]) == 0 &&
	      q.nregs == out[1] && q.bin_nregs >= q.nregs, "query of a small block");
	ql = 40;
	CHECK(mallctl("experimental.utilization.query", &q, &ql, in, sizeof in[0]) == EINVAL,
	      "query with a wrong oldlen");
	CHECK(!slub_defrag_hint(NULL) && !slub_defrag_hint(in[1]) && !slub_defrag_hint(foreign),
	      "a hint for NULL, a large block, a pointer not ours");
	CHECK(slub_defrag_move(in[1]) == in[1], "a large block moved");
	dallocx(in[0], 0);
	dallocx(in[1], 0);
	printf("mallctl: ENOENT, EINVAL, EPERM as jemalloc gives them; epoch; the bins; utilization\n");
}

/* jemalloc's curregs counts the thread caches' objects too: empty this thread's first. */
static void flush_refresh(void)
{
	CHECK(mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0, "thread.tcache.flush");
	refresh();
}

static void t_stats(void)
{
	enum { N = 1000, SIZE = 3000 };
	static void *v[N];
	unsigned nb;
	size_t len = sizeof nb, bin = 0, z;
	CHECK(mallctl("arenas.nbins", &nb, &len, NULL, 0) == 0, "nbins");
	for (; bin < nb; bin++) {
		char name[64];
		snprintf(name, sizeof name, "arenas.bin.%zu.size", bin);
		if (read_z(name) == nallocx(SIZE, 0))
			break;
	}
	CHECK(bin < nb, "no bin of %d bytes' class", SIZE);
	size_t mib[8], miblen = 8;
	CHECK(mallctlnametomib("stats.arenas.0.bins.0.curregs", mib, &miblen) == 0 && miblen == 6,
	      "nametomib gave %zu components", miblen);
	mib[2] = MALLCTL_ARENAS_ALL;
	mib[4] = bin;
	flush_refresh();
	size_t allocated0 = read_z("stats.allocated"), cur0;
	len = sizeof cur0;
	CHECK(mallctlbymib(mib, miblen, &cur0, &len, NULL, 0) == 0, "bymib");
	for (int i = 0; i < N; i++)
		v[i] = mallocx(SIZE, 0);
	void *big = mallocx(10 << 20, 0);
	flush_refresh();
	size_t allocated1 = read_z("stats.allocated"), cur1;
	CHECK(mallctlbymib(mib, miblen, &cur1, &len, NULL, 0) == 0, "bymib");
	CHECK(cur1 - cur0 == N, "curregs moved by %zu for %d blocks", cur1 - cur0, N);
	size_t want = N * nallocx(SIZE, 0) + sallocx(big, 0);
	CHECK(allocated1 - allocated0 == want, "stats.allocated moved by %zu, the blocks are %zu",
	      allocated1 - allocated0, want);
	CHECK(read_z("stats.active") >= allocated1 && read_z("stats.mapped") >= read_z("stats.active"),
	      "allocated <= active <= mapped");
	CHECK(read_z("stats.resident") > 0, "resident");
	for (int i = 0; i < N; i++)
		sdallocx(v[i], SIZE, 0);
	dallocx(big, 0);
	flush_refresh();
	CHECK(mallctlbymib(mib, miblen, &z, &len, NULL, 0) == 0 && z == cur0, "curregs back to %zu: %zu",
	      cur0, z);
	CHECK(read_z("stats.allocated") == allocated0, "stats.allocated back");
	miblen = 2;
	CHECK(mallctlnametomib("arena.0.purge", mib, &miblen) == 0 && miblen == 2, "a partial MIB");
	miblen = 8;
	CHECK(mallctlnametomib("arena.0.purge", mib, &miblen) == 0 && miblen == 3 && mib[1] == 0,
	      "arena.0.purge's MIB");
	mib[1] = MALLCTL_ARENAS_ALL;
	CHECK(mallctlbymib(mib, 3, NULL, NULL, NULL, 0) == 0, "purge by MIB");
	CHECK(mallctlbymib(mib, 2, NULL, NULL, NULL, 0) == ENOENT, "a partial MIB names nothing");
	flush_refresh(); /* the purge kept the 10 MiB block's range mapped: retained */
	CHECK(read_z("stats.retained") >= (10u << 20), "stats.retained %zu after the purge",
	      read_z("stats.retained"));
	printf("stats.allocated and curregs follow %d blocks and a large one; MIBs\n", N);
}

/* What the kernel says is resident in anonymous mappings that are not a file's .bss (an
 * anonymous mapping right after a file's), the stack or the heap: in this single-threaded
 * program, slubmalloc's mappings and a few pages of the loader's. */
static size_t kernel_anon_rss(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	CHECK(f, "open smaps");
	static char line[512];
	size_t total = 0, prev_end = 0, end = 0;
	bool ours = false, prev_file = false;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char path[256] = "";
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &lo, &hi, path) >= 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			bool bss = !path[0] && prev_file && lo == prev_end;
			ours = !path[0] && !bss;
			prev_file = path[0] == '/';
			prev_end = end = hi;
			continue;
		}
		size_t kb;
		if (ours && sscanf(line, "Rss: %zu kB", &kb) == 1)
			total += kb * 1024;
	}
	(void)end;
	fclose(f);
	return total;
}

static void check_resident(const char *when)
{
	refresh();
	size_t ctl = read_z("stats.resident"), kern = kernel_anon_rss();
	struct slub_stats t;
	slub_stats_get(&t, NULL, 0);
	size_t tol = kern / 100 > (1u << 20) ? kern / 100 : (1u << 20);
	CHECK(ctl <= kern + tol && kern <= ctl + tol, "%s: stats.resident %zu, the kernel %zu", when,
	      ctl, kern);
	CHECK(t.bytes_resident <= kern + tol && kern <= t.bytes_resident + tol,
	      "%s: slub_stats' bytes_resident %zu, the kernel %zu", when, t.bytes_resident, kern);
}

/* stats.resident against the kernel, and stats.allocated against the live blocks' usable
 * sizes, after allocating, freeing 7 of 8 at random, trimming and allocating again. */
static void t_resident(void)
{
	enum { N = 40000 };
	static void *v[N];
	uint64_t rng = 42;
	refresh();
	size_t base = read_z("stats.allocated"), live = 0;
	for (int i = 0; i < N; i++) {
		size_t n = i % 1000 == 0 ? 200000 + rng_below(&rng, 1 << 20) : 16 + rng_below(&rng, 3000);
		v[i] = mallocx(n, 0);
		memset(v[i], 1, n);
		live += sallocx(v[i], 0);
	}
	refresh();
	CHECK(read_z("stats.allocated") - base == live, "allocated %zu, live blocks %zu",
	      read_z("stats.allocated") - base, live);
	check_resident("allocated");
	for (int i = 0; i < N; i++)
		if (rng_below(&rng, 8)) {
			live -= sallocx(v[i], 0);
			dallocx(v[i], 0);
			v[i] = NULL;
		}
	refresh();
	CHECK(read_z("stats.allocated") - base == live, "after frees: allocated %zu, live %zu",
	      read_z("stats.allocated") - base, live);
	check_resident("7 of 8 freed");
	CHECK(mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0, "purge");
	check_resident("purged");
	for (int i = 0; i < N; i += 2)
		if (!v[i]) {
			v[i] = mallocx(64 + (size_t)i % 500, 0);
			live += sallocx(v[i], 0);
		}
	refresh();
	CHECK(read_z("stats.allocated") - base == live, "again: allocated %zu, live %zu",
	      read_z("stats.allocated") - base, live);
	check_resident("allocated again");
	printf("stats.resident within 1%% (or 1 MiB) of the kernel's figure; allocated exact\n");
}

/* ---- defragmentation, written like Valkey's active defrag (allocator_defrag.c) ---- */
enum { DN = 400000 };
static void *dv[DN];
static size_t dsize[DN];

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	CHECK(f && fscanf(f, "%ld %ld", &pages, &rss) == 2, "statm");
	fclose(f);
	return rss * sysconf(_SC_PAGESIZE);
}

static unsigned char dpat(size_t i, size_t k)
{
	return (unsigned char)(i * 131 + k * 7 + 1);
}

/* Fill about 120 MB of blocks of 64 to 1024 bytes, each with a pattern; free 7 of 8 at random;
 * trim. Returns the process's RSS before the fill. */
static long defrag_setup(void)
{
	uint64_t rng = 7;
	memset(dv, 0, sizeof dv); /* the test's own arrays, resident before the base figure */
	memset(dsize, 0, sizeof dsize);
	long base = rss_bytes();
	for (size_t i = 0; i < DN; i++) {
		dsize[i] = 64 + rng_below(&rng, 961);
		dv[i] = mallocx(dsize[i], 0);
		for (size_t k = 0; k < dsize[i]; k++)
			((unsigned char *)dv[i])[k] = dpat(i, k);
	}
	for (size_t i = 0; i < DN; i++)
		if (rng_below(&rng, 8)) {
			sdallocx(dv[i], dsize[i], 0);
			dv[i] = NULL;
		}
	CHECK(mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0, "purge");
	return base;
}

/* Every block intact, RSS back to within 1.3x of the live bytes. */
static void defrag_check(const char *how, long base, size_t moved)
{
	size_t live = 0;
	for (size_t i = 0; i < DN; i++) {
		if (!dv[i])
			continue;
		for (size_t k = 0; k < dsize[i]; k++)
			CHECK(((unsigned char *)dv[i])[k] == dpat(i, k), "%s: block %zu byte %zu changed",
			      how, i, k);
		live += sallocx(dv[i], 0);
	}
	CHECK(mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0, "purge");
	long rss = rss_bytes() - base;
	printf("%s: %zu blocks moved; RSS %.1f MB for %.1f MB live (%.2fx)\n", how, moved,
	       rss / 1e6, live / 1e6, (double)rss / (double)live);
	CHECK(moved > 0 && (double)rss <= 1.3 * (double)live,
	      "%s: RSS %ld for %zu live bytes", how, rss, live);
}

static void t_defrag_jemalloc(void)
{
	long base = defrag_setup();
	long before = rss_bytes() - base;
	unsigned nb;
	size_t len = sizeof nb;
	CHECK(mallctl("arenas.nbins", &nb, &len, NULL, 0) == 0 && nb <= 128, "nbins");
	size_t binsize[128], key[6], keylen = 6, mib_regs[6], mib_slabs[6], mib_nonfull[6];
	for (unsigned j = 0; j < nb; j++) {
		char name[64];
		snprintf(name, sizeof name, "arenas.bin.%u.size", j);
		binsize[j] = read_z(name);
	}
	CHECK(mallctlnametomib("experimental.utilization.batch_query", key, &keylen) == 0,
	      "batch_query's MIB");
	size_t l6 = 6;
	CHECK(mallctlnametomib("stats.arenas.4096.bins.0.curregs", mib_regs, &l6) == 0, "curregs");
	CHECK(mallctlnametomib("stats.arenas.4096.bins.0.curslabs", mib_slabs, &l6) == 0, "curslabs");
	CHECK(mallctlnametomib("stats.arenas.4096.bins.0.nonfull_slabs", mib_nonfull, &l6) == 0, "nonfull");
	size_t moved = 0;
	for (int pass = 0; pass < 8; pass++) {
		size_t curregs[128], curslabs[128], nonfull[128], z = sizeof(size_t), n = 0;
		refresh();
		for (unsigned j = 0; j < nb; j++) {
			mib_regs[4] = mib_slabs[4] = mib_nonfull[4] = j;
			CHECK(mallctlbymib(mib_regs, 6, &curregs[j], &z, NULL, 0) == 0 &&
			      mallctlbymib(mib_slabs, 6, &curslabs[j], &z, NULL, 0) == 0 &&
			      mallctlbymib(mib_nonfull, 6, &nonfull[j], &z, NULL, 0) == 0, "bin %u", j);
		}
		for (size_t i = 0; i < DN; i++) {
			if (!dv[i])
				continue;
			size_t out[3], outsz = sizeof out;
			void *p = dv[i];
			CHECK(mallctlbymib(key, keylen, out, &outsz, &p, sizeof p) == 0, "batch_query");
			unsigned j = 0;
			while (j < nb && binsize[j] != out[2] / out[1] && binsize[j] != sallocx(p, 0))
				j++;
			CHECK(j < nb, "no bin for a block of %zu", sallocx(p, 0));
			size_t nalloced = out[1] - out[0], full = curslabs[j] - nonfull[j];
			if (nalloced == out[1] || nonfull[j] < 2 ||
			    1000 * nalloced * nonfull[j] > 1125 * (curregs[j] - full * out[1]))
				continue;
			size_t u = sallocx(p, 0);
			void *q = mallocx(u, MALLOCX_TCACHE_NONE);
			memcpy(q, p, u);
			sdallocx(p, u, MALLOCX_TCACHE_NONE);
			dv[i] = q;
			n++;
		}
		moved += n;
		if (n < DN / 800)
			break;
	}
	printf("before moving: RSS %.1f MB\n", before / 1e6);
	defrag_check("batch_query and MALLOCX_TCACHE_NONE", base, moved);
}

static void t_defrag_hint(void)
{
	long base = defrag_setup();
	size_t moved = 0;
	for (int pass = 0; pass < 8; pass++) {
		size_t n = 0;
		for (size_t i = 0; i < DN; i++) {
			if (!dv[i])
				continue;
			void *q = slub_defrag_move(dv[i]);
			n += q != dv[i];
			dv[i] = q;
		}
		moved += n;
		if (n < DN / 800)
			break;
		usleep(120000); /* the hint's figures are taken again */
	}
	defrag_check("slub_defrag_move", base, moved);
}

static void collect(void *arg, const char *s)
{
	size_t *n = arg;
	if (strstr(s, "Allocated: "))
		*n += 1;
	void *p = malloc(strlen(s) + 1); /* the callback may allocate (redis's does) */
	free(p);
	if (*n == 1) { /* and call the library back: no lock is held */
		size_t inner = 100;
		malloc_stats_print(collect, &inner, NULL);
		*n += inner == 101 ? 10 : 1000;
	}
}

/* Threads of this process, from /proc/self/task. */
static int threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f, "status");
	static char line[256];
	int n = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

static void t_background(void)
{
	bool on = true, got = false;
	size_t len = sizeof got;
	CHECK(mallctl("background_thread", &got, &len, NULL, 0) == 0 && !got && threads() == 1,
	      "off at start");
	CHECK(mallctl("background_thread", NULL, NULL, &on, sizeof on) == 0, "write true");
	CHECK(mallctl("background_thread", &got, &len, NULL, 0) == 0 && got, "reads true");
	CHECK(threads() == 2, "no thread started (%d threads)", threads());
	CHECK(mallctl("opt.background_thread", &got, &len, NULL, 0) == 0 && got, "opt");
	on = false;
	CHECK(mallctl("background_thread", NULL, NULL, &on, sizeof on) == EFAULT,
	      "the thread cannot be stopped: EFAULT");
	printf("background_thread: a write of true starts the thread\n");
}

static void t_stats_print(void)
{
	size_t found = 0;
	malloc_stats_print(collect, &found, NULL);
	CHECK(found == 11, "malloc_stats_print: %zu (11: the totals once, and a nested call's once)",
	      found);
	printf("malloc_stats_print reaches its callback\n");
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{"mallocx", t_mallocx},       {"rallocx", t_rallocx}, {"sdallocx_bad", t_sdallocx_bad},
		{"arenas", t_arenas},         {"errors", t_errors},   {"stats", t_stats},
		{"stats_print", t_stats_print}, {"resident", t_resident}, {"background", t_background},
		{"defrag_jemalloc", t_defrag_jemalloc}, {"defrag_hint", t_defrag_hint},
	};
	return run_cases(argc, argv, cases, sizeof cases / sizeof *cases, 60);
}
