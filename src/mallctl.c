/* mallctl.c: jemalloc 5's control namespace (mallctl, mallctlnametomib, mallctlbymib) and
 * malloc_stats_print, answered with slubmalloc's own figures.
 * A name is dot-separated components. The table below lists every name that answers; a "#"
 * component is a number (an arena, a bin). Any other name gets ENOENT, as in jemalloc.
 * A MIB holds, per component, the word's index in words[] or the number itself.
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

#include "internal.h"

#define ARENAS_ALL 4096 /* MALLCTL_ARENAS_ALL */
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
 * name's numbers, in order. Returns 0 or an errno value. */
typedef int (*handler_fn)(const size_t *ix, union val *out, const union val *in);
typedef int (*raw_fn)(void *oldp, size_t *oldlenp, const void *newp, size_t newlen);

struct entry {
	const char *name;
	enum ty ty;
	int access;
	handler_fn fn;
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
	       (a < narenas() && !(__atomic_load_n(&arena_gone[a / 64], __ATOMIC_RELAXED) >> (a % 64) & 1));
}

/* An arena index of a name: one that exists, or all of them (ARENAS_ALL, or narenas as
 * jemalloc still accepts). */
static bool arena_or_all(size_t a)
{
	return a == ARENAS_ALL || a == narenas() || (a <= ARENAS_MAX && sm_ctl_arena_exists((unsigned)a));
}

/* ---- the statistics' snapshot ---- */
static sm_lock_t snap_lock, print_lock; /* print_lock: malloc_stats_print's copy */
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

void sm_ctl_after_fork(void)
{
	sm_unlock(&snap_lock);
	sm_unlock(&print_lock);
}

/* One figure of the snapshot (taken now if none was), under its lock. */
#define SNAP_READ(expr)                        \
	do {                                   \
		sm_lock(&snap_lock);           \
		if (!snap_taken)               \
			refresh_locked();      \
		out->z = (size_t)(expr);       \
		sm_unlock(&snap_lock);         \
	} while (0)


/* ---- handlers ---- */
static int h_version(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->s = VERSION;
	return 0;
}

static int h_epoch(const size_t *ix, union val *out, const union val *in)
{
	(void)ix;
	sm_lock(&snap_lock);
	if (in)
		refresh_locked();
	out->u64 = epoch;
	sm_unlock(&snap_lock);
	return 0;
}

static int h_background(const size_t *ix, union val *out, const union val *in)
{
	(void)ix;
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

static int h_tcache_flush(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)out, (void)in;
	if (sm_tcp)
		sm_trim_self(sm_tcp);
	return 0;
}

static int h_thread_arena(const size_t *ix, union val *out, const union val *in)
{
	(void)ix;
	out->u = 0;
	return in && !sm_ctl_arena_exists(in->u) ? EFAULT : 0;
}

static int h_tcache_create(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->u = __atomic_fetch_add(&tcaches_made, 1, __ATOMIC_RELAXED);
	return 0;
}

/* tcache.flush and tcache.destroy: a number tcache.create gave. The thread's cache stands for
 * every one, and it is flushed. */
static int h_tcache_num(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)out;
	if (in->u >= __atomic_load_n(&tcaches_made, __ATOMIC_RELAXED))
		return EFAULT;
	if (sm_tcp)
		sm_trim_self(sm_tcp);
	return 0;
}

static int h_arena_purge(const size_t *ix, union val *out, const union val *in)
{
	(void)out, (void)in;
	if (!arena_or_all(ix[0]))
		return ENOENT;
	sm_trim();
	return 0;
}

static int h_arena_destroy(const size_t *ix, union val *out, const union val *in)
{
	(void)out, (void)in;
	size_t a = ix[0];
	if (a == 0 || a == ARENAS_ALL || a == narenas())
		return EFAULT; /* the heap itself */
	if (a > ARENAS_MAX || !sm_ctl_arena_exists((unsigned)a))
		return ENOENT;
	__atomic_fetch_or(&arena_gone[a / 64], 1ULL << (a % 64), __ATOMIC_RELAXED);
	return 0;
}

/* The heap's decay is the purge delay; a created arena's is only kept. */
static int arena_decay_rw(size_t a, int which, union val *out, const union val *in)
{
	if (!arena_or_all(a))
		return ENOENT;
	bool heap = a == 0 || a == ARENAS_ALL || a == narenas();
	if (heap) {
		out->sz = which ? 0 : (ssize_t)(sm_opt.purge_delay_ns / 1000000);
		if (in && !which) {
			if (in->sz < -1)
				return EFAULT;
			uint64_t ms = in->sz < 0 ? UINT64_MAX / 1000000 : (uint64_t)in->sz;
			__atomic_store_n(&sm_opt.purge_delay_ns, ms * 1000000, __ATOMIC_RELAXED);
		}
		return 0;
	}
	out->sz = __atomic_load_n(&arena_decay[a][which], __ATOMIC_RELAXED);
	if (in) {
		if (in->sz < -1)
			return EFAULT;
		__atomic_store_n(&arena_decay[a][which], in->sz, __ATOMIC_RELAXED);
	}
	return 0;
}

static int h_arena_dirty(const size_t *ix, union val *out, const union val *in)
{
	return arena_decay_rw(ix[0], 0, out, in);
}

static int h_arena_muzzy(const size_t *ix, union val *out, const union val *in)
{
	return arena_decay_rw(ix[0], 1, out, in);
}

static int h_arenas_dirty(const size_t *ix, union val *out, const union val *in)
{
	(void)ix;
	return arena_decay_rw(0, 0, out, in);
}

static int h_arenas_muzzy(const size_t *ix, union val *out, const union val *in)
{
	(void)ix;
	return arena_decay_rw(0, 1, out, in);
}

static int h_narenas(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->u = narenas();
	return 0;
}

static int h_arenas_create(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	unsigned n = __atomic_load_n(&arenas_made, __ATOMIC_RELAXED);
	do {
		if (n >= ARENAS_MAX)
			return EAGAIN;
	} while (!__atomic_compare_exchange_n(&arenas_made, &n, n + 1, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	out->u = n + 1;
	return 0;
}

static int h_quantum(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->z = MIN_ALIGN;
	return 0;
}

static int h_page(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->z = sm_os_page_size();
	return 0;
}

static int h_nbins(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->u = NCLASS;
	return 0;
}

static const struct cache *bin_cache(size_t j)
{
	if (!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE))
		sm_init();
	return j < NCLASS ? &sm_g.caches[j] : NULL;
}

static int h_bin_size(const size_t *ix, union val *out, const union val *in)
{
	(void)in;
	const struct cache *c = bin_cache(ix[0]);
	if (!c)
		return ENOENT;
	out->z = c->size;
	return 0;
}

static int h_bin_nregs(const size_t *ix, union val *out, const union val *in)
{
	(void)in;
	const struct cache *c = bin_cache(ix[0]);
	if (!c)
		return ENOENT;
	out->u32 = c->objects;
	return 0;
}

static int h_bin_slab_size(const size_t *ix, union val *out, const union val *in)
{
	(void)in;
	const struct cache *c = bin_cache(ix[0]);
	if (!c)
		return ENOENT;
	out->z = (size_t)c->pages * SPAGE_SIZE;
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
	case S_MAPPED: return s->mapped;
	case S_METADATA: return s->slab_mapped / REGION_SIZE * SPAGE_SIZE; /* headers */
	case S_SMALL: return s->small_allocated;
	case S_LARGE: return s->large_bytes;
	case S_PACTIVE: return (s->slab_bytes_active + s->large_bytes) / page;
	case S_PDIRTY: return s->dirty_bytes / page;
	default: return 0; /* retained, muzzy: slubmalloc unmaps what it gives back */
	}
}

#define STAT_HANDLER(fn, which)                                                     \
	static int fn(const size_t *ix, union val *out, const union val *in)        \
	{                                                                           \
		(void)ix, (void)in;                                                 \
		SNAP_READ(stat_of(&snap, which));                                          \
		return 0;                                                           \
	}
STAT_HANDLER(h_allocated, S_ALLOCATED)
STAT_HANDLER(h_active, S_ACTIVE)
STAT_HANDLER(h_resident, S_RESIDENT)
STAT_HANDLER(h_mapped, S_MAPPED)
STAT_HANDLER(h_retained, S_RETAINED)
STAT_HANDLER(h_metadata, S_METADATA)

/* stats.arenas.<i>.*: the heap's figures for 0 and for all; a created arena holds nothing of
 * its own. */
#define ARENA_STAT_HANDLER(fn, which)                                               \
	static int fn(const size_t *ix, union val *out, const union val *in)        \
	{                                                                           \
		(void)in;                                                           \
		if (!arena_or_all(ix[0]))                                           \
			return ENOENT;                                              \
		bool heap = ix[0] == 0 || ix[0] == ARENAS_ALL || ix[0] == narenas(); \
		SNAP_READ(heap ? stat_of(&snap, which) : 0);                               \
		return 0;                                                           \
	}
ARENA_STAT_HANDLER(h_a_pactive, S_PACTIVE)
ARENA_STAT_HANDLER(h_a_pdirty, S_PDIRTY)
ARENA_STAT_HANDLER(h_a_pmuzzy, S_PMUZZY)
ARENA_STAT_HANDLER(h_a_small, S_SMALL)
ARENA_STAT_HANDLER(h_a_large, S_LARGE)

#define BIN_STAT_HANDLER(fn, field)                                                 \
	static int fn(const size_t *ix, union val *out, const union val *in)        \
	{                                                                           \
		(void)in;                                                           \
		if (!arena_or_all(ix[0]) || ix[1] >= NCLASS)                        \
			return ENOENT;                                              \
		bool heap = ix[0] == 0 || ix[0] == ARENAS_ALL || ix[0] == narenas(); \
		SNAP_READ(heap ? snap.bin[ix[1]].field : 0);                        \
		return 0;                                                           \
	}
BIN_STAT_HANDLER(h_curregs, curregs)
BIN_STAT_HANDLER(h_curslabs, curslabs)
BIN_STAT_HANDLER(h_nonfull, nonfull)

static int h_opt_narenas(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->u = 1;
	return 0;
}

static int h_opt_background(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->b = sm_opt.background;
	return 0;
}

static int h_true(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->b = true;
	return 0;
}

static int h_false(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->b = false;
	return 0;
}

static int h_prof(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)in;
	out->b = sm_opt.prof;
	return 0;
}

static int h_prof_dump(const size_t *ix, union val *out, const union val *in)
{
	(void)ix, (void)out;
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
	{"version", T_STR, RO, h_version, NULL},
	{"epoch", T_U64, RW, h_epoch, NULL},
	{"background_thread", T_BOOL, RW, h_background, NULL},
	{"thread.tcache.flush", T_VOID, ACT, h_tcache_flush, NULL},
	{"thread.arena", T_UNSIGNED, RW, h_thread_arena, NULL},
	{"tcache.create", T_UNSIGNED, RO, h_tcache_create, NULL},
	{"tcache.flush", T_UNSIGNED, WO, h_tcache_num, NULL},
	{"tcache.destroy", T_UNSIGNED, WO, h_tcache_num, NULL},
	{"arena.#.purge", T_VOID, ACT, h_arena_purge, NULL},
	{"arena.#.decay", T_VOID, ACT, h_arena_purge, NULL},
	{"arena.#.destroy", T_VOID, ACT, h_arena_destroy, NULL},
	{"arena.#.dirty_decay_ms", T_SSIZE, RW, h_arena_dirty, NULL},
	{"arena.#.muzzy_decay_ms", T_SSIZE, RW, h_arena_muzzy, NULL},
	{"arenas.narenas", T_UNSIGNED, RO, h_narenas, NULL},
	{"arenas.create", T_UNSIGNED, RO, h_arenas_create, NULL},
	{"arenas.dirty_decay_ms", T_SSIZE, RW, h_arenas_dirty, NULL},
	{"arenas.muzzy_decay_ms", T_SSIZE, RW, h_arenas_muzzy, NULL},
	{"arenas.quantum", T_SIZE, RO, h_quantum, NULL},
	{"arenas.page", T_SIZE, RO, h_page, NULL},
	{"arenas.nbins", T_UNSIGNED, RO, h_nbins, NULL},
	{"arenas.bin.#.size", T_SIZE, RO, h_bin_size, NULL},
	{"arenas.bin.#.nregs", T_U32, RO, h_bin_nregs, NULL},
	{"arenas.bin.#.slab_size", T_SIZE, RO, h_bin_slab_size, NULL},
	{"stats.allocated", T_SIZE, RO, h_allocated, NULL},
	{"stats.active", T_SIZE, RO, h_active, NULL},
	{"stats.resident", T_SIZE, RO, h_resident, NULL},
	{"stats.mapped", T_SIZE, RO, h_mapped, NULL},
	{"stats.retained", T_SIZE, RO, h_retained, NULL},
	{"stats.metadata", T_SIZE, RO, h_metadata, NULL},
	{"stats.arenas.#.pactive", T_SIZE, RO, h_a_pactive, NULL},
	{"stats.arenas.#.pdirty", T_SIZE, RO, h_a_pdirty, NULL},
	{"stats.arenas.#.pmuzzy", T_SIZE, RO, h_a_pmuzzy, NULL},
	{"stats.arenas.#.small.allocated", T_SIZE, RO, h_a_small, NULL},
	{"stats.arenas.#.large.allocated", T_SIZE, RO, h_a_large, NULL},
	{"stats.arenas.#.bins.#.curregs", T_SIZE, RO, h_curregs, NULL},
	{"stats.arenas.#.bins.#.curslabs", T_SIZE, RO, h_curslabs, NULL},
	{"stats.arenas.#.bins.#.nonfull_slabs", T_SIZE, RO, h_nonfull, NULL},
	{"opt.narenas", T_UNSIGNED, RO, h_opt_narenas, NULL},
	{"opt.background_thread", T_BOOL, RO, h_opt_background, NULL},
	{"opt.dirty_decay_ms", T_SSIZE, RO, h_arenas_dirty, NULL},
	{"opt.muzzy_decay_ms", T_SSIZE, RO, h_arenas_muzzy, NULL},
	{"opt.tcache", T_BOOL, RO, h_true, NULL},
	{"opt.prof", T_BOOL, RO, h_prof, NULL},
	{"config.debug", T_BOOL, RO, h_false, NULL},
	{"config.stats", T_BOOL, RO, h_true, NULL},
	{"config.prof", T_BOOL, RO, h_true, NULL},
	{"prof.dump", T_STR, WO, h_prof_dump, NULL},
	{"experimental.utilization.query", T_RAW, RW, NULL, r_util_query},
	{"experimental.utilization.batch_query", T_RAW, RW, NULL, r_util_batch},
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

/* A name's MIB: each word's index, each number itself. Returns the components, or 0 when the
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
				if (p[i] < '0' || p[i] > '9' || v > SIZE_MAX / 10 - 1)
					return 0;
				v = v * 10 + (size_t)(p[i] - '0');
			}
			mib[n++] = v;
		} else {
			unsigned w = word_find(p, len);
			if (w == UINT32_MAX)
				return 0;
			mib[n++] = w;
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
			if (len == 1 && *p == '#') {
				if (ni < MAX_NUMBERS)
					ix[ni++] = mib[k];
			} else if (mib[k] >= nwords || words[mib[k]].len != len ||
				   memcmp(words[mib[k]].at, p, len)) {
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
	union val in, out;
	memset(&out, 0, sizeof out);
	if (writes)
		memcpy(&in, newp, size);
	int err = e->fn(ix, &out, writes ? &in : NULL);
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
	static struct sm_snapshot copy; /* under print_lock: the callback may take long */
	struct sink k = {.cb = cb, .opaque = opaque, .n = 0};
	sm_lock(&print_lock);
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
	sm_unlock(&print_lock);
}
