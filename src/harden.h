/* harden.h: the free key, which catches a double free in the default mode, and its search
 * (harden.c). Always on: malloc's and free's fastpaths clear and set the key. */
#ifndef SM_HARDEN_H
#define SM_HARDEN_H

#include <stdbool.h>
#include <stdint.h>

#include "types.h"

#pragma GCC visibility push(hidden)

bool sm_free_listed(struct tcache *tc, struct slab *d, void *p); /* p (key set) free here? */
bool sm_in_stack(const struct stack *b, const void *p); /* p among b's objects? */
/* Whether p is on the chain from head (links at fpoff), within n links of slab s's objects. */
bool sm_in_chain(const struct slab *s, void *head, uint32_t fpoff, uint64_t n, const void *p);

/* ---- the free key: double frees caught in the default mode ----
 * free() stores FREE_KEY in word 1 of each object it pushes on a thread stack (and a refill
 * in each object it carves), and free_bulk in each object of its runs. A size class's object on
 * a slab's freelist carries SLAB_KEY, which has the same first byte. Every path that hands an
 * object out clears it (malloc, the slow paths, malloc_bulk). A free that
 * finds the key already there takes the slow path, which looks for the object on the
 * thread's stacks and its slab's freelist and reports a double free when it is there; else
 * (the program wrote the key itself) the free goes on. Word 0 stays the freelist link. */
/* A constant: a 32-bit immediate, sign-extended, in the compare and the store. Top bit set: no
 * pointer, no small number. A secret key would buy nothing: a program that forges it only sends
 * its free to the search, and one that overwrites it defeats any key. */
#define FREE_KEY ((uint64_t)(int64_t)(int32_t)0x9e3779b9u)
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the key's first byte is its low one");
/* free's fastpath tests the key's first byte only (FREE_KEY_BYTE, at offset 8). A byte load
 * is forwarded from any recent store that covers it; an 8-byte load over two smaller stores
 * waits for them to reach the cache (cfrac_like's 4-byte limbs: 59% of free's samples).
 * The byte is odd, so no aligned pointer's low byte, and no ASCII. A match takes the slow
 * path, which compares the whole key. */
#define FREE_KEY_BYTE ((uint8_t)FREE_KEY)
/* A carved object of a slab whose pages read as zero (struct slab's zero) carries ZERO_KEY
 * instead, until it is handed out: the rest of it is zero, so calloc skips its memset.
 * Its first byte is FREE_KEY's, so every free and free_bulk treats it as FREE_KEY.
 * Only allocation stacks hold such objects; a drain to the slabs rekeys them: sm_free_array
 * writes SLAB_KEY into each object it links. */
#define ZERO_KEY ((uint64_t)(int64_t)(int32_t)0x85ebcab9u)
_Static_assert((uint8_t)ZERO_KEY == FREE_KEY_BYTE, "free() tests the first byte only");
/* A size class's object on a slab's freelist carries SLAB_KEY instead: the pusher writes it
 * beside the link, in the same line. So a refill can tell, by address, which of a slab's
 * objects its freelist holds, and read them in address order (tcache.c's sweep). Objects in
 * stacks keep FREE_KEY. Its first byte is FREE_KEY's too. */
#define SLAB_KEY ((uint64_t)(int64_t)(int32_t)0xc2b2aeb9u)
_Static_assert((uint8_t)SLAB_KEY == FREE_KEY_BYTE, "free() tests the first byte only");
/* The key at byte offset off (a multiple of 8): 8 for the size classes, a typed cache's koff. */
static inline bool free_key_maybe_set_at(const void *p, uint32_t off)
{
	return ((const uint8_t *)p)[off] == FREE_KEY_BYTE;
}
static inline bool free_key_is_set_at(const void *p, uint32_t off)
{
	uint64_t k = *(const uint64_t *)(const void *)((const char *)p + off);
	return k == FREE_KEY || k == ZERO_KEY || k == SLAB_KEY;
}
static inline void free_key_put_at(void *p, uint32_t off, uint64_t key)
{
	*(uint64_t *)(void *)((char *)p + off) = key;
}
static inline void free_key_set_at(void *p, uint32_t off)
{
	free_key_put_at(p, off, FREE_KEY);
}
static inline void free_key_clear_at(void *p, uint32_t off)
{
	*(uint64_t *)(void *)((char *)p + off) = 0;
}
/* The size classes' key, in word 1. */
static inline bool free_key_maybe_set(const void *p)
{
	return free_key_maybe_set_at(p, 8);
}
static inline void free_key_set(void *p)
{
	free_key_set_at(p, 8);
}
static inline void *free_key_clear(void *p)
{
	free_key_clear_at(p, 8);
	return p;
}
/* Whether the objects on s's freelist carry SLAB_KEY: a size class's. (A typed cache's word 1
 * may be its objects' constructed state; a debug cache's objects lie past a redzone.) A keyed
 * slab's links are at offset 0: only those two kinds of cache move fpoff. */
static inline bool slab_keyed(const struct slab *s)
{
	return s->cls < NCLASS && !s->cache->debug;
}
/* An object of a keyed slab joins a chain bound for that slab's freelist. */
static inline void slab_key_set(void *p)
{
	free_key_put_at(p, 8, SLAB_KEY);
}
/* Whether p, about to be handed out, still reads as zero: it carries ZERO_KEY. */
static inline bool free_key_zero(const void *p)
{
	return *(const uint64_t *)(const void *)((const char *)p + 8) == ZERO_KEY;
}

/* The n objects at v, handed out, lose their keys (at off), as malloc's do; four a step, with
 * no loop branch between them. Returns n. */
static inline size_t free_keys_clear(void *const *v, size_t n, uint32_t off)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		free_key_clear_at(v[i], off);
		free_key_clear_at(v[i + 1], off);
		free_key_clear_at(v[i + 2], off);
		free_key_clear_at(v[i + 3], off);
	}
	for (; i < n; i++)
		free_key_clear_at(v[i], off);
	return n;
}

#pragma GCC visibility pop

#endif
