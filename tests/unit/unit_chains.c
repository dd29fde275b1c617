/* unit_chains.c: chains on slab freelists (sm_push_chain in freelist.c, take_spill in
 * tcache.c). For classes of 32 to 256 bytes, a set of objects goes back to the slabs through
 * sm_free_array in shuffled chunks of 1 to 40 (chains of every length, several to a slab),
 * then comes out again through sm_fill with wants of 1 to 17 (chains cut anywhere).
 * Every object of the set must come back exactly once, intact past the words a freelist may
 * use (the link, the free key).
 * Then, in a child: a link pointing outside its slab must stop the take with the
 * corrupted-link report, not hand the pointer out. */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine.h"
#include "free_chunks.h"
#include "freelist.h"
#include "harden.h"
#include "lock.h"
#include "region.h"
#include "sizeclass.h"
#include "tcache.h"
#include "types.h"

#define SET 3000
#define TAKE_MAX 20000

static void *set[SET];
static unsigned char seen[SET];

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static int index_of(void *p)
{
	for (int i = 0; i < SET; i++)
		if (set[i] == p)
			return i;
	return -1;
}

/* The set of SET objects of size, freed back to their slabs in shuffled chunks. One object in four
 * allocated between them stays in use (kept[]), so no slab is left with every object
 * free: such a slab would start over, its chain dropped unread (restart_if_all_free). */
static void *kept[SET / 3 + 1];

static void free_set(size_t size)
{
	for (int i = 0, n = 0; i < SET; i++) {
		if (i % 3 == 0) {
			kept[n] = malloc(size);
			CHECK(kept[n], "malloc(%zu)", size);
			n++;
		}
		set[i] = malloc(size);
		CHECK(set[i], "malloc(%zu)", size);
		memset(set[i], 0xa5, size);
	}
	for (int i = SET - 1; i > 0; i--) { /* shuffled: chains of every length per slab */
		int j = (int)(next_rand() % (uint64_t)(i + 1));
		void *t = set[i];
		set[i] = set[j], set[j] = t;
	}
	free_chunks(set, SET, 40, next_rand);
}

static void one_class(size_t size)
{
	unsigned cls = sm_size_to_class(size);
	struct cache *c = &sm_g.caches[cls];
	memset(seen, 0, sizeof seen);
	free_set(size);

	struct source *src = &sm_tcp->source[cls]; /* its active slab holds some of the set */
	void *out[32];
	unsigned got = 0, taken = 0, w = 0;
	while (got < SET && taken < TAKE_MAX) {
		uint32_t want = 1 + (w++ % 17);
		uint32_t n = sm_fill(c, sm_tcp->id, src, out, want);
		CHECK(n >= 1 && n <= want, "sm_fill gave %u for a want of %u", n, want);
		for (uint32_t k = 0; k < n; k++) {
			int i = index_of(out[k]);
			taken++;
			if (i < 0)
				continue; /* an object of another slab's chain, or a carved one */
			CHECK(!seen[i], "object %d (%p) of class %zu handed out twice", i, out[k], size);
			seen[i] = 1;
			got++;
			const unsigned char *b = out[k];
			for (size_t j = 16; j < size; j++)
				CHECK(b[j] == 0xa5, "object %d changed at byte %zu", i, j);
		}
	}
	CHECK(got == SET, "class %zu: %u of %d objects came back in %u taken", size, got, SET,
	      taken);
	printf("class %zu: %d objects back once each, %u taken\n", size, SET, taken);
	/* a free of each, through the engine's path, as malloc would hand them out (no key) */
	for (int i = 0; i < SET; i++)
		free(free_key_clear(set[i]));
	for (int i = 0; i < SET / 3 + 1; i++)
		free(kept[i]);
}

/* A child frees a set, points the link of each partial slab's head past its slab, and takes:
 * it must die of SIGABRT with the corrupted-link report. (The sweep, tcache.c, finds that
 * link outside the slab too, and leaves the list to the walk.) */
static void corrupted_link(void)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		size_t size = 96;
		struct cache *c = &sm_g.caches[sm_size_to_class(size)];
		free_set(size);
		unsigned bad = 0;
		sm_lock(&c->lock);
		for (struct slab *s = c->partial; s; s = s->next == c->partial ? NULL : s->next) {
			void *head = (void *)s->word.lo;
			if (head && fp_get(head, c->fpoff)) {
				fp_set(head, (char *)s->start + 64 * (size_t)s->objects * s->size,
				       c->fpoff);
				bad++;
			}
		}
		sm_unlock(&c->lock);
		if (!bad)
			_exit(3); /* no link to corrupt: the test itself is wrong */
		void *out[32];
		for (int i = 0; i < 2 * SET; i++)
			sm_fill(c, sm_tcp->id, &sm_tcp->source[c->cls], out, 16);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
	      "a link pointing outside its slab was not caught (status %d)", st);
	printf("a corrupted link stops the take (SIGABRT)\n");
}

int main(void)
{
	free(malloc(1)); /* the thread's cache */
	static const size_t sizes[] = {32, 48, 64, 96, 256};
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		one_class(sizes[i]);
	corrupted_link();
	printf("unit_chains: all checks passed\n");
	return 0;
}
