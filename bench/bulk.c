/* bulk.c: the bulk-allocation benchmark, after the kernel's slab_bulk_test01 (Brouer 2015,
 * seeds 000/001): for bulk sizes 1..250, per object (one allocation plus one free), TSC cycles
 * and ns of the fallback (a loop of malloc/free over the same n objects) against
 * malloc_bulk/free_bulk, and of slub_cache_alloc/slub_cache_free against
 * slub_cache_alloc_bulk/slub_cache_free_bulk, with the improvement in percent, in the seed's
 * table format. Peer columns: the same fallback loop (bench/bulk_fallback, next to this
 * program) run under LD_PRELOAD of mimalloc and jemalloc, as child processes of this run, and
 * of slubmalloc itself: the comparison with mimalloc's loop is made between those helper
 * processes (the same program, the same way of loading the allocator, a new process per pass
 * for each), not with this process's loop, which runs between the bulk and typed-cache loops
 * and in one process only (one process's figures can sit 10-20% off another's: the placement
 * of its arrays). The helper is built like this project, with -fno-plt (malloc called through
 * the GOT); bench/bulk_fallback_plt, the same source built with PLT calls (as Debian builds
 * programs), runs under mimalloc and slubmalloc too, and a reference line compares those two:
 * the call form moves both allocators' figures, and not alike.
 * Every timed loop runs in BULK_PLACES placements of its code (bulk_common.h: a loop this short
 * moves by up to 10% with where it sits in its cache line, and not alike for every allocator).
 * The header gives the CPU model and the TSC frequency (rdtsc over ~100 ms of
 * CLOCK_MONOTONIC); the closing lines check the targets, with the spread of each one's
 * closest figure (a ratio whose runs fall on both sides of 100% is a tie within the run's
 * noise); RESULT lines follow. The bulk targets read the overall medians (the columns they
 * compare run interleaved in this process, each run's four in the same placement); the
 * comparison of the helpers reads, per size, the median of paired ratios (see compare_loops).
 * Pinned to one CPU. PASSES passes, each: REPS runs of every column in this process (about
 * OBJECTS objects each; run r in placement r mod BULK_PLACES, counted over the passes), then
 * the peers' processes (and a control: the same helper under slubmalloc), once per placement,
 * mimalloc's and slubmalloc's back to back, in alternating order; every figure in the tables
 * is the median over all its runs, so a busy spell of the machine hits every column alike.
 * Usage: bulk [-s SIZE] [-o OBJECTS] [-r REPS] [-p PASSES] [-P]   (-P: no peer runs)
 * Environment: BULK_MIMALLOC, BULK_JEMALLOC: the peer libraries (defaults: Debian's). */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bulk_common.h"
#include "slubmalloc.h"

extern char **environ;
#define NPEER 5 /* helper runs per pass: mimalloc, jemalloc, slubmalloc; then, PLT-built,
		 * mimalloc and slubmalloc */

#define MAX_REPS 64
#define MAX_PASSES 16
#define MAX_PAIRS (MAX_PASSES * BULK_PLACES) /* a helper's runs: one per pass and placement */

static inline __attribute__((always_inline)) struct cost bulk_body(size_t size, size_t n,
								   size_t loops)
{
	void *p[BULK_MAX_N];
	uint64_t t0 = now_ns(), c0 = read_tsc();
	for (size_t l = 0; l < loops; l++) {
		if (malloc_bulk(size, n, p) != n)
			bulk_die("malloc_bulk", size);
		escape(p);
		free_bulk(n, p);
	}
	uint64_t c1 = read_tsc(), t1 = now_ns();
	double k = (double)loops * (double)n;
	return (struct cost){(double)(c1 - c0) / k, (double)(t1 - t0) / k};
}
BULK_PLACED(struct cost, bulk_at, (size_t size, size_t n, size_t loops), bulk_body,
	    (size, n, loops))

static inline __attribute__((always_inline)) struct cost
cache_fallback_body(struct slub_cache *c, size_t n, size_t loops)
{
	void *p[BULK_MAX_N];
	uint64_t t0 = now_ns(), c0 = read_tsc();
	for (size_t l = 0; l < loops; l++) {
		for (size_t i = 0; i < n; i++)
			if (!(p[i] = slub_cache_alloc(c)))
				bulk_die("slub_cache_alloc", n);
		escape(p);
		for (size_t i = 0; i < n; i++)
			slub_cache_free(c, p[i]);
	}
	uint64_t c1 = read_tsc(), t1 = now_ns();
	double k = (double)loops * (double)n;
	return (struct cost){(double)(c1 - c0) / k, (double)(t1 - t0) / k};
}
BULK_PLACED(struct cost, cache_fallback_at, (struct slub_cache *c, size_t n, size_t loops),
	    cache_fallback_body, (c, n, loops))

static inline __attribute__((always_inline)) struct cost
cache_bulk_body(struct slub_cache *c, size_t n, size_t loops)
{
	void *p[BULK_MAX_N];
	uint64_t t0 = now_ns(), c0 = read_tsc();
	for (size_t l = 0; l < loops; l++) {
		if (slub_cache_alloc_bulk(c, n, p) != n)
			bulk_die("slub_cache_alloc_bulk", n);
		escape(p);
		slub_cache_free_bulk(c, n, p);
	}
	uint64_t c1 = read_tsc(), t1 = now_ns();
	double k = (double)loops * (double)n;
	return (struct cost){(double)(c1 - c0) / k, (double)(t1 - t0) / k};
}
BULK_PLACED(struct cost, cache_bulk_at, (struct slub_cache *c, size_t n, size_t loops),
	    cache_bulk_body, (c, n, loops))

/* ---- the machine ---- */
static void cpu_model(char *out, size_t cap, int *constant_tsc)
{
	snprintf(out, cap, "unknown");
	*constant_tsc = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[4096];
	int got_model = 0, got_flags = 0;
	while ((!got_model || !got_flags) && fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *v = colon + 1 + (colon[1] == ' ');
		v[strcspn(v, "\n")] = 0;
		if (!got_model && !strncmp(line, "model name", 10)) {
			snprintf(out, cap, "%s", v);
			got_model = 1;
		} else if (!got_flags && !strncmp(line, "flags", 5)) {
			*constant_tsc = (strstr(v, "constant_tsc") ? 1 : 0) + (strstr(v, "nonstop_tsc") ? 2 : 0);
			got_flags = 1;
		}
	}
	fclose(f);
}

/* TSC ticks per ns, from rdtsc over about 100 ms of CLOCK_MONOTONIC. */
static double tsc_ghz(void)
{
	uint64_t t0 = now_ns(), c0 = read_tsc(), t1;
	while ((t1 = now_ns()) - t0 < 100000000ULL)
		;
	uint64_t c1 = read_tsc();
	return (double)(c1 - c0) / (double)(t1 - t0);
}

static const char *where_is(const char *sym_name)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, sym_name);
	return sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "?";
}

/* ---- the peers: bench/bulk_fallback under LD_PRELOAD, as a child process ---- */
struct peer {
	const char *name, *lib, *helper; /* helper: bulk_fallback or bulk_fallback_plt */
	char allocator[512];
	int ok;
	struct cost c[BULK_NN];
};

static int run_peer(struct peer *pr, const char *helper, size_t size, size_t objects,
		    unsigned reps, unsigned place)
{
	if (access(pr->lib, R_OK) != 0) {
		snprintf(pr->allocator, sizeof pr->allocator, "%s: not installed", pr->lib);
		return 0;
	}
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **envp = malloc((ne + 2) * sizeof *envp);
	char *preload = malloc(strlen(pr->lib) + 12);
	if (!envp || !preload)
		return 0;
	sprintf(preload, "LD_PRELOAD=%s", pr->lib);
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			envp[k++] = environ[i];
	envp[k++] = preload;
	envp[k] = NULL;
	char a_size[32], a_obj[32], a_reps[32], a_place[32];
	snprintf(a_size, sizeof a_size, "%zu", size);
	snprintf(a_obj, sizeof a_obj, "%zu", objects);
	snprintf(a_reps, sizeof a_reps, "%u", reps);
	snprintf(a_place, sizeof a_place, "%u", place);
	char *argv[] = {(char *)helper, a_size, a_obj, a_reps, a_place, NULL};
	int pfd[2];
	if (pipe(pfd) != 0)
		return 0;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	posix_spawn_file_actions_addclose(&fa, pfd[1]);
	pid_t pid;
	int err = posix_spawn(&pid, helper, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	free(envp);
	free(preload);
	if (err) {
		close(pfd[0]);
		snprintf(pr->allocator, sizeof pr->allocator, "%.400s: cannot run: %.80s", helper,
			 strerror(err));
		return 0;
	}
	FILE *f = fdopen(pfd[0], "r");
	char line[1024];
	size_t got = 0;
	while (f && fgets(line, sizeof line, f)) {
		size_t n;
		double cyc, ns;
		if (!strncmp(line, "ALLOCATOR ", 10)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(pr->allocator, sizeof pr->allocator, "%.500s", line + 10);
		} else if (sscanf(line, "FALLBACK n=%zu cycles=%lf ns=%lf", &n, &cyc, &ns) == 3) {
			for (size_t j = 0; j < BULK_NN; j++)
				if (bulk_ns_list[j] == n) {
					pr->c[j] = (struct cost){cyc, ns};
					got++;
				}
		}
	}
	if (f)
		fclose(f);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return got == BULK_NN && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The helper program `name`, next to this one. */
static void helper_path(char *out, size_t cap, const char *name)
{
	ssize_t len = readlink("/proc/self/exe", out, cap - 32);
	if (len <= 0) {
		snprintf(out, cap, "./%s", name);
		return;
	}
	out[len] = 0;
	char *slash = strrchr(out, '/');
	strcpy(slash ? slash + 1 : out, name);
}

/* ---- output ---- */
static double improved(struct cost fb, struct cost bulk)
{
	return 100.0 * (fb.cycles - bulk.cycles) / fb.cycles;
}

static void print_pair(size_t n, struct cost fb, struct cost bulk)
{
	printf("%4zu - %3.0f cycles(tsc) %6.3f ns  - %3.0f cycles(tsc) %6.3f ns   improved %4.1f%%", n,
	       fb.cycles, fb.ns, bulk.cycles, bulk.ns, improved(fb, bulk));
}

/* The spread of one comparison over groups of runs (the passes of this process's columns, or
 * the paired runs of two helpers): in each group, the median of a's samples over the median of
 * b's (each group holds per samples of each); the lowest and highest of those ratios, and in
 * how many groups a was the slower. A figure whose groups fall on both sides of 1 is a tie
 * within this run's noise. */
struct spread {
	double lo, hi;
	unsigned above, passes;
	const char *unit; /* what a group is */
};

static struct spread pass_spread(const double *a, const double *b, unsigned passes, unsigned per,
				 const char *unit)
{
	struct spread sp = {0, 0, 0, passes, unit};
	for (unsigned p = 0; p < passes; p++) {
		double x[MAX_REPS], y[MAX_REPS];
		memcpy(x, a + p * per, per * sizeof *x);
		memcpy(y, b + p * per, per * sizeof *y);
		double r = median(x, per) / median(y, per);
		if (!p || r < sp.lo)
			sp.lo = r;
		if (!p || r > sp.hi)
			sp.hi = r;
		sp.above += r > 1.0;
	}
	return sp;
}

static void print_spread(struct spread sp)
{
	printf("; its %s: %.1f-%.1f%%, slower in %u of %u", sp.unit, 100 * sp.lo, 100 * sp.hi,
	       sp.above, sp.passes);
}

/* The targets for one pair of columns (fb_s, bulk_s: [size][0] holds every run's cycles,
 * pass after pass, reps each); returns 1 when both are met. */
static int check_targets(const char *what, const struct cost *fb, const struct cost *bulk,
			 double (*fb_s)[2][MAX_REPS * MAX_PASSES],
			 double (*bulk_s)[2][MAX_REPS * MAX_PASSES], unsigned passes, unsigned reps)
{
	double worst = 0;
	size_t worst_n = 0, slower = 0, slowest_n = 0, slowest_j = 0;
	double slowest = 0;
	for (size_t j = 0; j < BULK_NN; j++) {
		double ratio = bulk[j].cycles / fb[j].cycles;
		size_t n = bulk_ns_list[j];
		if (n >= 8 && n <= 64 && ratio > worst)
			worst = ratio, worst_n = n;
		if (ratio > slowest)
			slowest = ratio, slowest_n = n, slowest_j = j;
		if (ratio > 1.0)
			slower++;
	}
	printf("  %s: bulk of 8..64 costs at most %.1f%% of the fallback (at %zu): %s\n", what,
	       100 * worst, worst_n, worst <= 0.40 ? "met (<= 40%)" : "MISSED (> 40%)");
	printf("  %s: sizes slower than the fallback: %zu (highest ratio %.1f%% at %zu", what,
	       slower, 100 * slowest, slowest_n);
	print_spread(pass_spread(bulk_s[slowest_j][0], fb_s[slowest_j][0], passes, reps, "passes"));
	printf("): %s\n", slower ? "MISSED" : "met");
	return worst <= 0.40 && !slower;
}

/* Prints how ours compares with peer, size by size (no newline); returns at how many sizes
 * ours is slower. With the helpers' runs (ours_s, peer_s: [size][0] holds the cycles of each
 * run, one per pass and placement, the two of one index run back to back in the same
 * placement) a size's ratio is the median of the paired ratios: pairing cancels the machine's
 * drift between passes, which the overall medians of each (also printed, for the worst size)
 * keep, and every placement counts alike. Without them (this process against a helper) it is
 * the ratio of the overall medians. */
static size_t compare_loops(const char *what, const struct cost *ours, const struct cost *peer,
			    double (*ours_s)[2][MAX_PAIRS], double (*peer_s)[2][MAX_PAIRS],
			    unsigned passes)
{
	size_t slower = 0, slower5 = 0, worst_n = 0, worst_j = 0;
	double worst = 0, sum = 0;
	for (size_t j = 0; j < BULK_NN; j++) {
		double ratio = ours[j].cycles / peer[j].cycles;
		if (ours_s && peer_s) {
			double r[MAX_PAIRS];
			for (unsigned p = 0; p < passes; p++)
				r[p] = ours_s[j][0][p] / peer_s[j][0][p];
			ratio = median(r, passes);
		}
		sum += ratio;
		if (ratio > 1.0)
			slower++;
		if (ratio > 1.05)
			slower5++;
		if (ratio > worst)
			worst = ratio, worst_n = bulk_ns_list[j], worst_j = j;
	}
	printf("  %s: slower at %zu of %zu sizes, by more than 5%% at %zu (worst %+.1f%% at %zu",
	       what, slower, BULK_NN, slower5, 100 * (worst - 1), worst_n);
	if (ours_s && peer_s) {
		print_spread(
		    pass_spread(ours_s[worst_j][0], peer_s[worst_j][0], passes, 1, "paired runs"));
		printf("; overall medians there %+.1f%%",
		       100 * (ours[worst_j].cycles / peer[worst_j].cycles - 1));
	}
	printf("; mean %+.1f%%)", 100 * (sum / (double)BULK_NN - 1));
	return slower;
}

static size_t opt_num(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || !v) {
		fprintf(stderr, "bulk: bad %s '%s'\n", what, s);
		exit(1);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	size_t size = 64, objects = (size_t)1 << 21;
	unsigned reps = 5, passes = 3;
	int peers = 1, opt;
	while ((opt = getopt(argc, argv, "s:o:r:p:P")) != -1) {
		switch (opt) {
		case 's': size = opt_num(optarg, "size"); break;
		case 'o': objects = opt_num(optarg, "object count"); break;
		case 'r': reps = (unsigned)opt_num(optarg, "repetitions"); break;
		case 'p': passes = (unsigned)opt_num(optarg, "passes"); break;
		case 'P': peers = 0; break;
		default:
			fprintf(stderr, "usage: %s [-s SIZE] [-o OBJECTS] [-r REPS] [-p PASSES] [-P]\n",
				argv[0]);
			return 1;
		}
	}
	if (reps > MAX_REPS)
		reps = MAX_REPS;
	if (passes > MAX_PASSES)
		passes = MAX_PASSES;
	if (size > 32768) {
		fprintf(stderr, "bulk: SIZE must be at most 32768 (a typed cache's largest object)\n");
		return 1;
	}

	int cpu = pin_last_cpu();
	char model[256];
	int ctsc;
	cpu_model(model, sizeof model, &ctsc);
	double ghz = tsc_ghz();
	printf("bench/bulk: bulk allocation against a loop of single calls (after slab_bulk_test01)\n");
	printf("CPU: %s (%ld online", model, sysconf(_SC_NPROCESSORS_ONLN));
	if (cpu >= 0)
		printf(", pinned to CPU %d", cpu);
	printf(")\nTSC: %.3f MHz (rdtsc over 100 ms of CLOCK_MONOTONIC; constant_tsc %s, "
	       "nonstop_tsc %s)\n", ghz * 1000, ctsc & 1 ? "yes" : "no", ctsc & 2 ? "yes" : "no");
	printf("Object size %zu B; per object = one allocation + one free; median of %u passes x %u "
	       "runs of ~%zu objects\n(each pass: this process, then the peers' processes, once per "
	       "placement; %d placements of every timed loop)\n", size, passes, reps, objects,
	       BULK_PLACES);
	printf("malloc resolves to %s\n", where_is("malloc"));
	fflush(stdout);

	struct slub_cache *cache = slub_cache_create("bench-bulk", size, 0, 0, NULL);
	if (!cache) {
		fprintf(stderr, "bulk: slub_cache_create(%zu) failed\n", size);
		return 1;
	}
	/* the peers, and the control: the helper under slubmalloc itself, which should match the
	 * in-process fallback (if it does not, the machine was busy while one of them ran); then
	 * mimalloc and slubmalloc under the helper built with PLT calls */
	const char *mi_lib = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", *ours = where_is("malloc");
	const char *e = getenv("BULK_MIMALLOC");
	if (e && *e)
		mi_lib = e;
	struct peer pr[NPEER] = {
		{"mimalloc", mi_lib, "bulk_fallback", "", 0, {{0, 0}}},
		{"jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "bulk_fallback", "", 0, {{0, 0}}},
		{"slubmalloc", ours, "bulk_fallback", "", 0, {{0, 0}}},
		{"mimalloc", mi_lib, "bulk_fallback_plt", "", 0, {{0, 0}}},
		{"slubmalloc", ours, "bulk_fallback_plt", "", 0, {{0, 0}}},
	};
	e = getenv("BULK_JEMALLOC");
	if (e && *e)
		pr[1].lib = e;
	char helper[NPEER][4096];
	for (int i = 0; i < NPEER; i++)
		helper_path(helper[i], sizeof helper[i], pr[i].helper);
	static double ins[4][BULK_NN][2][MAX_REPS * MAX_PASSES], out[NPEER][BULK_NN][2][MAX_PAIRS];
	unsigned peer_runs[NPEER] = {0}, pairs = passes * BULK_PLACES;
	for (unsigned pass = 0; pass < passes; pass++) {
		for (size_t j = 0; j < BULK_NN; j++) {
			size_t n = bulk_ns_list[j], loops = bulk_loops(objects, n);
			unsigned w = pass * reps % BULK_PLACES; /* the first run's placement */
			fallback_at[w](size, n, loops / 8 + 1); /* warm-up: bins, slabs, predictors */
			bulk_at[w](size, n, loops / 8 + 1);
			cache_fallback_at[w](cache, n, loops / 8 + 1);
			cache_bulk_at[w](cache, n, loops / 8 + 1);
			for (unsigned r = 0; r < reps; r++) { /* interleaved: drift hits all alike */
				unsigned pl = (pass * reps + r) % BULK_PLACES; /* all placements */
				struct cost c[4] = {fallback_at[pl](size, n, loops),
						    bulk_at[pl](size, n, loops),
						    cache_fallback_at[pl](cache, n, loops),
						    cache_bulk_at[pl](cache, n, loops)};
				for (int k = 0; k < 4; k++) {
					ins[k][j][0][pass * reps + r] = c[k].cycles;
					ins[k][j][1][pass * reps + r] = c[k].ns;
				}
			}
		}
		/* every placement of the helper's loop; mimalloc's and slubmalloc's back to back,
		 * first one then the other */
		static const int order[2][NPEER] = {{0, 2, 1, 3, 4}, {2, 0, 1, 4, 3}};
		for (unsigned pl = 0; peers && pl < BULK_PLACES; pl++) {
			for (int q = 0; q < NPEER; q++) {
				int i = order[(pass + pl) & 1][q];
				if (!run_peer(&pr[i], helper[i], size, objects, reps, pl))
					continue;
				for (size_t j = 0; j < BULK_NN; j++) {
					out[i][j][0][peer_runs[i]] = pr[i].c[j].cycles;
					out[i][j][1][peer_runs[i]] = pr[i].c[j].ns;
				}
				peer_runs[i]++;
			}
		}
	}
	slub_cache_destroy(cache);
	struct cost fb[BULK_NN], bk[BULK_NN], cfb[BULK_NN], cbk[BULK_NN];
	struct cost *dst[4] = {fb, bk, cfb, cbk};
	for (int k = 0; k < 4; k++)
		for (size_t j = 0; j < BULK_NN; j++)
			dst[k][j] = (struct cost){median(ins[k][j][0], reps * passes),
						  median(ins[k][j][1], reps * passes)};
	for (int i = 0; i < NPEER; i++) {
		pr[i].ok = peers && peer_runs[i] == pairs;
		for (size_t j = 0; pr[i].ok && j < BULK_NN; j++)
			pr[i].c[j] = (struct cost){median(out[i][j][0], pairs),
						   median(out[i][j][1], pairs)};
		if (!peers)
			snprintf(pr[i].allocator, sizeof pr[i].allocator, "not run (-P)");
		else if (!pr[i].ok && !pr[i].allocator[0])
			snprintf(pr[i].allocator, sizeof pr[i].allocator, "%.480s: run failed",
				 helper[i]);
		if (i < 2)
			printf("peer %s: %s%s\n", pr[i].name, pr[i].allocator,
			       pr[i].ok && !strstr(pr[i].allocator, pr[i].name) ? " (WARNING: not the peer)"
										 : "");
	}
	struct peer ctl = pr[2];

	printf("\nmalloc_bulk/free_bulk (fallback: malloc/free loop); right: the same fallback loop "
	       "in the helper, under each peer and under slubmalloc\n");
	printf("Bulk - Fallback bulking            - malloc_bulk/free_bulk                    "
	       "| mimalloc fallback        | jemalloc fallback        | slubmalloc fallback\n");
	for (size_t j = 0; j < BULK_NN; j++) {
		print_pair(bulk_ns_list[j], fb[j], bk[j]);
		for (int i = 0; i < 3; i++) {
			if (pr[i].ok)
				printf("  | %3.0f cycles(tsc) %6.3f ns", pr[i].c[j].cycles, pr[i].c[j].ns);
			else
				printf("  | %-23s", "n/a");
		}
		printf("\n");
	}
	printf("\nslub_cache_alloc_bulk/slub_cache_free_bulk (fallback: slub_cache_alloc/"
	       "slub_cache_free loop)\n");
	printf("Bulk - Fallback bulking            - slub_cache bulk\n");
	for (size_t j = 0; j < BULK_NN; j++) {
		print_pair(bulk_ns_list[j], cfb[j], cbk[j]);
		printf("\n");
	}

	printf("\nTargets:\n");
	check_targets("malloc_bulk", fb, bk, ins[0], ins[1], passes, reps);
	check_targets("slub_cache bulk", cfb, cbk, ins[2], ins[3], passes, reps);
	if (pr[0].ok && ctl.ok) {
		size_t slower = compare_loops("fallback loop vs mimalloc's (both in the helper)",
					      ctl.c, pr[0].c, out[2], out[0], pairs);
		printf(": %s\n", slower ? "MISSED" : "met");
		compare_loops("  (for reference: this process's loop vs mimalloc's helper", fb,
			      pr[0].c, NULL, NULL, 0);
		printf(")\n");
		if (pr[3].ok && pr[4].ok) {
			compare_loops("  (for reference: the helper built with PLT calls, Debian's "
				      "default, ours vs mimalloc's", pr[4].c, pr[3].c, out[4],
				      out[3], pairs);
			printf(")\n");
		}
	} else {
		printf("  fallback loop vs mimalloc's: not measured (%s)\n",
		       pr[0].ok ? ctl.allocator : pr[0].allocator);
	}

	printf("\n");
	for (size_t j = 0; j < BULK_NN; j++) {
		size_t n = bulk_ns_list[j];
		printf("RESULT name=bulk size=%zu n=%zu fallback_cycles=%.2f fallback_ns=%.3f "
		       "bulk_cycles=%.2f bulk_ns=%.3f cache_fallback_cycles=%.2f cache_fallback_ns=%.3f "
		       "cache_bulk_cycles=%.2f cache_bulk_ns=%.3f", size, n, fb[j].cycles, fb[j].ns,
		       bk[j].cycles, bk[j].ns, cfb[j].cycles, cfb[j].ns, cbk[j].cycles, cbk[j].ns);
		static const char *const tag[NPEER] = {"", "", "_helper", "_plt", "_plt_helper"};
		for (int i = 0; i < NPEER; i++) {
			if (pr[i].ok)
				printf(" %s%s_fallback_cycles=%.2f %s%s_fallback_ns=%.3f", pr[i].name,
				       tag[i], pr[i].c[j].cycles, pr[i].name, tag[i], pr[i].c[j].ns);
		}
		printf("\n");
	}
	return 0;
}
