/* unit_records.c: group records in slab freelists (freelist.c, take_spill in tcache.c).
 * For classes of 32 to 256 bytes (records of 1 to 8 objects), a set of objects goes back to
 * the slabs through sm_free_array in shuffled chunks of 1 to 40 (groups of every size, some
 * cut into several records), then comes out again through sm_fill with wants of 1 to 17
 * (records taken whole, and walked by their links when the want has no room for them).
 * Every object of the set must come back exactly once, intact past the words a freelist may
 * use (the link, the free key, a record), and records must list objects of the set at the
 * slabs' heads before the take.
 * Then, in a child: a head's record pointing outside its slab must stop the take with the
 * corrupted-link report, not hand the pointer out (a decoy keeps the sweep off that list). */
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
	for (int i = SET - 1; i > 0; i--) { /* shuffled: groups of every size per slab */
		int j = (int)(next_rand() % (uint64_t)(i + 1));
		void *t = set[i];
		set[i] = set[j], set[j] = t;
	}
	free_chunks(set, SET, 40, next_rand);
}

/* Records whose heads list objects of the set: read from the slabs' freelists, as take_spill
 * would (the chain from each partial slab's head). */
static unsigned records_seen(struct cache *c)
{
	unsigned found = 0;
	sm_lock(&c->lock);
	struct slab *s = c->partial;
	for (unsigned k = 0; s && k < c->nr_partial; k++, s = s->next) {
		uintptr_t head = (uintptr_t)s->word.lo;
		if (head && (rec_get(head, 2) & 15) && index_of((void *)rec_get(head, 3)) >= 0)
			found++;
	}
	sm_unlock(&c->lock);
	return found;
}

static void one_class(size_t size)
{
	unsigned cls = sm_size_to_class(size);
	struct cache *c = &sm_g.caches[cls];
	CHECK(rec_room(c) >= 1, "class of %zu bytes has no room for a record", size);
	memset(seen, 0, sizeof seen);
	free_set(size);
	CHECK(records_seen(c) > 0, "no freelist head of class %zu lists an object of the set", size);

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
			for (size_t j = 8 * (3 + rec_room(c)); j < size; j++)
				CHECK(b[j] == 0xa5, "object %d changed at byte %zu", i, j);
		}
	}
	CHECK(got == SET, "class %zu: %u of %d objects came back in %u taken", size, got, SET,
	      taken);
	printf("class %zu: %d objects back once each, %u taken, records of up to %u\n", size, SET,
	       taken, rec_room(c));
	/* a free of each, through the engine's path, as malloc would hand them out (no key) */
	for (int i = 0; i < SET; i++)
		free(free_key_clear(set[i]));
	for (int i = 0; i < SET / 3 + 1; i++)
		free(kept[i]);
}

/* A child frees a set, corrupts the record of one slab's head to point past its slab, and
 * takes: it must die of SIGABRT with the corrupted-link report. */
static void corrupted_record(void)
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
			uintptr_t head = (uintptr_t)s->word.lo;
			if (head && (rec_get(head, 2) & 15)) {
				rec_put(head, 3, (uintptr_t)s->start + 64 * (uintptr_t)s->objects * s->size);
				bad++;
				/* an object in use with the list's key and a link, as a program's
				 * bytes might: the sweep (tcache.c) counts one object too many and
				 * leaves the list to the walk, which reads the record */
				for (unsigned k = 0; k < SET / 3 + 1; k++)
					if (slab_of((uintptr_t)kept[k]) == s) {
						fp_set(kept[k], (void *)head, c->fpoff);
						slab_key_set(kept[k]);
						break;
					}
			}
		}
		sm_unlock(&c->lock);
		if (!bad)
			_exit(3); /* no record to corrupt: the test itself is wrong */
		void *out[32];
		for (int i = 0; i < 2 * SET; i++)
			sm_fill(c, sm_tcp->id, &sm_tcp->source[c->cls], out, 16);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
	      "a record pointing outside its slab was not caught (status %d)", st);
	printf("a corrupted record stops the take (SIGABRT)\n");
}

int main(void)
{
	free(malloc(1)); /* the thread's cache */
	static const size_t sizes[] = {32, 48, 64, 96, 256};
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		one_class(sizes[i]);
	corrupted_record();
	printf("unit_records: all checks passed\n");
	return 0;
}
