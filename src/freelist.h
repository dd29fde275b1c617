/* freelist.h: the slabs' shared words and the partial lists (freelist.c, where the concurrency
 * rules and the lock order live), and the links in free objects: each free pointer is stored
 * encoded, and checked when it is followed. */
#ifndef SM_FREELIST_H
#define SM_FREELIST_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

/* The only thread (freelist.c): the first thread to use the slabs, until a second one passes
 * the gate. A thread passes it before its first use of a slab. */
enum { GATE_NONE, GATE_ONLY, GATE_SHARED };
extern __thread uint8_t sm_gate_state TLS_IE;
/* Set once a second thread passes the gate: the profiler then patches no entry, flushes split
 * their objects by owner, and no push is plain. */
extern int sm_second_thread;
SM_COLD void sm_gate_pass(void);
static inline void sm_gate(void)
{
	if (unlikely(sm_gate_state == GATE_NONE))
		sm_gate_pass();
}
bool sm_plain_begin(void); /* true: a plain section, for the only thread; sm_plain_end ends it */
void sm_plain_end(void);

void sm_free_to_slab(struct slab *s, void *obj);  /* one object, any thread, no thread cache */
void sm_push_chain(struct slab *s, void *head, void *tail, uint32_t n);
void *sm_slab_take_all(struct slab *s, uint32_t *n); /* owner of frozen s; NULL if none */
bool sm_slab_put_back(struct slab *s, void *head, uint32_t n); /* onto an empty list only */
bool sm_slab_unfreeze_full(struct slab *s);        /* false: a free got in first */
struct slab *sm_slab_freeze_partial(struct cache *c, void **head, uint32_t *n);
struct slab *sm_slab_freeze_fullest(struct cache *c, void **head, uint32_t *n); /* a mover's */
void sm_slab_unfreeze(struct slab *s);             /* the owner's active slab, at exit */
void sm_cache_shrink(struct cache *c);            /* free its empty slabs now */
void sm_caches_lock_all(void);
void sm_caches_unlock_all(bool reinit);

/* ---- free pointer encoding (CONFIG_SLAB_FREELIST_HARDENED): ptr ^ secret ^ swab(&slot) ---- */
/* The free pointer of obj lives at obj + off: 0, or past the body for caches with a ctor. */
static inline void fp_set(void *obj, void *next, uint32_t off)
{
	uintptr_t slot = (uintptr_t)obj + off;
	*(uintptr_t *)slot = (uintptr_t)next ^ sm_g.secret ^ __builtin_bswap64(slot);
}
static inline void *fp_get(void *obj, uint32_t off)
{
	uintptr_t slot = (uintptr_t)obj + off;
	return (void *)(*(uintptr_t *)slot ^ sm_g.secret ^ __builtin_bswap64(slot));
}

/* ---- freelist links ----
 * A free pointer read from an object of slab s must be NULL or an object of s. Anything else
 * is a corrupted link (a write after free), reported before it is followed. */
SM_COLD SM_NORETURN void sm_bad_link(const struct slab *s, uintptr_t obj);
/* Whether next is neither NULL nor an object of the slab whose start, span (objects * size),
 * inverse and bad_q_bits these are (inside the span, is_object's one test is exact). */
static inline bool link_bad(uintptr_t next, uintptr_t start, uint64_t span, uint64_t inverse,
			    uint64_t bad_q_bits)
{
	return next && (next - start >= span || ((next - start) * inverse) & bad_q_bits);
}
static inline void *checked_next(struct slab *s, void *obj, uint32_t fpoff)
{
	uintptr_t next = (uintptr_t)fp_get(obj, fpoff);
	if (unlikely(link_bad(next, (uintptr_t)s->start, (uint64_t)s->objects * s->size, s->inverse,
			      s->bad_q_bits)))
		sm_bad_link(s, (uintptr_t)obj);
	return (void *)next;
}

/* sm_push_chain's push inside a plain section (freelist.c, THE ONLY THREAD), with plain
 * stores; fpoff is s's cache's. Inline: each run of a flush in random order is one object.
 * false, nothing done, when the push would change s's list (full -> partial, -> empty): that
 * takes the cache lock, which no plain section may wait for (a second thread at the gate may
 * hold it). */
static inline bool sm_push_chain_plain(struct slab *s, void *head, void *tail, uint32_t n,
				       uint32_t fpoff)
{
	uintptr_t lo = __atomic_load_n(&s->word.lo, __ATOMIC_RELAXED);
	uint64_t hi = __atomic_load_n(&s->word.hi, __ATOMIC_RELAXED);
	uint32_t inuse = SLAB_INUSE(hi);
	if (inuse <= n || (!(hi & SLAB_FROZEN) && inuse == s->objects))
		return false; /* (inuse < n: sm_push_chain reports the double free) */
	fp_set(tail, (void *)lo, fpoff);
	__atomic_store_n(&s->word.lo, (uintptr_t)head, __ATOMIC_RELAXED);
	__atomic_store_n(&s->word.hi, hi - n, __ATOMIC_RELAXED);
	return true;
}

#pragma GCC visibility pop

#endif
