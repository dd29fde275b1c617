/* unit_slab.c: slab geometry, carving and the pointer -> slab lookup. For every cache: a new
 * slab is frozen with every object held; carving hands out each object exactly once, in
 * bounds, aligned; slab_of() finds the slab from each object and from every byte inside it;
 * slab_index() and free()'s one-test object check accept object starts only (not the leftover
 * before the first object, nor any address of a page of no slab: never used, or released);
 * the last object ends where the slab does; pointers outside all regions are not ours; a bulk
 * free whose first pointers lie in a page of ours that holds no slab is reported; a slab whose
 * objects all came back is carved again from its start (unless one is out, or it has a ctor). */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "engine.h"
#include "region.h"
#include "sizeclass.h"
#include "slab.h"
#include "tcache.h"
#include "types.h"
#include "slubmalloc.h"

static int global_var;

/* free_bulk of eight pointers into a page of p's region that no slab covers (its descriptor
 * says nothing: no object check may pass there, and no stack may be picked from it) must report
 * and abort, with the thread's stacks set up as a running program's are. */
static void bulk_into_free_page(void)
{
	void *p = malloc(64);
	CHECK(p, "malloc(64)");
	uintptr_t a = (uintptr_t)p;
	free(p);
	struct region *r = (struct region *)(a & ~(uintptr_t)(REGION_SIZE - 1));
	unsigned page = 0;
	for (unsigned i = 1; i < REGION_PAGES && !page; i++)
		if (!r->map[i] && !r->slabs[i].start)
			page = i;
	CHECK(page, "no free page in the region of %#lx", (unsigned long)a);
	void *v[8];
	for (unsigned k = 0; k < 8; k++)
		v[k] = (char *)r + (size_t)page * SPAGE_SIZE + 64 * k;
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY); /* the report is expected */
		if (null >= 0)
			dup2(null, 2);
		free_bulk(8, v);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
	      "free_bulk into a page of no slab: status %d, not a report and abort", st);
}

/* No address of a page without a slab passes the object check: every 16th byte of the page,
 * and a few odd ones. */
static void check_no_objects(char *page, const char *what)
{
	for (uintptr_t off = 0; off < SPAGE_SIZE; off += 16)
		for (uintptr_t d = 0; d < 16; d += 7) {
			uintptr_t a = (uintptr_t)page + off + d;
			CHECK(!is_object(page_desc(a), a) && slab_index(page_desc(a), a) == UINT32_MAX,
			      "%s: %#lx passes the object check", what, (unsigned long)a);
		}
}

/* The pages of a fresh region (never used by a slab) and those of a released slab. */
static void pages_without_slab(void)
{
	void *p = malloc(64);
	CHECK(p, "malloc(64)");
	struct region *r = (struct region *)((uintptr_t)p & ~(uintptr_t)(REGION_SIZE - 1));
	check_no_objects((char *)r, "the region's header page");
	unsigned never = 0;
	for (unsigned i = REGION_PAGES - 1; i > 0 && !never; i--)
		if (!r->map[i] && !r->slabs[i].start && r->slabs[i].inverse == 1)
			never = i;
	CHECK(never, "no never-used page in the region of %p", p);
	check_no_objects((char *)r + (size_t)never * SPAGE_SIZE, "a never-used page");
	free(p);
	struct cache *c = &sm_g.caches[sm_size_to_class(48)]; /* a leftover before the objects */
	struct slab *s = sm_slab_new(c);
	CHECK(s, "no slab for %s", c->name);
	char *page = desc_page(s);
	CHECK(s->start > page, "%s: no leftover before the first object", c->name);
	sm_pages_free(s);
	check_no_objects(page, "a released slab's page");
}

static int ctor_runs;
static void count_ctor(void *p)
{
	(void)p;
	ctor_runs++;
}

/* Whether out[0, n) are s's first n objects as carved: highest address first, so that a stack
 * popping from out[n - 1] hands them out lowest address first. */
static bool in_carve_order(const struct slab *s, void **out, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (out[i] != s->start + (size_t)(n - 1 - i) * s->size)
			return false;
	return true;
}

/* sm_fill (tcache.c) on a fresh class: a slab whose every handed-out object is back on its
 * freelist starts over, carved again from its start with no link read: after the owner's
 * take-all, and when a thread freezes it empty from the partial list. With one object still
 * out, or in a cache with a ctor (an object is constructed once), the chain is followed. */
static void restart_all_free(void)
{
	enum { N = 64 };
	struct cache *c = &sm_g.caches[sm_size_to_class(1024)];
	CHECK(c->objects >= N && !c->partial && !c->ctor, "kmalloc-1024: a fresh class of >= %d", N);
	void *v[N], *w[N];
	struct source src = {0};
	CHECK(sm_fill(c, 1, &src, v, N) == N && src.active, "first fill");
	struct slab *s = src.active;
	CHECK(in_carve_order(s, v, N), "a new slab's carve order");

	sm_free_array(v, N); /* every object back: the take-all restarts the slab */
	CHECK(sm_fill(c, 1, &src, w, N) == N && src.active == s && !src.spill,
	      "refill after all came back");
	CHECK(in_carve_order(s, w, N), "all back, taken again: not carved again from the start");

	sm_free_array(w + 1, N - 1); /* w[0] still out: the chain is followed */
	CHECK(sm_fill(c, 1, &src, v, N) == N - 1, "refill with one object out");
	for (uint32_t i = 0; i < N - 1; i++)
		CHECK(v[i] == w[N - 1 - i], "one object out: object %u is not the chain's", i);

	/* all back (w[0] first: the chain then starts at w[1]), then the slab unfrozen (empty,
	 * kept on the partial list): a new owner's freeze restarts it */
	sm_free_array(w, 1);
	sm_free_array(v, N - 1);
	struct stack none = {0};
	sm_drop(&none, NULL, &src, c);
	CHECK(c->partial == s && SLAB_INUSE(s->word.hi) == 0, "an empty slab on the partial list");
	struct source src2 = {0};
	CHECK(sm_fill(c, 2, &src2, w, N) == N && src2.active == s && !src2.spill,
	      "refill from the partial list");
	CHECK(in_carve_order(s, w, N), "an empty slab frozen again: not carved from the start");

	/* with a ctor: never carved twice */
	c->ctor = count_ctor;
	sm_free_array(w, N);
	ctor_runs = 0;
	CHECK(sm_fill(c, 2, &src2, v, N) == N, "refill with a ctor");
	CHECK(ctor_runs == 0 && v[0] == w[N - 1], "a cache with a ctor restarted its slab");
	c->ctor = NULL;
	sm_free_array(v, N);
	sm_drop(&none, NULL, &src2, c);
}

int main(void)
{
	sm_init();
	bulk_into_free_page();
	pages_without_slab();
	restart_all_free();
	for (unsigned c = 0; c < NCLASS; c++) {
		struct cache *ca = &sm_g.caches[c];
		CHECK(ca->objects * ca->size <= ca->pages * SPAGE_SIZE, "cache %s overflows", ca->name);
		CHECK((ca->pages * SPAGE_SIZE - ca->objects * ca->size) * 8 <= ca->pages * SPAGE_SIZE,
		      "cache %s wastes more than 1/8 of its slab", ca->name);
		struct slab *s = sm_slab_new(ca);
		CHECK(s, "no slab for %s", ca->name);
		CHECK(s->word.lo == 0 && s->word.hi == (SLAB_FROZEN | ca->objects), "new slab word");
		CHECK(((uintptr_t)&s->word & 15) == 0, "shared word not 16-byte aligned");
		uint32_t total = 0, got;
		void *batch[37];
		char *expect = s->start;
		while ((got = sm_slab_carve(s, batch, 37)) > 0) {
			for (uint32_t i = 0; i < got; i++) {
				char *o = batch[got - 1 - i]; /* (carved highest first: popped lowest first) */
				CHECK(o == expect, "carve order in %s", ca->name);
				uintptr_t a = (uintptr_t)o;
				CHECK(region_is_ours(a), "object not in a region");
				CHECK(slab_of(a) == s, "slab_of wrong in %s", ca->name);
				CHECK(slab_of(a + ca->size - 1) == s, "slab_of(last byte) wrong");
				CHECK(page_desc(a)->head == s && slab_index(page_desc(a), a) == total,
				      "page descriptor of object %u in %s", total, ca->name);
				CHECK(slab_index(s, a) == total, "index %u", total);
				CHECK(a % MIN_ALIGN == 0, "misaligned object");
				CHECK(slab_index(s, a + 8) == UINT32_MAX, "interior pointer accepted");
				/* a + 16: the next object, or inside this one (or the next slab) */
				bool next_in = total + 1 < ca->objects;
				CHECK(is_object(page_desc(a), a) &&
					      !is_object(page_desc(a + 8), a + 8) &&
					      (!next_in || is_object(page_desc(a + 16), a + 16) ==
								   (ca->size == 16)),
				      "free()'s object check in %s at object %u", ca->name, total);
				memset(o, 0xa5, ca->size);
				total++;
				expect += ca->size;
			}
		}
		CHECK(total == ca->objects, "%s carved %u of %u", ca->name, total, ca->objects);
		CHECK(slab_index(s, (uintptr_t)s->start + (uintptr_t)ca->objects * ca->size) ==
			      UINT32_MAX, "index past the last object accepted");
		CHECK(s->start + (size_t)ca->objects * ca->size == desc_page(s) + ca->pages * SPAGE_SIZE,
		      "%s: the last object does not end where the slab does", ca->name);
		for (uintptr_t a = (uintptr_t)desc_page(s); a < (uintptr_t)s->start; a += 16)
			CHECK(!is_object(page_desc(a), a) && slab_index(s, a) == UINT32_MAX,
			      "%s: the leftover at %#lx passes the object check", ca->name,
			      (unsigned long)a);
	}
	int local;
	CHECK(!region_is_ours((uintptr_t)&local), "stack is ours?");
	CHECK(!region_is_ours((uintptr_t)&global_var), "global is ours?");
	CHECK(!region_is_ours(1), "(void*)1 is ours?");
	CHECK(!region_is_ours(UINTPTR_MAX - 7), "top of address space is ours?");
	printf("unit_slab: %d caches carved and looked up\n", NCLASS);
	return 0;
}
