/* options.c: the run-time options, read once by sm_init() from the environment.
 * It walks environ: no getenv, no allocation.
 * Their defaults and meanings are in one table, which the README, slubmalloc(3) and
 * SLUBMALLOC_VERBOSE=1 all describe.
 * Invariants: sm_opt holds the defaults until sm_options_read() runs, and never changes after.
 * A bad value leaves the default in place and writes one warning line to stderr. */
#include <string.h>

#include "config.h"
#include "engine.h"
#include "options.h"
#include "report.h"

struct sm_options sm_opt = {
	.purge_delay_ns = PURGE_DELAY_MS_DEFAULT * 1000000ULL,
	.min_partial = EMPTY_RESERVE,
	.avx2 = 1,
	.prof_sample = PROF_SAMPLE_DEFAULT,
};

extern char **environ;

static const char *env(const char *name)
{
	size_t n = strlen(name);
	if (!environ)
		return NULL;
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static void warn(const char *name, const char *value, const char *why)
{
	sm_write(2, "slubmalloc: warning: ");
	sm_write(2, name);
	sm_write(2, "=\"");
	sm_write(2, value);
	sm_write(2, "\": ");
	sm_write(2, why);
	sm_write(2, "\n");
}

/* A decimal number in [0, max]; false (and *out untouched) for anything else. */
static bool parse_num(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	if (!*v)
		return false;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || x > (max - (uint64_t)(*v - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*v - '0');
	}
	*out = x;
	return true;
}

static void read_bool(const char *name, int *out, const char *why)
{
	const char *v = env(name);
	if (!v)
		return;
	if (!strcmp(v, "0") || !strcmp(v, "1"))
		*out = *v == '1';
	else
		warn(name, v, why);
}

static void read_num(const char *name, uint64_t max, uint64_t *out, const char *why)
{
	const char *v = env(name);
	if (v && !parse_num(v, max, out))
		warn(name, v, why);
}

/* "[flags][,cache,...]": flags from DBG_LETTERS ("" or "1": all of them, "-": none). */
static void read_debug(void)
{
	const char *v = env("SLUBMALLOC_DEBUG");
	if (!v)
		return;
	const char *comma = strchr(v, ',');
	size_t nflags = comma ? (size_t)(comma - v) : strlen(v);
	unsigned flags = 0;
	if (nflags == 0 || (nflags == 1 && v[0] == '1')) {
		flags = DBG_ALL;
	} else if (!(nflags == 1 && v[0] == '-')) {
		for (size_t i = 0; i < nflags; i++) {
			const char *l = v[i] ? strchr(DBG_LETTERS, v[i] & ~0x20) : NULL; /* either case */
			if (!l) {
				warn("SLUBMALLOC_DEBUG", v, "flags are letters of " DBG_LETTERS
				     ", then optional ,cache names; debugging stays off");
				return;
			}
			flags |= 1u << (l - DBG_LETTERS);
		}
	}
	const char *list = comma ? comma + 1 : "";
	if (strlen(list) >= sizeof sm_opt.debug_caches) {
		warn("SLUBMALLOC_DEBUG", v, "cache list too long; debugging stays off");
		return;
	}
	strcpy(sm_opt.debug_caches, list);
	sm_opt.debug = flags;
}

void sm_options_read(void)
{
	read_bool("SLUBMALLOC_STATS", &sm_opt.stats, "not 0 or 1; statistics stay off");
	const char *f = env("SLUBMALLOC_STATS_FILE");
	if (f) {
		if (!*f || strlen(f) >= sizeof sm_opt.stats_file)
			warn("SLUBMALLOC_STATS_FILE", f, "empty or too long; statistics go to stderr");
		else
			strcpy(sm_opt.stats_file, f);
	}
	read_debug();
	uint64_t ms = sm_opt.purge_delay_ns / 1000000ULL;
	read_num("SLUBMALLOC_PURGE_DELAY_MS", 3600000, &ms,
		 "not a number of milliseconds from 0 to 3600000; using the default 1000");
	sm_opt.purge_delay_ns = ms * 1000000ULL;
	read_bool("SLUBMALLOC_BACKGROUND", &sm_opt.background,
		  "not 0 or 1; no background thread");
	uint64_t mp = sm_opt.min_partial;
	read_num("SLUBMALLOC_MIN_PARTIAL", 1000, &mp,
		 "not a number from 0 to 1000; using the default 2");
	sm_opt.min_partial = (unsigned)mp;
	uint64_t kf = 0;
	read_num("SLUBMALLOC_KFENCE", 1000000000, &kf,
		 "not a number from 0 to 1000000000; sampling stays off");
	sm_opt.kfence = (uint32_t)kf;
	read_bool("SLUBMALLOC_PROF", &sm_opt.prof, "not 0 or 1; the profiler stays off");
	read_num("SLUBMALLOC_PROF_SAMPLE", 1ULL << 40, &sm_opt.prof_sample,
		 "not a number of bytes up to 2^40; using the default 524288");
	if (!sm_opt.prof_sample)
		sm_opt.prof_sample = 1;
	read_num("SLUBMALLOC_PROF_INTERVAL", 1ULL << 62, &sm_opt.prof_interval,
		 "not a number of bytes; no dumps by interval");
	const char *pf = env("SLUBMALLOC_PROF_FILE");
	if (pf) {
		if (!*pf || strlen(pf) + 24 >= sizeof sm_opt.prof_file)
			warn("SLUBMALLOC_PROF_FILE", pf, "empty or too long; using slubmalloc.<pid>.heap");
		else
			strcpy(sm_opt.prof_file, pf);
	}
	read_bool("SLUBMALLOC_THP", &sm_opt.thp, "not 0 or 1; huge pages stay off");
	read_bool("SLUBMALLOC_AVX2", &sm_opt.avx2, "not 0 or 1; AVX2 is used where the CPU has it");
	read_bool("SLUBMALLOC_VERBOSE", &sm_opt.verbose, "not 0 or 1; verbose stays off");
}

/* Is cache `name` in the SLUBMALLOC_DEBUG list (an empty list names every cache)? */
bool sm_options_debugs(const char *name)
{
	const char *l = sm_opt.debug_caches;
	if (!*l)
		return true;
	size_t n = strlen(name);
	while (*l) {
		const char *end = strchr(l, ',');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		if (len == n && !strncmp(l, name, n))
			return true;
		l += len + (end != NULL);
	}
	return false;
}

static void show(const char *name, const char *value, const char *meaning)
{
	sm_write(2, "slubmalloc: ");
	sm_write(2, name);
	sm_write(2, "=");
	sm_write(2, value);
	sm_write(2, "  (");
	sm_write(2, meaning);
	sm_write(2, ")\n");
}

static void show_num(const char *name, uint64_t v, const char *meaning)
{
	sm_write(2, "slubmalloc: ");
	sm_write(2, name);
	sm_write(2, "=");
	sm_write_num(2, v, 10);
	sm_write(2, "  (");
	sm_write(2, meaning);
	sm_write(2, ")\n");
}

/* SLUBMALLOC_VERBOSE=1: the options in effect, one per line. */
void sm_options_print(void)
{
	char dbg[16 + sizeof sm_opt.debug_caches];
	int k = 0;
	for (int i = 0; DBG_LETTERS[i]; i++)
		if (sm_opt.debug & (1u << i))
			dbg[k++] = DBG_LETTERS[i];
	if (!k)
		dbg[k++] = '-';
	dbg[k] = 0;
	if (sm_opt.debug && sm_opt.debug_caches[0]) {
		dbg[k++] = ',';
		strcpy(dbg + k, sm_opt.debug_caches);
	}
	sm_write(2, "slubmalloc: options in effect:\n");
	show_num("SLUBMALLOC_STATS", (uint64_t)sm_opt.stats, "1: print statistics at exit; default 0");
	show("SLUBMALLOC_STATS_FILE", sm_opt.stats_file[0] ? sm_opt.stats_file : "(stderr)",
	     "where SLUBMALLOC_STATS=1 writes; default stderr");
	show("SLUBMALLOC_DEBUG", dbg, "F checks, Z red zones, P poison, U call sites, Q quarantine, "
	     "I zeroing, M new/delete mismatch [,caches]; default - (off)");
	show_num("SLUBMALLOC_PURGE_DELAY_MS", sm_opt.purge_delay_ns / 1000000ULL,
		 "ms before empty slab pages and freed large blocks go back to the OS; default 1000");
	show_num("SLUBMALLOC_BACKGROUND", (uint64_t)sm_opt.background,
		 "1: a thread gives that memory back on time, also while the program is idle; "
		 "default 0");
	show_num("SLUBMALLOC_MIN_PARTIAL", sm_opt.min_partial,
		 "empty slabs each cache keeps; default 2");
	show_num("SLUBMALLOC_KFENCE", sm_opt.kfence,
		 "N: one in N allocations, 10 ms apart, between guard pages; "
		 "default 0 (off)");
	show_num("SLUBMALLOC_PROF", (uint64_t)sm_opt.prof,
		 "1: the sampling heap profiler, gperftools' format at exit; default 0");
	show_num("SLUBMALLOC_PROF_SAMPLE", sm_opt.prof_sample,
		 "mean bytes allocated between samples; default 524288");
	show_num("SLUBMALLOC_PROF_INTERVAL", sm_opt.prof_interval,
		 "a profile per this many bytes allocated; default 0 (none)");
	show("SLUBMALLOC_PROF_FILE", sm_opt.prof_file[0] ? sm_opt.prof_file : "slubmalloc.<pid>.heap",
	     "where the profile goes at exit");
	show_num("SLUBMALLOC_THP", (uint64_t)sm_opt.thp,
		 "1: transparent huge pages for slab regions; default 0");
	show_num("SLUBMALLOC_AVX2", (uint64_t)(sm_vec_min != SIZE_MAX),
		 "1: bulk calls check and copy four pointers at a time (if the CPU has AVX2); "
		 "default 1");
	show_num("SLUBMALLOC_VERBOSE", (uint64_t)sm_opt.verbose, "1: print these lines; default 0");
}
