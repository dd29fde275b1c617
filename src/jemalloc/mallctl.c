/* mallctl.c: jemalloc 5's control namespace (mallctl, mallctlnametomib, mallctlbymib) and
 * malloc_stats_print, answered with slubmalloc's own figures.
 * A name is dot-separated components. The table below lists every name that answers; a "#"
 * component is a number (an arena, a bin). Any other name gets ENOENT, as in jemalloc.
 * A MIB holds, per component, the number itself, or the word's index in words[] tagged with
 * WORD_TAG: so a number never stands for a word, nor a word for a number.
 * Reads and writes follow jemalloc's rules: a value of the wrong size is EINVAL (a read still
 * copies what fits, and says how much), a write to a read-only name or any value given to an
 * action is EPERM, a failed action is EFAULT.
 * The stats.* figures are those of the last "epoch" write (or of the first read).
 * There is one heap. "arenas.create" gives new numbers for it: mallocx accepts them, and their
 * decay settings are kept per number. The heap's own are the process's purge delay.
 * Nothing here allocates. The snapshot's lock comes before every engine lock; fork does not
 * take it, and a child starts with it free (sm_ctl_after_fork). */
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "background.h"
#include "compat.h"
#include "config.h"
#include "defrag.h"
#include "diag/diag.h"
#include "engine.h"
#include "lock.h"
#include "mallctl.h"
#include "options.h"
#include "platform.h"
#include "report.h"
#include "stats.h"
#include "trim.h"
#include "types.h"

#define ARENAS_ALL 4096 /* MALLCTL_ARENAS_ALL */
#define WORD_TAG ((size_t)1 << 63) /* a MIB component that is a word */
#define ARENAS_MAX 4095 /* numbers a flag can carry */
#define VERSION "5.3.0-0-slubmalloc" /* jemalloc's API version, then who answers */

/* T_RAW: the handler reads and checks the caller's buffers itself (raw_fn). */
enum ty { T_VOID, T_BOOL, T_UNSIGNED, T_U32, T_SIZE, T_SSIZE, T_U64, T_STR, T_RAW };
static const size_t ty_size[] = {0, sizeof(bool), sizeof(unsigned), sizeof(uint32_t),
				 sizeof(size_t), sizeof(ssize_t), sizeof(uint64_t),
				 sizeof(const char *), 0};
enum { RO = 1, WO = 2, RW = 3, ACT = 0 };

union val {
	bool b;
	unsigned u;
	uint32_t u32;
	size_t z;
	ssize_t sz;
	uint64_t u64;
	const char *s;
};

/* A handler reads into *out (when the caller reads) and takes *in (when it writes). ix: the
 * name's numbers, in order; e->arg: which figure, for a handler of several names. Returns 0 or
 * an errno value. */
struct entry;
typedef int (*handler_fn)(const struct entry *e, const size_t *ix, union val *out,
			  const union val *in);
typedef int (*raw_fn)(void *oldp, size_t *oldlenp, const void *newp, size_t newlen);

struct entry {
	const char *name;
	enum ty ty;
	int access;
	handler_fn fn;
	int arg;
	raw_fn raw; /* T_RAW */
};

/* ---- the heap's numbers ---- */
static unsigned arenas_made;                  /* arenas.create so far (atomic) */
static uint64_t arena_gone[(ARENAS_MAX + 64) / 64]; /* destroyed numbers (atomic bits) */
static ssize_t arena_decay[ARENAS_MAX + 1][2]; /* created arenas' dirty and muzzy decay */
static unsigned tcaches_made;

static unsigned narenas(void)
{
	return 1 + __atomic_load_n(&arenas_made, __ATOMIC_ACQUIRE);
}

bool sm_ctl_arena_exists(unsigned a)
{
	return a == 0 ||
	       (a < narenas() &&
		!(__atomic_load_n(&arena_gone[a / 64], __ATOMIC_RELAXED) >> (a % 64) & 1));
}

/* An arena index of a name: one that exists, or all of them (ARENAS_ALL, or narenas as
 * jemalloc still accepts). */
static bool arena_or_all(size_t a)
{
	return a == ARENAS_ALL || a == narenas() || (a <= ARENAS_MAX && sm_ctl_arena_exists((unsigned)a));
}

/* ---- the statistics' snapshot ---- */
static sm_lock_t snap_lock;
static struct sm_snapshot snap;
static uint64_t epoch, snap_ns;
static bool snap_taken;

static void refresh_locked(void)
{
	sm_stats_snapshot(&snap);
	snap_taken = true;
	snap_ns = sm_os_now_ns();
	epoch++;
}

void sm_ctl_bin(unsigned cls, uint64_t *curregs, uint64_t *curslabs, uint64_t *nonfull)
{
	sm_lock(&snap_lock);
	if (!snap_taken || sm_os_now_ns() - snap_ns > DEFRAG_SNAP_NS)
		refresh_locked();
	*curregs = snap.bin[cls].curregs;
	*curslabs = snap.bin[cls].curslabs;
	*nonfull = snap.bin[cls].nonfull;
	sm_unlock(&snap_lock);
}

/* ---- handlers ---- */
static int h_version(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)e, (void)ix, (void)in;
	out->s = VERSION;
	return 0;
}

static int h_epoch(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)e, (void)ix;
	sm_lock(&snap_lock);
	if (in)
		refresh_locked();
	out->u64 = epoch;
	sm_unlock(&snap_lock);
	return 0;
}

static int h_background(const struct entry *e, const size_t *ix, union val *out,
			const union val *in)
{
	(void)e, (void)ix;
	out->b = sm_bg_running();
	if (in && in->b && !out->b) {
		__atomic_store_n(&sm_opt.background, 1, __ATOMIC_RELAXED);
		sm_bg_start();
		if (!sm_bg_running())
			return EAGAIN;
	}
	if (in && !in->b && out->b)
		return EFAULT; /* the thread, once started, runs until the process ends */
	return 0;
}

/* thread.tcache.flush, tcache.flush and tcache.destroy (arg 1: a number tcache.create gave).
 * The thread's cache stands for every one, and it is flushed. */
static int h_flush(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)out;
	if (e->arg && (!in || in->u >= __atomic_load_n(&tcaches_made, __ATOMIC_RELAXED)))
		return EFAULT;
	if (sm_tcp)
		sm_trim_self(sm_tcp);
	return 0;
}

static int h_thread_arena(const struct entry *e, const size_t *ix, union val *out,
			  const union val *in)
{
	(void)e, (void)ix;
	out->u = 0;
	return in && !sm_ctl_arena_exists(in->u) ? EFAULT : 0;
}

/* arenas.create (arg 0) and tcache.create (arg 1): the next number. */
static int h_create(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	if (e->arg) {
		out->u = __atomic_fetch_add(&tcaches_made, 1, __ATOMIC_RELAXED);
		return 0;
	}
	unsigned n = __atomic_load_n(&arenas_made, __ATOMIC_RELAXED);
	do {
		if (n >= ARENAS_MAX)
			return EAGAIN;
	} while (!__atomic_compare_exchange_n(&arenas_made, &n, n + 1, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	out->u = n + 1;
	return 0;
}

static bool heap_or_all(size_t a)
{
	return a == 0 || a == ARENAS_ALL || a == narenas();
}

static int h_purge(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)e, (void)out, (void)in;
	if (!arena_or_all(ix[0]))
		return ENOENT;
	sm_trim(false);
	return 0;
}

static int h_destroy(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)e, (void)out, (void)in;
	size_t a = ix[0];
	if (heap_or_all(a))
		return EFAULT; /* the heap itself */
	if (a > ARENAS_MAX || !sm_ctl_arena_exists((unsigned)a))
		return ENOENT;
	__atomic_fetch_or(&arena_gone[a / 64], 1ULL << (a % 64), __ATOMIC_RELAXED);
	return 0;
}

/* arena.<i>.{dirty,muzzy}_decay_ms (arg 0, 1), and arenas.* and opt.* (arg 2, 3: the heap's).
 * The heap's dirty decay is the purge delay, its muzzy one 0; a created arena's are kept.
 * -1 is never: a delay of DECAY_NEVER_NS, which reads back as -1. Longer ones are EFAULT. */
#define DECAY_NEVER_NS ((uint64_t)1 << 62)
static int h_decay(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	int muzzy = e->arg & 1;
	size_t a = e->arg < 2 ? ix[0] : 0;
	if (!arena_or_all(a))
		return ENOENT;
	if (in && (in->sz < -1 || (in->sz > 0 && (uint64_t)in->sz >= DECAY_NEVER_NS / 1000000)))
		return EFAULT;
	if (heap_or_all(a)) {
		uint64_t ns = __atomic_load_n(&sm_opt.purge_delay_ns, __ATOMIC_RELAXED);
		out->sz = muzzy ? 0 : ns >= DECAY_NEVER_NS ? -1 : (ssize_t)(ns / 1000000);
		if (in && !muzzy)
			__atomic_store_n(&sm_opt.purge_delay_ns,
					 in->sz < 0 ? DECAY_NEVER_NS : (uint64_t)in->sz * 1000000,
					 __ATOMIC_RELAXED);
		return 0;
	}
	out->sz = __atomic_load_n(&arena_decay[a][muzzy], __ATOMIC_RELAXED);
	if (in)
		__atomic_store_n(&arena_decay[a][muzzy], in->sz, __ATOMIC_RELAXED);
	return 0;
}

/* Fixed figures and options (arg: which). */
enum { K_NARENAS, K_QUANTUM, K_PAGE, K_NBINS, K_ONE, K_BG, K_PROF, K_TRUE, K_FALSE };
static int h_fixed(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	switch (e->arg) {
	case K_NARENAS: out->u = narenas(); break;
	case K_QUANTUM: out->z = MIN_ALIGN; break;
	case K_PAGE: out->z = sm_os_page_size(); break;
	case K_NBINS: out->u = NCLASS; break;
	case K_ONE: out->u = 1; break;
	case K_BG: out->b = sm_opt.background; break;
	case K_PROF: out->b = sm_opt.prof; break;
	default: out->b = e->arg == K_TRUE; break;
	}
	return 0;
}

/* arenas.bin.<j>.{size,nregs,slab_size} (arg 0, 1, 2). */
static int h_bin(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)in;
	if (ix[0] >= NCLASS)
		return ENOENT;
	if (!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE))
		sm_init();
	const struct cache *c = &sm_g.caches[ix[0]];
	if (e->arg == 1)
		out->u32 = c->objects;
	else
		out->z = e->arg ? (size_t)c->pages * SPAGE_SIZE : c->size;
	return 0;
}

enum { S_ALLOCATED, S_ACTIVE, S_RESIDENT, S_MAPPED, S_RETAINED, S_METADATA, S_SMALL, S_LARGE,
       S_PACTIVE, S_PDIRTY, S_PMUZZY };

static size_t stat_of(const struct sm_snapshot *s, int which)
{
	size_t page = sm_os_page_size();
	switch (which) {
	case S_ALLOCATED: return s->allocated;
	case S_ACTIVE: return s->slab_bytes_active + s->large_bytes;
	case S_RESIDENT: return s->resident;
	case S_MAPPED: return s->mapped - (s->retained < s->mapped ? s->retained : s->mapped);
	case S_RETAINED: return s->retained; /* as jemalloc's: mapped, no memory, not in mapped */
	case S_METADATA: return s->slab_mapped / REGION_SIZE * SPAGE_SIZE; /* headers */
	case S_SMALL: return s->small_allocated;
	case S_LARGE: return s->large_bytes;
	case S_PACTIVE: return (s->slab_bytes_active + s->large_bytes) / page;
	case S_PDIRTY: return s->dirty_bytes / page;
	default: return 0; /* muzzy: slubmalloc purges with MADV_DONTNEED, never MADV_FREE */
	}
}

/* stats.* (arg: S_*), stats.arenas.<i>.* (the same, ARENA_STAT set) and
 * stats.arenas.<i>.bins.<j>.{curregs,curslabs,nonfull_slabs} (BIN_STAT + 0, 1, 2), from the
 * snapshot (taken now if none was). The heap's figures stand for arena 0 and for all; a created
 * arena holds nothing of its own. */
#define ARENA_STAT 0x100
#define BIN_STAT 0x200
static int h_stat(const struct entry *e, const size_t *ix, union val *out, const union val *in)
{
	(void)in;
	bool heap = true;
	if (e->arg & (ARENA_STAT | BIN_STAT)) {
		if (!arena_or_all(ix[0]) || ((e->arg & BIN_STAT) && ix[1] >= NCLASS))
			return ENOENT;
		heap = heap_or_all(ix[0]);
	}
	sm_lock(&snap_lock);
	if (!snap_taken)
		refresh_locked();
	if (!heap)
		out->z = 0;
	else if (e->arg == BIN_STAT)
		out->z = snap.bin[ix[1]].curregs;
	else if (e->arg == BIN_STAT + 1)
		out->z = snap.bin[ix[1]].curslabs;
	else if (e->arg == BIN_STAT + 2)
		out->z = snap.bin[ix[1]].nonfull;
	else
		out->z = stat_of(&snap, e->arg & 0xff);
	sm_unlock(&snap_lock);
	return 0;
}

static int h_prof_dump(const struct entry *e, const size_t *ix, union val *out,
		       const union val *in)
{
	(void)e, (void)ix, (void)out;
	return sm_prof_dump(in ? in->s : NULL) < 0 ? EFAULT : 0;
}

/* experimental.utilization.query: one pointer in; out, jemalloc's 48 bytes: the slab a new
 * block would come from (not given: NULL), the pointer's slab's free objects, objects and
 * bytes, its bin's free objects and objects. Wrong sizes: EINVAL, nothing written. */
static int r_util_query(void *oldp, size_t *oldlenp, const void *newp, size_t newlen)
{
	struct {
		void *slabcur;
		size_t nfree, nregs, size, bin_nfree, bin_nregs;
	} o;
	if (!oldp || !oldlenp || *oldlenp != sizeof o || !newp || newlen != sizeof(void *))
		return EINVAL;
	const void *p;
	memcpy(&p, newp, sizeof p);
	struct sm_util u;
	sm_util_of(p, &u);
	memset(&o, 0, sizeof o);
	o.nfree = u.nfree, o.nregs = u.nregs, o.size = u.size;
	if (u.slab) {
		uint64_t curregs, curslabs, nonfull;
		sm_ctl_bin(u.cls, &curregs, &curslabs, &nonfull);
		o.bin_nregs = curslabs * u.nregs;
		o.bin_nfree = o.bin_nregs > curregs ? o.bin_nregs - curregs : 0;
	}
	memcpy(oldp, &o, sizeof o);
	return 0;
}

/* experimental.utilization.batch_query: n pointers in, n of {nfree, nregs, size} out. */
static int r_util_batch(void *oldp, size_t *oldlenp, const void *newp, size_t newlen)
{
	size_t n = newlen / sizeof(void *);
	if (!oldp || !oldlenp || !newp || !newlen || newlen % sizeof(void *) ||
	    *oldlenp != n * 3 * sizeof(size_t))
		return EINVAL;
	for (size_t i = 0; i < n; i++) {
		const void *p;
		memcpy(&p, (const char *)newp + i * sizeof p, sizeof p);
		struct sm_util u;
		sm_util_of(p, &u);
		size_t o[3] = {u.nfree, u.nregs, u.size};
		memcpy((char *)oldp + i * sizeof o, o, sizeof o);
	}
	return 0;
}

static const struct entry table[] = {
	{"version", T_STR, RO, h_version, 0, NULL},
	{"epoch", T_U64, RW, h_epoch, 0, NULL},
	{"background_thread", T_BOOL, RW, h_background, 0, NULL},
	{"thread.tcache.flush", T_VOID, ACT, h_flush, 0, NULL},
	{"thread.arena", T_UNSIGNED, RW, h_thread_arena, 0, NULL},
	{"tcache.create", T_UNSIGNED, RO, h_create, 1, NULL},
	{"tcache.flush", T_UNSIGNED, WO, h_flush, 1, NULL},
	{"tcache.destroy", T_UNSIGNED, WO, h_flush, 1, NULL},
	{"arena.#.purge", T_VOID, ACT, h_purge, 0, NULL},
	{"arena.#.decay", T_VOID, ACT, h_purge, 0, NULL},
	{"arena.#.destroy", T_VOID, ACT, h_destroy, 0, NULL},
	{"arena.#.dirty_decay_ms", T_SSIZE, RW, h_decay, 0, NULL},
	{"arena.#.muzzy_decay_ms", T_SSIZE, RW, h_decay, 1, NULL},
	{"arenas.narenas", T_UNSIGNED, RO, h_fixed, K_NARENAS, NULL},
	{"arenas.create", T_UNSIGNED, RO, h_create, 0, NULL},
	{"arenas.dirty_decay_ms", T_SSIZE, RW, h_decay, 2, NULL},
	{"arenas.muzzy_decay_ms", T_SSIZE, RW, h_decay, 3, NULL},
	{"arenas.quantum", T_SIZE, RO, h_fixed, K_QUANTUM, NULL},
	{"arenas.page", T_SIZE, RO, h_fixed, K_PAGE, NULL},
	{"arenas.nbins", T_UNSIGNED, RO, h_fixed, K_NBINS, NULL},
	{"arenas.bin.#.size", T_SIZE, RO, h_bin, 0, NULL},
	{"arenas.bin.#.nregs", T_U32, RO, h_bin, 1, NULL},
	{"arenas.bin.#.slab_size", T_SIZE, RO, h_bin, 2, NULL},
	{"stats.allocated", T_SIZE, RO, h_stat, S_ALLOCATED, NULL},
	{"stats.active", T_SIZE, RO, h_stat, S_ACTIVE, NULL},
	{"stats.resident", T_SIZE, RO, h_stat, S_RESIDENT, NULL},
	{"stats.mapped", T_SIZE, RO, h_stat, S_MAPPED, NULL},
	{"stats.retained", T_SIZE, RO, h_stat, S_RETAINED, NULL},
	{"stats.metadata", T_SIZE, RO, h_stat, S_METADATA, NULL},
	{"stats.arenas.#.pactive", T_SIZE, RO, h_stat, ARENA_STAT | S_PACTIVE, NULL},
	{"stats.arenas.#.pdirty", T_SIZE, RO, h_stat, ARENA_STAT | S_PDIRTY, NULL},
	{"stats.arenas.#.pmuzzy", T_SIZE, RO, h_stat, ARENA_STAT | S_PMUZZY, NULL},
	{"stats.arenas.#.small.allocated", T_SIZE, RO, h_stat, ARENA_STAT | S_SMALL, NULL},
	{"stats.arenas.#.large.allocated", T_SIZE, RO, h_stat, ARENA_STAT | S_LARGE, NULL},
	{"stats.arenas.#.bins.#.curregs", T_SIZE, RO, h_stat, BIN_STAT, NULL},
	{"stats.arenas.#.bins.#.curslabs", T_SIZE, RO, h_stat, BIN_STAT + 1, NULL},
	{"stats.arenas.#.bins.#.nonfull_slabs", T_SIZE, RO, h_stat, BIN_STAT + 2, NULL},
	{"opt.narenas", T_UNSIGNED, RO, h_fixed, K_ONE, NULL},
	{"opt.background_thread", T_BOOL, RO, h_fixed, K_BG, NULL},
	{"opt.dirty_decay_ms", T_SSIZE, RO, h_decay, 2, NULL},
	{"opt.muzzy_decay_ms", T_SSIZE, RO, h_decay, 3, NULL},
	{"opt.tcache", T_BOOL, RO, h_fixed, K_TRUE, NULL},
	{"opt.prof", T_BOOL, RO, h_fixed, K_PROF, NULL},
	{"config.debug", T_BOOL, RO, h_fixed, K_FALSE, NULL},
	{"config.stats", T_BOOL, RO, h_fixed, K_TRUE, NULL},
	{"config.prof", T_BOOL, RO, h_fixed, K_TRUE, NULL},
	{"prof.dump", T_STR, WO, h_prof_dump, 0, NULL},
	{"experimental.utilization.query", T_RAW, RW, NULL, 0, r_util_query},
	{"experimental.utilization.batch_query", T_RAW, RW, NULL, 0, r_util_batch},
};
#define NENTRIES (sizeof table / sizeof table[0])
#define MAX_COMPONENTS 8
#define MAX_NUMBERS 2

/* The words of the table's names; a MIB holds a word's index here. Filled once, at the first
 * call (no allocation: pointers into the table's names, with lengths). */
static struct word {
	const char *at;
	size_t len;
} words[64];
static unsigned nwords;
static int words_ready; /* 0: not yet; 1: being built; 2: ready */

static unsigned word_find(const char *at, size_t len)
{
	for (unsigned i = 0; i < nwords; i++)
		if (words[i].len == len && !memcmp(words[i].at, at, len))
			return i;
	return UINT32_MAX;
}

static void words_build(void)
{
	int st = 0;
	if (__atomic_compare_exchange_n(&words_ready, &st, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		for (size_t e = 0; e < NENTRIES; e++) {
			for (const char *p = table[e].name; *p;) {
				size_t len = strcspn(p, ".");
				if (!(len == 1 && *p == '#') && word_find(p, len) == UINT32_MAX &&
				    nwords < sizeof words / sizeof words[0])
					words[nwords++] = (struct word){p, len};
				p += len + (p[len] == '.');
			}
		}
		__atomic_store_n(&words_ready, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&words_ready, __ATOMIC_ACQUIRE) != 2)
		sm_os_yield();
}

/* A child of fork: the snapshot's lock free, and the words built again if a thread of the
 * parent was building them. */
void sm_ctl_after_fork(void)
{
	sm_unlock(&snap_lock);
	if (__atomic_load_n(&words_ready, __ATOMIC_RELAXED) == 1) /* a thread was building them */
		nwords = 0, words_ready = 0;
}

/* A name's MIB: each number itself, each word's index tagged. Returns the components, or 0 when the
 * name is malformed (an empty component, a number out of range, too many components). */
static size_t name_mib(const char *name, size_t *mib)
{
	size_t n = 0;
	for (const char *p = name;;) {
		size_t len = strcspn(p, ".");
		if (!len || n == MAX_COMPONENTS)
			return 0;
		if (*p >= '0' && *p <= '9') {
			size_t v = 0;
			for (size_t i = 0; i < len; i++) {
				if (p[i] < '0' || p[i] > '9' || v >= WORD_TAG / 10)
					return 0;
				v = v * 10 + (size_t)(p[i] - '0');
			}
			mib[n++] = v;
		} else {
			unsigned w = word_find(p, len);
			if (w == UINT32_MAX)
				return 0;
			mib[n++] = WORD_TAG | w;
		}
		if (!p[len])
			return n;
		p += len + 1;
	}
}

/* The entry a MIB names, with its numbers in ix[]. */
static const struct entry *mib_entry(const size_t *mib, size_t n, size_t *ix)
{
	for (size_t e = 0; e < NENTRIES; e++) {
		const char *p = table[e].name;
		size_t k = 0, ni = 0;
		for (; *p && k < n; k++) {
			size_t len = strcspn(p, ".");
			size_t w = mib[k] & ~WORD_TAG;
			if (len == 1 && *p == '#') {
				if (mib[k] & WORD_TAG)
					break;
				if (ni < MAX_NUMBERS)
					ix[ni++] = mib[k];
			} else if (!(mib[k] & WORD_TAG) || w >= nwords || words[w].len != len ||
				   memcmp(words[w].at, p, len)) {
				break;
			}
			p += len + (p[len] == '.');
		}
		if (!*p && k == n)
			return &table[e];
	}
	return NULL;
}

static int ctl(const size_t *mib, size_t n, void *oldp, size_t *oldlenp, void *newp,
	       size_t newlen)
{
	size_t ix[MAX_NUMBERS] = {0, 0};
	const struct entry *e = mib_entry(mib, n, ix);
	if (!e)
		return ENOENT;
	if (e->ty == T_RAW)
		return e->raw(oldp, oldlenp, newp, newlen);
	bool reads = oldp && oldlenp, writes = newp || newlen;
	if (e->access == ACT && (oldp || oldlenp || writes))
		return EPERM;
	if ((writes && !(e->access & WO)) || (reads && e->access == WO))
		return EPERM;
	size_t size = ty_size[e->ty];
	if (writes && (!newp || newlen != size))
		return EINVAL;
	if (e->fn == h_create && reads && *oldlenp != size) { /* no number used up */
		*oldlenp = 0;
		return EINVAL;
	}
	union val in, out;
	memset(&out, 0, sizeof out);
	if (writes)
		memcpy(&in, newp, size);
	int err = e->fn(e, ix, &out, writes ? &in : NULL);
	if (err || !reads)
		return err;
	if (*oldlenp != size) {
		size_t k = *oldlenp < size ? *oldlenp : size;
		memcpy(oldp, &out, k);
		*oldlenp = k;
		return EINVAL;
	}
	memcpy(oldp, &out, size);
	return 0;
}

int sm_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	size_t mib[MAX_COMPONENTS];
	if (!name)
		return EINVAL;
	words_build();
	size_t n = name_mib(name, mib);
	return n ? ctl(mib, n, oldp, oldlenp, newp, newlen) : ENOENT;
}

/* jemalloc's: *miblenp components at most (a shorter MIB is the name's start). */
int sm_mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp)
{
	size_t mib[MAX_COMPONENTS], ix[MAX_NUMBERS];
	if (!name || !mibp || !miblenp)
		return EINVAL;
	words_build();
	size_t n = name_mib(name, mib);
	if (!n || !mib_entry(mib, n, ix))
		return ENOENT;
	if (*miblenp > n)
		*miblenp = n;
	memcpy(mibp, mib, *miblenp * sizeof *mib);
	return 0;
}

int sm_mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp, void *newp,
		    size_t newlen)
{
	if (!mib || !miblen || miblen > MAX_COMPONENTS)
		return ENOENT;
	words_build();
	return ctl(mib, miblen, oldp, oldlenp, newp, newlen);
}

/* ---- malloc_stats_print ---- */
struct sink {
	void (*cb)(void *, const char *);
	void *opaque;
	char buf[512];
	size_t n;
};

static void sink_flush(struct sink *k)
{
	if (!k->n)
		return;
	k->buf[k->n] = 0;
	if (k->cb)
		k->cb(k->opaque, k->buf);
	else
		sm_write(2, k->buf);
	k->n = 0;
}

static void sink_str(struct sink *k, const char *s)
{
	for (; *s; s++) {
		if (k->n == sizeof k->buf - 1)
			sink_flush(k);
		k->buf[k->n++] = *s;
	}
}

static void sink_num(struct sink *k, uint64_t v)
{
	char d[24];
	int i = (int)sizeof d - 1;
	d[i] = 0;
	do
		d[--i] = (char)('0' + v % 10);
	while ((v /= 10));
	sink_str(k, d + i);
}

static void sink_pair(struct sink *k, const char *name, uint64_t v)
{
	sink_str(k, name);
	sink_num(k, v);
	sink_str(k, "\n");
}

/* jemalloc's totals, then one line per size class in use; opts is not read. The callback
 * runs with no lock held: it may call malloc, or mallctl. */
void sm_malloc_stats_print(void (*cb)(void *, const char *), void *opaque, const char *opts)
{
	(void)opts;
	struct sm_snapshot copy; /* the callback runs with no lock held */
	struct sink k = {.cb = cb, .opaque = opaque, .n = 0};
	sm_lock(&snap_lock);
	refresh_locked();
	copy = snap;
	sm_unlock(&snap_lock);
	const struct sm_snapshot *s = &copy;
	sink_str(&k, "___ Begin jemalloc statistics (slubmalloc) ___\nVersion: \"");
	sink_str(&k, VERSION "\"\nArenas: 1\n");
	sink_pair(&k, "Quantum size: ", MIN_ALIGN);
	sink_pair(&k, "Page size: ", sm_os_page_size());
	sink_pair(&k, "Allocated: ", stat_of(s, S_ALLOCATED));
	sink_pair(&k, "active: ", stat_of(s, S_ACTIVE));
	sink_pair(&k, "metadata: ", stat_of(s, S_METADATA));
	sink_pair(&k, "resident: ", stat_of(s, S_RESIDENT));
	sink_pair(&k, "mapped: ", stat_of(s, S_MAPPED));
	sink_pair(&k, "retained: ", 0);
	sink_str(&k, "bins: bin size regs curregs curslabs nonfull_slabs\n");
	for (unsigned j = 0; j < NCLASS; j++) {
		if (!s->bin[j].curslabs)
			continue;
		const struct cache *c = &sm_g.caches[j];
		uint64_t col[] = {j, c->size, c->objects, s->bin[j].curregs, s->bin[j].curslabs,
				  s->bin[j].nonfull};
		for (unsigned i = 0; i < 6; i++) {
			sink_str(&k, i ? " " : "  ");
			sink_num(&k, col[i]);
		}
		sink_str(&k, "\n");
	}
	sink_pair(&k, "large allocated: ", s->large_bytes);
	sink_str(&k, "--- End jemalloc statistics ---\n");
	sink_flush(&k);
}
