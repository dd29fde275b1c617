/* dlopen_plugin.c: a plugin linked with -lslubmalloc, as a Python extension or a program's
 * module would be; dlopen_api.c loads it with dlopen after the program has started, so
 * libslubmalloc.so comes in with it and must fit in glibc's spare static TLS.
 * It uses the API of include/slubmalloc.h: bulk calls, a typed cache, per-CPU memory, a
 * pcpu_ref and a pcpu_counter. Each function returns the number of checks that failed. */
#include <slubmalloc.h>
#include <stddef.h>
#include <string.h>

/* A ref and its count of releases (two threads run plugin_run at once: nothing is shared). */
struct counted {
	struct pcpu_ref ref;
	int released;
};

static void release(struct pcpu_ref *r)
{
	((struct counted *)(void *)((char *)r - offsetof(struct counted, ref)))->released++;
}

__attribute__((visibility("default"))) int plugin_run(void)
{
	int bad = 0;
	void *p[256];
	for (int round = 0; round < 100; round++) {
		if (malloc_bulk(48, 256, p) != 256)
			return 1;
		for (int i = 0; i < 256; i++)
			memset(p[i], i, 48);
		for (int i = 0; i < 256; i++)
			bad += ((unsigned char *)p[i])[47] != (unsigned char)i;
		free_bulk(256, p);
	}
	struct slub_cache *c = slub_cache_create("plugin", 100, 0, SLUB_ZERO, NULL);
	if (!c)
		return bad + 1;
	for (int i = 0; i < 1000; i++) {
		char *o = slub_cache_alloc(c);
		bad += !o || o[99] != 0;
		if (o) {
			o[99] = 1;
			slub_cache_free(c, o);
		}
	}
	slub_cache_destroy(c);
	long *v = pcpu_alloc(sizeof(long), 0);
	bad += !v;
	if (v) {
		pcpu_this_add(v, 5);
		pcpu_free(v);
	}
	struct pcpu_counter cnt;
	bad += pcpu_counter_init(&cnt, 0) != 0;
	for (int i = 0; i < 1000; i++)
		pcpu_counter_inc(&cnt);
	bad += pcpu_counter_sum(&cnt) != 1000;
	pcpu_counter_destroy(&cnt);
	struct counted cr = {.released = 0};
	bad += pcpu_ref_init(&cr.ref, release, 0) != 0;
	for (int i = 0; i < 1000; i++)
		pcpu_ref_get(&cr.ref);
	for (int i = 0; i < 1000; i++)
		pcpu_ref_put(&cr.ref);
	pcpu_ref_kill(&cr.ref); /* drops the initial reference: released once the count is 0 */
	pcpu_ref_switch_to_atomic_sync(&cr.ref);
	bad += cr.released != 1;
	pcpu_ref_exit(&cr.ref);
	return bad;
}

/* free_bulk of blocks that may not be slubmalloc's: those are reported (the caller checks). */
__attribute__((visibility("default"))) void plugin_free_bulk(size_t n, void **p)
{
	free_bulk(n, p);
}
