/* prof.c: the sampling heap profiler, SLUBMALLOC_PROF=1: which call stacks hold the memory.
 * sample.c decides which allocations are sampled, about one per SLUBMALLOC_PROF_SAMPLE bytes
 * (a Poisson process over bytes, as jemalloc and tcmalloc draw it). This file records them.
 * A sample is a call stack and the size asked for. Each distinct stack is kept once, in a
 * table of stacks with their sampled counts: objects and bytes in use, and allocated in all.
 * prof_dump.c writes the table in gperftools' heap-profile format.
 * Where a sampled block keeps its stack's id, so that its free drops it:
 *   - a size class's block comes from the class's profile cache: a debug cache of the same
 *     object size with no checks (DBG_PROF), whose slot metadata holds the id (debug.c). Its
 *     pointer is never a slot start, so every free of it (free, realloc, free_bulk, delete)
 *     fails the fastpaths' object check and reaches the slow path, which drops the sample;
 *   - a large block keeps it in its table entry (large.c);
 *   - a block of a SLUBMALLOC_DEBUG cache keeps it in its metadata, as a profile cache's does.
 * Invariants: the table changes under prof_lock (a leaf: nothing is taken under it); a
 * stack's id never changes and it is never removed; ids start at 1 (0: no sample); the
 * unwinding happens before the lock (backtrace.c). */
#include <string.h>

#include "backtrace.h"
#include "config.h"
#include "debug.h"
#include "diag.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "prof.h"
#include "sizeclass.h"
#include "slab.h"
#include "types.h"

#define CHUNK 1024u   /* stacks per chunk of the table */
#define CHUNKS 4096u  /* chunks at most: 4M distinct stacks */

static sm_lock_t prof_lock;
static struct prof_stack *chunks[CHUNKS];
static uint32_t nstacks;           /* ids 1..nstacks are in use */
static uint32_t *buckets;          /* hash -> the first id of its chain */
static uint32_t nbuckets;          /* a power of two */
static struct cache prof_caches[NCLASS];

struct prof_stack *sm_prof_stack(uint32_t id)
{
	return &chunks[(id - 1) / CHUNK][(id - 1) % CHUNK];
}

uint32_t sm_prof_nstacks(void)
{
	return __atomic_load_n(&nstacks, __ATOMIC_ACQUIRE);
}

void sm_prof_init(void)
{
	for (unsigned i = 0; i < NCLASS; i++) {
		struct cache *c = &prof_caches[i];
		sm_cache_setup(c, "prof", sm_class_size(i), (uint16_t)i);
		sm_debug_setup(c, DBG_PROF);
	}
}

static uint64_t hash_of(void *const *pc, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
	for (int i = 0; i < n; i++) {
		h ^= (uintptr_t)pc[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return h;
}

/* Twice the buckets (prof_lock held); false when no memory is left. */
static bool grow(void)
{
	uint32_t n = nbuckets ? nbuckets * 2 : 4096;
	uint32_t *b = sm_os_map((size_t)n * sizeof *b);
	if (!b)
		return false;
	for (uint32_t id = 1; id <= nstacks; id++) { /* each chain again, in the new buckets */
		struct prof_stack *s = sm_prof_stack(id);
		uint32_t k = (uint32_t)s->hash & (n - 1);
		s->next = b[k];
		b[k] = id;
	}
	if (buckets)
		sm_os_unmap(buckets, (size_t)nbuckets * sizeof *buckets);
	buckets = b;
	nbuckets = n;
	return true;
}

/* The id of stack pc[0..n), added if new (prof_lock held); 0 when no memory is left. */
static uint32_t intern(void *const *pc, int n, uint64_t h)
{
	if (nbuckets)
		for (uint32_t id = buckets[h & (nbuckets - 1)]; id; id = sm_prof_stack(id)->next) {
			struct prof_stack *s = sm_prof_stack(id);
			if (s->hash == h && s->depth == (uint32_t)n && !memcmp(s->pc, pc, (size_t)n * sizeof *pc))
				return id;
		}
	if (nstacks >= CHUNK * CHUNKS || (nstacks >= nbuckets && !grow()))
		return 0;
	uint32_t id = nstacks + 1;
	if (!chunks[(id - 1) / CHUNK] &&
	    !(chunks[(id - 1) / CHUNK] = sm_os_map(CHUNK * sizeof(struct prof_stack))))
		return 0;
	struct prof_stack *s = sm_prof_stack(id);
	s->hash = h;
	s->depth = (uint32_t)n;
	memcpy(s->pc, pc, (size_t)n * sizeof *pc);
	s->next = buckets[h & (nbuckets - 1)];
	buckets[h & (nbuckets - 1)] = id;
	__atomic_store_n(&nstacks, id, __ATOMIC_RELEASE);
	return id;
}

/* Inlined where it is called: each frame of this library costs the unwinder as much as one
 * of the program's. */
static inline __attribute__((always_inline)) uint32_t record(size_t req, const void *from)
{
	void *pc[PROF_FRAMES];
	int n = sm_backtrace(pc, PROF_FRAMES, from);
	if (n <= 0)
		return 0;
	uint64_t h = hash_of(pc, n);
	sm_lock(&prof_lock);
	uint32_t id = intern(pc, n, h);
	if (id) {
		struct prof_stack *s = sm_prof_stack(id);
		s->inuse_n++;
		s->inuse_bytes += req;
		s->alloc_n++;
		s->alloc_bytes += req;
	}
	sm_unlock(&prof_lock);
	if (id)
		sm_prof_after_sample();
	return id;
}

uint32_t sm_prof_record(size_t req)
{
	return record(req, NULL);
}

void sm_prof_drop(uint32_t id, size_t req)
{
	sm_lock(&prof_lock);
	struct prof_stack *s = sm_prof_stack(id);
	s->inuse_n--;
	s->inuse_bytes -= req;
	sm_unlock(&prof_lock);
}

void *sm_prof_alloc(unsigned cls, size_t req, unsigned form, const void *from)
{
	void *p = sm_debug_alloc(&prof_caches[cls], req, NULL, form);
	if (p)
		sm_debug_set_prof(p, record(req, from));
	return p;
}

/* A copy of the counts of stack id, taken under the lock (prof_dump.c). */
void sm_prof_counts(uint32_t id, struct prof_stack *out)
{
	sm_lock(&prof_lock);
	*out = *sm_prof_stack(id);
	sm_unlock(&prof_lock);
}

void sm_prof_caches_lock_all(void)
{
	for (unsigned i = 0; i < NCLASS; i++) {
		sm_lock(&prof_caches[i].dlock);
		sm_lock(&prof_caches[i].lock);
	}
}

void sm_prof_caches_unlock_all(void)
{
	for (unsigned i = 0; i < NCLASS; i++) {
		sm_unlock(&prof_caches[i].lock);
		sm_unlock(&prof_caches[i].dlock);
	}
}

void sm_prof_lock_all(void)
{
	sm_lock(&prof_lock);
}

void sm_prof_unlock_all(void)
{
	sm_unlock(&prof_lock);
}
