/* unit_sweep.c: the sweep (tcache.c): a refill that takes a slab's freelist, linked in the
 * random order of its frees, reads the slab in address order instead, and so hands the objects
 * out in address order. Objects of 48 bytes (class 48: a slab of over a thousand), one in eight
 * kept in use so that no slab starts over; the rest go back through sm_free_array, shuffled,
 * and come out again through sm_fill.
 * - Plain: every object comes back once, none of those kept, and in address order.
 * - Decoys: in each slab a kept object carries SLAB_KEY and a well-formed link to a free
 *   object, as a program's bytes might. The sweep must see that its keyed objects are one too
 *   many for the list and leave the list to the walk: still every object once, none kept, and
 *   no longer in address order.
 * - Swapped: the decoys, and in each of their slabs a free object (not the list's end) whose
 *   key a write after its free wiped. The keyed objects are as many as the list again, and one
 *   ends it, so only the links tell: the same outcome as with decoys. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "engine.h"
#include "free_chunks.h"
#include "freelist.h"
#include "harden.h"
#include "region.h"
#include "sizeclass.h"
#include "tcache.h"
#include "types.h"

#define SIZE 48
#define SET 6000
#define TAKE_MAX 40000

static void *set[SET], *kept[SET / 7 + 1];
static unsigned char seen[SET];
static unsigned nkept;

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static int index_in(void *const *v, unsigned n, const void *p)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == p)
			return (int)i;
	return -1;
}

/* The set and the kept objects; with decoys, a kept object of each slab gets SLAB_KEY and a
 * link to an object of the set in its slab. Then the set goes back, shuffled; with wipe, an
 * object of the set in each slab with a decoy loses its key after that. */
static void free_set(bool decoys, bool wipe)
{
	nkept = 0;
	for (int i = 0; i < SET; i++) {
		if (i % 7 == 0) {
			kept[nkept] = malloc(SIZE);
			CHECK(kept[nkept], "malloc(%d)", SIZE);
			memset(kept[nkept], 0x5a, SIZE);
			nkept++;
		}
		set[i] = malloc(SIZE);
		CHECK(set[i], "malloc(%d)", SIZE);
	}
	unsigned planted = 0;
	struct slab *decoyed[SET / 7 + 1];
	for (unsigned k = 0; decoys && k < nkept; k++) {
		struct slab *s = slab_of((uintptr_t)kept[k]);
		int prior = -1;
		for (unsigned j = 0; j < k; j++)
			if (slab_of((uintptr_t)kept[j]) == s)
				prior = (int)j;
		if (prior >= 0)
			continue; /* one decoy a slab */
		for (int i = 0; i < SET; i++)
			if (slab_of((uintptr_t)set[i]) == s) {
				fp_set(kept[k], set[i], s->cache->fpoff);
				slab_key_set(kept[k]);
				decoyed[planted++] = s;
				break;
			}
	}
	CHECK(!decoys || planted >= 3, "decoys in %u slabs: the set spans too few", planted);
	for (int i = SET - 1; i > 0; i--) {
		int j = (int)(next_rand() % (uint64_t)(i + 1));
		void *t = set[i];
		set[i] = set[j], set[j] = t;
	}
	free_chunks(set, SET, 64, next_rand);
	for (unsigned d = 0; wipe && d < planted; d++) /* the second of its slab to go back: its
						      * link is the list's tail, no end */
		for (int i = 0, seen_one = 0; i < SET; i++)
			if (slab_of((uintptr_t)set[i]) == decoyed[d] && seen_one++) {
				free_key_clear(set[i]); /* word 1, on the slab's list */
				break;
			}
}

/* Takes until every object of the set is back; returns the share of consecutive objects of the
 * set in one page that ascend, in percent. */
static unsigned take_set(const char *name)
{
	unsigned cls = sm_size_to_class(SIZE);
	struct cache *c = &sm_g.caches[cls];
	struct source *src = &sm_tcp->source[cls];
	memset(seen, 0, sizeof seen);
	void *out[64];
	uintptr_t prev = 0;
	unsigned got = 0, taken = 0, pairs = 0, up = 0;
	while (got < SET && taken < TAKE_MAX) {
		uint32_t n = sm_fill(c, sm_tcp->id, src, out, 64);
		CHECK(n >= 1 && n <= 64, "%s: sm_fill gave %u", name, n);
		for (uint32_t k = 0; k < n; k++) {
			uintptr_t a = (uintptr_t)out[k];
			taken++;
			CHECK(index_in(kept, nkept, out[k]) < 0, "%s: %p, in use, handed out", name,
			      out[k]);
			int i = index_in(set, SET, out[k]);
			if (i < 0) {
				prev = 0; /* carved, or a list of the objects malloc left */
				continue;
			}
			CHECK(!seen[i], "%s: object %d (%p) handed out twice", name, i, out[k]);
			seen[i] = 1;
			got++;
			if (prev && !((a ^ prev) >> SPAGE_SHIFT)) {
				pairs++;
				up += a > prev;
			}
			prev = a;
		}
	}
	CHECK(got == SET, "%s: %u of %d objects came back in %u taken", name, got, SET, taken);
	unsigned share = pairs ? 100 * up / pairs : 0;
	printf("%s: %d objects back once each, none in use; %u%% of %u neighbours ascend\n", name,
	       SET, share, pairs);
	for (int i = 0; i < SET; i++) /* as malloc would hand them out: no key */
		free(free_key_clear(set[i]));
	for (unsigned k = 0; k < nkept; k++) {
		free_key_clear(kept[k]);
		free(kept[k]);
	}
	return share;
}

int main(void)
{
	free(malloc(1)); /* the thread's cache */
	free_set(false, false);
	unsigned plain = take_set("plain");
	CHECK(plain >= 95, "plain: %u%% ascend: the lists were walked, not swept", plain);
	free_set(true, false);
	unsigned decoy = take_set("decoys");
	CHECK(decoy <= 80, "decoys: %u%% ascend: a list with a decoy was swept", decoy);
	free_set(true, true);
	unsigned swapped = take_set("swapped");
	CHECK(swapped <= 80, "swapped: %u%% ascend: a list with a decoy was swept", swapped);
	printf("unit_sweep: all checks passed\n");
	return 0;
}
