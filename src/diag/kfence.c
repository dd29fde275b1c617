/* kfence.c: sampled guard pages for production (the kernel's KFENCE, tcmalloc's GWP-ASan),
 * SLUBMALLOC_KFENCE=N.
 * About one allocation in N of a size class of at most a page gets a page of its own in the
 * pool, between two guard pages. It ends where the second guard starts (to 16 bytes): an
 * access past either end faults, and the fault handler reports it with the allocating and
 * freeing stacks, then aborts. A freed sampled object's page loses its memory and all access,
 * and its slot is reused last: a use after free faults too. The bytes of the page around the
 * object are checked when it is freed.
 * sample.c chooses the allocations, with no work on the fastpaths: about one in N, at most
 * one per SAMPLE_GAP_NS.
 * Invariants: slot states change under kf_lock (a leaf lock); a slot's page is read-write
 * exactly while its object is handed out; free slots are taken oldest first. */
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "config.h"
#include "diag.h"
#include "engine.h"
#include "kfence.h"
#include "lock.h"
#include "platform.h"
#include "report.h"
#include "types.h"

#define KF_SLOTS 255
#define KF_FRAMES 16
#define KF_BYTE 0xfd

enum { KF_UNUSED, KF_LIVE, KF_FREED };

struct kslot {
	uintptr_t obj;
	size_t size;
	uint32_t state, alloc_tid, free_tid;
	int nalloc, nfree;
	void *alloc_bt[KF_FRAMES], *free_bt[KF_FRAMES];
};

uint32_t sm_kfence_every; /* N; 0: off */
static char *pool;
static size_t page, pool_len;
static sm_lock_t kf_lock;
static struct kslot slots[KF_SLOTS];
static uint32_t ring[KF_SLOTS], ring_head, ring_n; /* free slots, oldest first */

static char *slot_page(uint32_t i)
{
	return pool + (2 * (size_t)i + 1) * page;
}

bool sm_kfence_has(const void *p)
{
	return pool && (uintptr_t)p - (uintptr_t)pool < pool_len;
}

void sm_kfence_init(uint32_t every)
{
	page = sm_os_page_size();
	pool_len = (2 * (size_t)KF_SLOTS + 1) * page;
	pool = sm_os_reserve(pool_len);
	if (!pool)
		return;
	for (uint32_t i = 0; i < KF_SLOTS; i++)
		ring[i] = i;
	ring_n = KF_SLOTS;
	sm_kfence_every = every;
}

/* A sampled object of size bytes (sample.c chose this allocation), or NULL. */
void *sm_kfence_alloc(size_t size)
{
	if (size == 0 || size > page || sm_in_unwind)
		return NULL;
	void *bt[KF_FRAMES];
	int n = sm_backtrace(bt, KF_FRAMES, NULL);
	sm_lock(&kf_lock);
	if (!ring_n) {
		sm_unlock(&kf_lock);
		return NULL;
	}
	uint32_t i = ring[ring_head];
	ring_head = (ring_head + 1) % KF_SLOTS;
	ring_n--;
	struct kslot *s = &slots[i];
	char *pg = slot_page(i);
	sm_os_protect(pg, page, true);
	char *p = (char *)((uintptr_t)(pg + page - size) & ~(uintptr_t)(MIN_ALIGN - 1));
	memset(pg, KF_BYTE, (size_t)(p - pg));
	memset(p + size, KF_BYTE, (size_t)(pg + page - (p + size)));
	s->obj = (uintptr_t)p;
	s->size = size;
	s->state = KF_LIVE;
	s->alloc_tid = sm_os_tid();
	s->nalloc = n;
	memcpy(s->alloc_bt, bt, (size_t)n * sizeof bt[0]);
	s->nfree = 0;
	sm_unlock(&kf_lock);
	return p;
}

/* ---- reports ---- */
/* "slubmalloc: KFENCE: <what> at 0x.. (<where> object 0x.., size S)", the stacks, abort. */
SM_NORETURN static void report(const struct kslot *s, const char *what, uintptr_t at)
{
	sm_write(2, "slubmalloc: KFENCE: ");
	sm_write(2, what);
	sm_write(2, " at ");
	sm_write_hex(2, at);
	sm_write(2, " (");
	if (at < s->obj) {
		sm_write_num(2, s->obj - at, 10);
		sm_write(2, " bytes left of");
	} else if (at >= s->obj + s->size) {
		sm_write_num(2, at - (s->obj + s->size), 10);
		sm_write(2, " bytes right of");
	} else {
		sm_write(2, "offset ");
		sm_write_num(2, at - s->obj, 10);
		sm_write(2, " in");
	}
	sm_write(2, " object ");
	sm_write_hex(2, s->obj);
	sm_write(2, ", size ");
	sm_write_num(2, s->size, 10);
	sm_write(2, s->state == KF_FREED ? ", freed)\n" : ")\n");
	sm_write_stack("allocated", s->alloc_tid, s->alloc_bt, s->nalloc);
	if (s->state == KF_FREED)
		sm_write_stack("freed", s->free_tid, s->free_bt, s->nfree);
	abort();
}

/* fault.c's part: a fault in the pool is a bug of the program's, reported here. */
void sm_kfence_fault(void *addr)
{
	if (!sm_kfence_has(addr))
		return;
	uintptr_t a = (uintptr_t)addr;
	size_t pg = (a - (uintptr_t)pool) / page;
	uint32_t i;
	if (pg % 2) { /* an object's page: freed */
		i = (uint32_t)(pg / 2);
	} else { /* a guard: the object on the nearer side */
		bool left = (a - (uintptr_t)pool) % page < page / 2;
		i = (uint32_t)(pg / 2) - (left && pg ? 1 : 0);
		if (i >= KF_SLOTS)
			i = KF_SLOTS - 1;
	}
	const struct kslot *s = &slots[i];
	if (s->state == KF_UNUSED)
		return;
	report(s, s->state == KF_FREED ? "use after free" : "out-of-bounds access", a);
}

/* The first byte of [lo, hi) that is not KF_BYTE, or NULL; eight at a time where aligned. */
static const unsigned char *changed(const unsigned char *lo, const unsigned char *hi)
{
	const uint64_t pat = 0x0101010101010101ULL * KF_BYTE;
	for (; lo < hi && ((uintptr_t)lo & 7); lo++)
		if (*lo != KF_BYTE)
			return lo;
	for (; lo + 8 <= hi; lo += 8)
		if (*(const uint64_t *)(const void *)lo != pat)
			break;
	for (; lo < hi; lo++)
		if (*lo != KF_BYTE)
			return lo;
	return NULL;
}

/* The slot of p, a pointer into the pool; reports p unless it is a live object's start. */
static struct kslot *live_slot(const void *p, const char *call)
{
	size_t pg = ((uintptr_t)p - (uintptr_t)pool) / page;
	struct kslot *s = pg % 2 ? &slots[pg / 2] : NULL;
	if (s && s->obj == (uintptr_t)p && s->state == KF_FREED)
		report(s, "double free", (uintptr_t)p);
	if (!s || s->obj != (uintptr_t)p || s->state != KF_LIVE)
		sm_fatal(call, p, "(not the start of a KFENCE object)");
	return s;
}

size_t sm_kfence_usable(const void *p)
{
	return live_slot(p, "invalid malloc_usable_size")->size;
}

void sm_kfence_free(void *p)
{
	void *bt[KF_FRAMES];
	int n = sm_backtrace(bt, KF_FRAMES, NULL);
	sm_lock(&kf_lock);
	struct kslot *s = live_slot(p, "invalid free");
	char *pg = slot_page((uint32_t)(s - slots));
	const unsigned char *bad = changed((unsigned char *)pg, (unsigned char *)s->obj);
	if (!bad)
		bad = changed((unsigned char *)s->obj + s->size, (unsigned char *)pg + page);
	if (bad) {
		sm_unlock(&kf_lock);
		report(s, "out-of-bounds write (seen at free)", (uintptr_t)bad);
	}
	s->state = KF_FREED;
	s->free_tid = sm_os_tid();
	s->nfree = n;
	memcpy(s->free_bt, bt, (size_t)n * sizeof bt[0]);
	ring[(ring_head + ring_n) % KF_SLOTS] = (uint32_t)(s - slots);
	ring_n++;
	sm_os_protect(pg, page, false); /* (the page stays resident: the pool is small) */
	sm_unlock(&kf_lock);
}

void sm_kfence_lock_all(void)
{
	sm_lock(&kf_lock);
}

void sm_kfence_unlock_all(void)
{
	sm_unlock(&kf_lock);
}
