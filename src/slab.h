/* slab.h: slab geometry and creation (slab.c), and the object test: whether an address is the
 * start of one of a slab's objects, with one multiply and one mask. */
#ifndef SM_SLAB_H
#define SM_SLAB_H

#include <stdbool.h>
#include <stdint.h>

#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

void sm_cache_setup(struct cache *c, const char *name, uint32_t size, uint16_t cls);
struct slab *sm_slab_new(struct cache *c);     /* frozen, nothing carved */
uint32_t sm_slab_carve(struct slab *s, void **out, uint32_t n); /* owner; addresses only */

/* Whether a is the start of an object, and its index. With size = d << k (d odd) and inverse = d^-1
 * mod 2^64, q = (a - start) * inverse is i << k exactly when a = start + i * size; otherwise q has
 * one of its low k bits set, or is far above objects << k (Granlund and Montgomery's divisibility
 * test, without rotating q). bad_q_bits has those low k bits set and every bit from B up, where 2^B
 * is the least power of two above (objects - 1) << k: one test. An address before start in the
 * slab's first page fails it too: a = start - x with 0 < x < size, and -x * inverse has a bit of
 * bad_q_bits set. One past the last object is in another page. So the one test is exact for a in
 * s's own pages; for any address, slab_index and bulk's runs add the bound (q >> k below objects).
 */
static inline uint64_t object_q(const struct slab *s, uintptr_t a)
{
	return (a - (uintptr_t)s->start) * s->inverse;
}
/* d must be page_desc(a): the descriptor of a's own page. */
static inline bool is_object(const struct slab *d, uintptr_t a)
{
	return !(object_q(d, a) & d->bad_q_bits);
}
/* The object index of a (any address), or UINT32_MAX when a is not the start of an object of
 * s. */
static inline uint32_t slab_index(const struct slab *s, uintptr_t a)
{
	uint64_t q = object_q(s, a);
	if (unlikely(q & s->bad_q_bits) || unlikely((q >> s->shift) >= s->objects))
		return UINT32_MAX;
	return (uint32_t)(q >> s->shift);
}

#pragma GCC visibility pop

#endif
