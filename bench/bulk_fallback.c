/* bulk_fallback.c: the fallback loop of bench/bulk alone (malloc n objects, free them, per
 * object, for every bulk size), in a program that does not link slubmalloc, so that bench/bulk
 * can run it under LD_PRELOAD of a peer allocator (mimalloc, jemalloc) in the same run.
 * Usage: bulk_fallback SIZE OBJECTS REPS [PLACE]
 * PLACE (0..3, default 0): which of the loop's placements runs (bulk_common.h: BULK_PLACED).
 * Prints `ALLOCATOR <file that malloc resolves to>`, then for each bulk size
 * `FALLBACK n=N cycles=C ns=T` (median of REPS runs of about OBJECTS objects).
 * Built four ways (bench/meson.build): both calls through the GOT (-fno-plt, the project's
 * default), both through the PLT, and, with gcc (its noplt attribute), one of each:
 * -DGOT_MALLOC (malloc through the GOT, free through the PLT) or -DGOT_FREE; bench/call_forms.sh
 * runs them all. */
#include <dlfcn.h>

#include "bulk_common.h"

#if defined(GOT_MALLOC)
void *malloc(size_t size) __attribute__((noplt));
#elif defined(GOT_FREE)
void free(void *p) __attribute__((noplt));
#endif

static size_t arg_num(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || !v) {
		fprintf(stderr, "bulk_fallback: bad number '%s'\n", s);
		exit(1);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s SIZE OBJECTS REPS [PLACE]\n", argv[0]);
		return 1;
	}
	size_t size = arg_num(argv[1]), objects = arg_num(argv[2]);
	unsigned reps = (unsigned)arg_num(argv[3]), place = 0;
	if (argc == 5) {
		char *end;
		unsigned long v = strtoul(argv[4], &end, 10);
		if (!*argv[4] || *end || v >= BULK_PLACES) {
			fprintf(stderr, "bulk_fallback: PLACE must be 0..%d\n", BULK_PLACES - 1);
			return 1;
		}
		place = (unsigned)v;
	}
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	printf("ALLOCATOR %s\n", sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "?");
	struct cost c[BULK_NN];
	fallback_all(size, objects, reps, place, c);
	for (size_t j = 0; j < BULK_NN; j++)
		printf("FALLBACK n=%zu cycles=%.3f ns=%.4f\n", bulk_ns_list[j], c[j].cycles, c[j].ns);
	return 0;
}
