/* debug.c: SLUB's debug mode (slub_debug=FZPU) for the size-class caches that
 * SLUBMALLOC_DEBUG selects. A debug cache leaves the lockless fastpath: its thread stacks have
 * capacity 0, so every malloc and free of its objects comes here (alloc.c), and the fastpaths
 * pay nothing for this file. Its slabs hold slots laid out as
 *     [ left red zone | object (class size) | right red zone | struct dmeta ]
 *        DBG_RZ bytes                          DBG_RZ bytes
 * (32 bytes: a write 32 bytes before a block still lands in its own left red zone)
 * and malloc returns the object's address, which is never a slot start, so a debug pointer
 * fails the fastpath's object check by construction.
 * Invariants: dmeta.state is DSTATE_ALLOC ^ slot while the object is handed out and
 * DSTATE_FREE ^ slot while it is free (after its first use; a slot never used has neither,
 * and is not checked); a free slot's free pointer is dmeta.fp (cache->fpoff), never inside the
 * object, so poison covers the whole object. With Z, the bytes from the requested size to the
 * right red zone's end are DBG_RZ_BYTE while allocated, and the left red zone always is. With
 * P, a free object's bytes are all DBG_POISON. Objects come from the cache's own spill chain
 * and active slab (cache->debug_source, through sm_fill) under cache->dlock, and go back with
 * one push each (sm_free_to_slab).
 * With Q a freed object first waits in the quarantine (DSTATE_FREE, poisoned with P), which
 * holds up to QUAR_SLOTS objects and QUAR_BYTES bytes. A full quarantine lets a random one go:
 * reuse comes late and in no predictable order. The quarantine lock is a leaf: nothing is
 * taken under it.
 * With E a freed object reads as zeros: with P, zero is the poison.
 * A slot's state, red zones and poison change only under cache->dlock. So a scan
 * (sm_debug_scan: at exit, by malloc_trim, by the background thread) takes each debug cache's
 * dlock, then the page lock, and checks every slot: an allocated one's red zones, a free one's
 * poison and red zones. A bug that no later malloc or free of its slab reaches is found there.
 * A write into a block by memcpy, memmove or memset is checked against the block's bounds
 * before it is made, by the debug library's entries (sm_debug_check_write). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backtrace.h"
#include "config.h"
#include "debug.h"
#include "diag.h"
#include "engine.h"
#include "freelist.h"
#include "large.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "slab.h"
#include "tcache.h"
#include "types.h"

#define DBG_RZ 32
#define DBG_RZ_BYTE 0xbb
#define DBG_POISON 0x6b
#define DSTATE_ALLOC 0xa110c8eda110c8edULL
#define DSTATE_FREE 0xf4eef4eef4eef4eeULL

#define DBG_FRAMES 6

struct dmeta {
	uint64_t state;
	uint64_t req;           /* the size asked for */
	void *alloc_ip, *free_ip;
	uint32_t alloc_tid, free_tid;
	uint32_t form;          /* enum form: the call that allocated it */
	uint32_t prof;          /* the profiler's stack id when it is a sample; 0: not one */
	uint32_t nbt;           /* U: frames in alloc_bt */
	void *alloc_bt[DBG_FRAMES]; /* U: the allocation's stack */
	uint64_t fp;            /* the free pointer while free */
};

static const char *scan_when; /* "at exit", ...: set while a scan runs, for its reports */

/* What a free object holds: DBG_POISON, or zeros with E. */
static unsigned char poison_of(const struct cache *c)
{
	return c->debug & DBG_E ? 0 : DBG_POISON;
}

static inline struct dmeta *meta_of(const struct cache *c, char *slot)
{
	return (struct dmeta *)(slot + DBG_RZ + c->osize + DBG_RZ);
}

/* Turn size class cache c into a debug cache with flags (init, before any allocation). */
void sm_debug_setup(struct cache *c, unsigned flags)
{
	char name[sizeof c->name];
	memcpy(name, c->name, sizeof name);
	uint32_t osize = c->size;
	uint16_t cls = c->cls;
	/* a multiple of MIN_ALIGN: each slot's block (slot + DBG_RZ) is as aligned as malloc's */
	uint32_t dsize = DBG_RZ + osize + DBG_RZ + (uint32_t)sizeof(struct dmeta);
	sm_cache_setup(c, name, (dsize + MIN_ALIGN - 1) & ~(uint32_t)(MIN_ALIGN - 1), cls);
	c->osize = osize;
	c->debug = flags;
	c->fpoff = DBG_RZ + osize + DBG_RZ + (uint32_t)offsetof(struct dmeta, fp);
}

/* The 32 bytes around addr (clamped to the slot), as the kernel's reports show them. */
static void dump_bytes(const struct cache *c, char *slot, const unsigned char *addr)
{
	const unsigned char *lo = addr - 8 < (unsigned char *)slot ? (unsigned char *)slot : addr - 8;
	const unsigned char *end = (unsigned char *)meta_of(c, slot);
	sm_write(2, "slubmalloc:   bytes at ");
	sm_write_hex(2, (uintptr_t)lo);
	sm_write(2, ":");
	for (int i = 0; i < 32 && lo + i < end; i++) {
		char b[4] = {' ', "0123456789abcdef"[lo[i] >> 4], "0123456789abcdef"[lo[i] & 15], 0};
		sm_write(2, b);
	}
	sm_write(2, "\n");
}

static void write_track(const char *what, void *ip, uint32_t tid)
{
	sm_write(2, "slubmalloc:   ");
	sm_write(2, what);
	sm_write(2, " by ");
	sm_write_hex(2, (uintptr_t)ip);
	sm_write(2, " thread ");
	sm_write_num(2, tid, 10);
	sm_write(2, "\n");
}

static void tracks(const struct cache *c, const struct dmeta *m)
{
	if (scan_when) {
		sm_write(2, "slubmalloc:   found ");
		sm_write(2, scan_when);
		sm_write(2, "\n");
	}
	if (!(c->debug & DBG_U))
		return;
	if (m->nbt)
		sm_write_stack("allocated", m->alloc_tid, m->alloc_bt, (int)m->nbt);
	else if (m->alloc_ip)
		write_track("allocated", m->alloc_ip, m->alloc_tid);
	if (m->state == (DSTATE_FREE ^ (uintptr_t)m) && m->free_ip)
		write_track("freed", m->free_ip, m->free_tid);
}

/* "slubmalloc: <what> at 0x.. (object 0x.., offset N, size S) in cache NAME", the bytes, the
 * call sites; then abort. */
SM_NORETURN static void report(const struct cache *c, char *slot, const char *what,
			       const unsigned char *at)
{
	struct dmeta *m = meta_of(c, slot);
	char *obj = slot + DBG_RZ;
	sm_write(2, "slubmalloc: ");
	sm_write(2, what);
	sm_write(2, " at ");
	sm_write_hex(2, (uintptr_t)at);
	sm_write(2, " (object ");
	sm_write_hex(2, (uintptr_t)obj);
	sm_write(2, ", offset ");
	if ((const char *)at < obj) {
		sm_write(2, "-");
		sm_write_num(2, (uint64_t)(obj - (const char *)at), 10);
	} else {
		sm_write_num(2, (uint64_t)((const char *)at - obj), 10);
	}
	sm_write(2, ", size ");
	sm_write_num(2, m->req, 10);
	sm_write(2, ") in cache ");
	sm_write(2, c->name);
	sm_write(2, "\n");
	dump_bytes(c, slot, at);
	tracks(c, m);
	abort();
}

/* "slubmalloc: <what> of 0x.. in cache NAME <detail>", the call sites; then abort. */
SM_NORETURN static void report_free(const struct cache *c, char *slot, const char *what,
				    const char *detail)
{
	sm_write(2, "slubmalloc: ");
	sm_write(2, what);
	sm_write(2, " of ");
	sm_write_hex(2, (uintptr_t)(slot + DBG_RZ));
	sm_write(2, " in cache ");
	sm_write(2, c->name);
	if (*detail) {
		sm_write(2, " ");
		sm_write(2, detail);
	}
	sm_write(2, "\n");
	tracks(c, meta_of(c, slot));
	abort();
}

/* The first byte of [p, p + n) that is not b, or NULL. */
static const unsigned char *not_all(const void *p, size_t n, unsigned char b)
{
	const unsigned char *q = p;
	for (size_t i = 0; i < n; i++)
		if (q[i] != b)
			return q + i;
	return NULL;
}

/* The left red zone, and the right one from offset `from` of the object (the requested size
 * while allocated; the class size while free, when the object's bytes are its own). */
static void check_redzones(const struct cache *c, char *slot, uint64_t from)
{
	const unsigned char *bad = not_all(slot, DBG_RZ, DBG_RZ_BYTE);
	if (!bad)
		bad = not_all(slot + DBG_RZ + from, c->osize - from + DBG_RZ, DBG_RZ_BYTE);
	if (bad)
		report(c, slot, "redzone overwritten", bad);
}

/* The calling thread's id, for reports; a profile cache makes none (a system call saved). */
static uint32_t tid(const struct cache *c)
{
	return c->debug & DBG_PROF ? 0 : sm_os_tid();
}

void *sm_debug_alloc(struct cache *c, size_t req, void *caller, unsigned form)
{
	void *o = NULL;
	sm_lock(&c->dlock);
	uint32_t n = sm_fill(c, 0, &c->debug_source, &o, 1);
	if (!n) {
		sm_unlock(&c->dlock);
		return errno = ENOMEM, NULL;
	}
	char *slot = o;
	struct dmeta *m = meta_of(c, slot);
	if (m->state == (DSTATE_FREE ^ (uintptr_t)m)) { /* used before: check what free left */
		if (c->debug & DBG_P) {
			const unsigned char *bad = not_all(slot + DBG_RZ, c->osize, poison_of(c));
			if (bad)
				report(c, slot, "poison overwritten (write after free)", bad);
		}
		if (c->debug & DBG_Z)
			check_redzones(c, slot, c->osize);
	} else if (m->state == (DSTATE_ALLOC ^ (uintptr_t)m) && (c->debug & DBG_F)) {
		report_free(c, slot, "freelist corrupted: second hand-out", "(already allocated)");
	}
	m->state = DSTATE_ALLOC ^ (uintptr_t)m;
	m->req = req;
	m->form = form;
	m->prof = 0;
	m->nbt = 0;
	m->alloc_ip = caller;
	m->alloc_tid = tid(c);
	m->free_ip = NULL;
	m->free_tid = 0;
	if (c->debug & DBG_Z) {
		memset(slot, DBG_RZ_BYTE, DBG_RZ);
		memset(slot + DBG_RZ + req, DBG_RZ_BYTE, c->osize - req + DBG_RZ);
	}
	if (c->debug & DBG_I)
		memset(slot + DBG_RZ, 0, req);
	sm_unlock(&c->dlock);
	/* both may allocate: not under the lock */
	if (unlikely(sm_opt.prof) && !(c->debug & DBG_PROF) && sm_sample_prof_due(req))
		m->prof = sm_prof_record(req);
	if (c->debug & DBG_U)
		m->nbt = (uint32_t)sm_backtrace(m->alloc_bt, DBG_FRAMES, NULL);
	return slot + DBG_RZ;
}

/* The slot of debug pointer p of slab s; reports p when it is no object of s. */
static char *slot_of(struct slab *s, void *p, const char *call)
{
	char *slot = (char *)p - DBG_RZ;
	if (slab_index(s, (uintptr_t)slot) == UINT32_MAX)
		sm_fatal(call, p, "(not the start of an object of slubmalloc)");
	return slot;
}

/* p must be a handed-out object of debug slab s: reports a double free or a bad pointer. */
static struct dmeta *live_meta(struct slab *s, void *p, const char *call)
{
	struct cache *c = s->cache;
	char *slot = slot_of(s, p, call);
	struct dmeta *m = meta_of(c, slot);
	if (m->state == (DSTATE_ALLOC ^ (uintptr_t)m))
		return m;
	if (m->state == (DSTATE_FREE ^ (uintptr_t)m))
		report_free(c, slot, "double free", "");
	if (c->debug & DBG_Z) /* an overflow long enough to reach the state: say so */
		check_redzones(c, slot, c->osize);
	report_free(c, slot, call, "(never handed out, or its debug state was overwritten)");
}

#define QUAR_SLOTS 4096
#define QUAR_BYTES (32u << 20)
static sm_lock_t quar_lock;
static char *quar[QUAR_SLOTS]; /* slots of freed objects */
static uint32_t quar_n;
static size_t quar_bytes;
static uint64_t quar_rng = 0x9e3779b97f4a7c15ULL;

static size_t slot_bytes(char *slot)
{
	return slab_of((uintptr_t)slot)->cache->osize;
}

/* Put slot in the quarantine; the objects it lets go (at most out_cap) go to out[]. */
static unsigned quarantine(char *slot, char **out, unsigned out_cap)
{
	unsigned n = 0;
	size_t bytes = slot_bytes(slot);
	sm_lock(&quar_lock);
	while (quar_n && n < out_cap && (quar_n == QUAR_SLOTS || quar_bytes + bytes > QUAR_BYTES)) {
		quar_rng ^= quar_rng << 13, quar_rng ^= quar_rng >> 7, quar_rng ^= quar_rng << 17;
		uint32_t i = (uint32_t)(quar_rng % quar_n);
		out[n++] = quar[i];
		quar_bytes -= slot_bytes(quar[i]);
		quar[i] = quar[--quar_n];
	}
	if (quar_n < QUAR_SLOTS) {
		quar[quar_n++] = slot;
		quar_bytes += bytes;
	} else {
		out[n++] = slot; /* (out_cap reached first: slot goes at once) */
	}
	sm_unlock(&quar_lock);
	return n;
}

void sm_debug_lock_all(void)
{
	sm_lock(&quar_lock);
}

void sm_debug_unlock_all(void)
{
	sm_unlock(&quar_lock);
}

/* M: "(delete[] of a block from new)" into d. */
static const char *mismatch(char *d, unsigned freed, unsigned made)
{
	static const char *const frees[] = {"free", "delete", "delete[]"};
	static const char *const allocs[] = {"malloc", "new", "new[]"};
	const char *parts[] = {"(", frees[freed % 3], " of a block from ", allocs[made % 3], ")"};
	char *o = d;
	for (unsigned i = 0; i < 5; i++)
		for (const char *q = parts[i]; *q;)
			*o++ = *q++;
	*o = 0;
	return d;
}

void sm_debug_free(struct slab *s, void *p, void *caller, unsigned form)
{
	struct cache *c = s->cache;
	sm_lock(&c->dlock);
	struct dmeta *m = live_meta(s, p, "invalid free");
	char *slot = (char *)p - DBG_RZ;
	m->free_ip = caller;
	m->free_tid = tid(c);
	uint32_t prof = m->prof;
	m->prof = 0;
	if ((c->debug & DBG_M) && m->form != form) {
		char d[48];
		report_free(c, slot, "mismatched free", mismatch(d, form, (unsigned)m->form));
	}
	if (c->debug & DBG_Z)
		check_redzones(c, slot, m->req);
	if (c->debug & DBG_P)
		memset(p, poison_of(c), c->osize);
	else if (c->debug & (DBG_I | DBG_E))
		memset(p, 0, c->osize);
	m->state = DSTATE_FREE ^ (uintptr_t)m;
	sm_unlock(&c->dlock);
	if (prof)
		sm_prof_drop(prof, m->req);
	if (!(c->debug & DBG_Q)) {
		sm_free_to_slab(s, slot);
		return;
	}
	char *out[8];
	unsigned n = quarantine(slot, out, 8);
	for (unsigned i = 0; i < n; i++)
		sm_free_to_slab(slab_of((uintptr_t)out[i]), out[i]);
}

void sm_debug_set_prof(void *p, uint32_t id)
{
	char *slot = (char *)p - DBG_RZ;
	meta_of(slab_of((uintptr_t)slot)->cache, slot)->prof = id;
}

size_t sm_debug_usable(struct slab *s, const void *p)
{
	return live_meta(s, (void *)p, "invalid malloc_usable_size")->req;
}

/* A new slab of a debug cache: no slot carries a state yet (its pages may hold old bytes). */
void sm_debug_slab_init(struct slab *s)
{
	struct cache *c = s->cache;
	for (uint32_t i = 0; i < s->objects; i++)
		meta_of(c, s->start + (size_t)i * s->size)->state = 0;
}

/* ---- writes by memcpy, memmove, memset (the debug library's entries, preload/memops.c) ---- */
/* "slubmalloc: <call> of N bytes at 0x.. <what> (object 0x.., offset K, size S) in cache C",
 * the writer's stack, the block's; then abort. */
SM_NORETURN static void report_write(const struct cache *c, char *obj, size_t size,
				     const struct dmeta *m, const char *call, uintptr_t a, size_t n,
				     const char *what)
{
	const char *name = c ? c->name : "large";
	sm_write(2, "slubmalloc: ");
	sm_write(2, call);
	sm_write(2, " of ");
	sm_write_num(2, n, 10);
	sm_write(2, " bytes at ");
	sm_write_hex(2, a);
	sm_write(2, " ");
	sm_write(2, what);
	sm_write(2, " (object ");
	sm_write_hex(2, (uintptr_t)obj);
	sm_write(2, ", offset ");
	if (a < (uintptr_t)obj) {
		sm_write(2, "-");
		sm_write_num(2, (uintptr_t)obj - a, 10);
	} else {
		sm_write_num(2, a - (uintptr_t)obj, 10);
	}
	sm_write(2, ", size ");
	sm_write_num(2, size, 10);
	sm_write(2, ") in cache ");
	sm_write(2, name);
	sm_write(2, "\n");
	void *bt[16];
	int nbt = sm_backtrace(bt, 16, NULL);
	if (nbt)
		sm_write_stack(call, sm_os_tid(), bt, nbt);
	if (m)
		tracks(c, m);
	abort();
}

void sm_debug_check_write(const void *dst, size_t n, const char *call, const void *ra)
{
	uintptr_t a = (uintptr_t)dst, block;
	size_t size;
	if (!n || (uintptr_t)ra - sm_bt_self_lo < sm_bt_self_hi - sm_bt_self_lo) /* the engine's */
		return;
	if (!region_is_ours(a)) {
		if (!(sm_large_debug & DBG_Z) || !sm_large_debug_find(a, &block, &size))
			return;
		if (a < block)
			report_write(NULL, (char *)block, size, NULL, call, a, n, "starts before the block");
		if (n > block + size - a) /* (the guard page after it faults too) */
			report_write(NULL, (char *)block, size, NULL, call, a, n, "overflows the block");
		return;
	}
	struct slab *s = slab_of(a);
	if (!s || !s->start || n > UINTPTR_MAX - a)
		return;
	uintptr_t i = (a - (uintptr_t)s->start) / s->size;
	if (a < (uintptr_t)s->start) { /* below the first slot: bad if it reaches it */
		if (a + n <= (uintptr_t)s->start)
			return;
		i = 0;
	}
	if (i >= s->objects)
		return;
	struct cache *c = s->cache;
	char *slot = s->start + i * s->size;
	if (!c->debug) { /* a block of the class size */
		if (n > (uintptr_t)slot + s->size - a)
			report_write(c, slot, s->size, NULL, call, a, n, "overflows the block");
		return;
	}
	char *obj = slot + DBG_RZ;
	if (a >= (uintptr_t)obj + c->osize && a + n > (uintptr_t)slot + s->size &&
	    i + 1 < s->objects) { /* past this slot's object, into the next slot: that one's */
		slot += s->size;
		obj += s->size;
	}
	struct dmeta *m = meta_of(c, slot);
	if (m->state == (DSTATE_FREE ^ (uintptr_t)m))
		report_write(c, obj, m->req, m, call, a, n, "writes into a freed block");
	if (m->state != (DSTATE_ALLOC ^ (uintptr_t)m))
		report_write(c, obj, 0, NULL, call, a, n, "writes where no block was handed out");
	if (a < (uintptr_t)obj)
		report_write(c, obj, m->req, m, call, a, n, "starts before the block");
	if (n > (uintptr_t)obj + m->req - a)
		report_write(c, obj, m->req, m, call, a, n, "overflows the block");
}

/* ---- scans ---- */
/* Every slot of slab s, when it is one of cache c's (the page lock and c->dlock held). */
static void scan_slab(struct slab *s, void *arg)
{
	struct cache *c = arg;
	if (s->cache != c || !s->start)
		return;
	for (uint32_t i = 0; i < s->objects; i++) {
		char *slot = s->start + (size_t)i * s->size;
		struct dmeta *m = meta_of(c, slot);
		if (m->state == (DSTATE_ALLOC ^ (uintptr_t)m)) {
			if (c->debug & DBG_Z)
				check_redzones(c, slot, m->req);
		} else if (m->state == (DSTATE_FREE ^ (uintptr_t)m)) {
			const unsigned char *bad = NULL;
			if (c->debug & DBG_P)
				bad = not_all(slot + DBG_RZ, c->osize, poison_of(c));
			if (bad)
				report(c, slot, "poison overwritten (write after free)", bad);
			if (c->debug & DBG_Z)
				check_redzones(c, slot, c->osize);
		} else if (m->state && (c->debug & DBG_Z)) { /* 0: never handed out */
			check_redzones(c, slot, c->osize);
			report(c, slot, "debug state overwritten (overflow of the block?)",
			       (const unsigned char *)m);
		}
	}
}

void sm_debug_scan(const char *when)
{
	for (unsigned i = 0; i < NCLASS; i++) {
		struct cache *c = &sm_g.caches[i];
		if (!(c->debug & (DBG_Z | DBG_P)) || (c->debug & DBG_PROF))
			continue;
		sm_lock(&c->dlock);
		sm_region_lock();
		scan_when = when;
		sm_region_walk_locked(scan_slab, c);
		scan_when = NULL;
		sm_region_unlock();
		sm_unlock(&c->dlock);
	}
	sm_large_debug_scan(when);
}

__attribute__((destructor)) static void scan_at_exit(void)
{
	if (sm_opt.debug & (DBG_Z | DBG_P))
		sm_debug_scan("at exit");
}
