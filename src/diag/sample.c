/* sample.c: which allocations are sampled, with no work on the fastpaths: about one in N for
 * SLUBMALLOC_KFENCE (kfence.c), about one per R bytes for SLUBMALLOC_PROF (prof.c).
 * A thread is armed or at rest. At rest it runs as if sampling were off.
 * Armed (tcache.smp_armed), each of its free stacks is held (its floor is lim), so malloc's
 * fastpath never pops it. So every allocation of a size class pops the allocation stack, whose
 * top counts them, reuse of a block just freed included.
 * Each class counts down to its samples: allocations for KFENCE (source.kf_left, geometric of
 * mean N), bytes for the profiler (source.pf_left, exponential of mean R), counted up to
 * smp_mark, the allocation stack's top then. When a sample is among the stack's objects, the
 * stack's floor is raised just above it. The fastpath stops there and calls sm_alloc_swap,
 * which comes here (sm_sample_swap).
 * A held free stack becomes the allocation stack once it holds SAMPLE_BATCH objects (or a
 * quarter of its room; swap_pays, tcache.h); before that, a refill fills the allocation
 * stack: SAMPLE_BATCH objects at first, twice as many at each refill after (tcache.c). So a
 * malloc/free loop swaps once per SAMPLE_BATCH allocations.
 * KFENCE: a sample costs two mprotects and two unwinds, so samples are at least SAMPLE_GAP_NS
 * apart in the process. After a sample, or one refused because the last was too recent, the
 * thread rests, unless the profiler is on. Its first slow path SAMPLE_GAP_NS after the last
 * sample arms it again: a swap, a refill or a flush (sm_sample_wake). So a thread pays for
 * counting only while armed, for about N allocations after each gap. A thread that only
 * reuses the blocks it frees, in a tight malloc/free loop, takes no slow path and stays at
 * rest.
 * The profiler: a thread never rests. A sample drawn for a block of the class size is kept
 * with probability p(request) / p(class size) (keep_for). Large, aligned and debug blocks
 * count down the thread's pf_other (sm_sample_prof_due).
 * The profiler's patched mode: armed, a thread holds its free stacks, which costs a tight
 * loop its freed-last reuse and a swap per SAMPLE_BATCH allocations, and each swap counts.
 * So at load, malloc, malloc_bulk and operator new (plain, array, nothrow) get a jump to their
 * counting forms (sm_prof_entries), all of them or none. Those count every pop's bytes down to
 * the class's next sample (pf_direct, fastpath.h; malloc_bulk's: sm_prof_count_n); calloc,
 * realloc and memalign count the same way behind a flag (sm_alloc_counted). So no thread is
 * armed, and the free stacks are popped as unset. Not with KFENCE, debug caches or
 * SLUBMALLOC_STATS=1, whose counts need every pop on the held stacks' paths. Not patched (the
 * kernel refused, a second thread already ran, the old code still runs): threads are armed, as
 * with KFENCE.
 * Every change of the allocation stack's array (a swap, a refill, a resize) arms it again.
 * Invariants: kf_left is 0 (not drawn yet) or the allocations until the sample, the sample
 * included; pf_left is 0 (not drawn yet), the bytes until the sample, or -1 (due); a floor
 * raised for a sample is within the stack's objects; at rest, every allocation stack's floor
 * is slots. */
#include <string.h>

#include "alloc.h"
#include "config.h"
#include "diag.h"
#include "engine.h"
#include "fastpath.h"
#include "harden.h"
#include "kfence.h"
#include "options.h"
#include "platform.h"
#include "prof.h"
#include "report.h"
#include "sizeclass.h"
#include "stack.h"
#include "freelist.h"
#include "tcache.h"
#include "thread.h"
#include "types.h"

int sm_sampling;
static uint64_t last_ns; /* when the last sample was taken */

void sm_sample_init(void)
{
	sm_sampling = sm_kfence_every != 0 || sm_opt.prof;
}

/* A random 64-bit number (splitmix64 on the thread's counter). */
static uint64_t next_random(struct tcache *tc)
{
	if (!tc->smp_rng)
		sm_os_random(&tc->smp_rng, sizeof tc->smp_rng);
	uint64_t x = (tc->smp_rng += 0x9e3779b97f4a7c15ULL);
	x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27, x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* -ln(u) for u uniform in (0, 1]: an exponential draw of mean 1, to about 1e-7. No libm:
 * u = m * 2^e with m in [1, 2), ln(u) = e ln 2 + ln(m), and ln(m) = 2 atanh(z) with
 * z = (m - 1) / (m + 1) in [0, 1/3], by its series. */
static double exp_draw(struct tcache *tc)
{
	uint64_t r = (next_random(tc) >> 11) + 1; /* 1..2^53 */
	double u = (double)r / 9007199254740992.0;
	uint64_t bits;
	memcpy(&bits, &u, sizeof bits);
	int e = (int)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
	double m;
	memcpy(&m, &bits, sizeof m);
	double z = (m - 1) / (m + 1), z2 = z * z;
	double lnm = 2 * z * (1 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 * (1.0 / 9 + z2 / 11)))));
	double x = -(e * 0.6931471805599453 + lnm);
	return x > 0 ? x : 0;
}

/* KFENCE's next countdown: geometric, of mean N. Memoryless: after a rest, the allocations
 * until any class's sample are about N however many classes count. */
static uint32_t kf_draw(struct tcache *tc)
{
	double n = exp_draw(tc) * sm_kfence_every;
	return n < 4e9 ? (uint32_t)n + 1 : 4000000000u;
}

/* The profiler's next countdown, in bytes: exponential, of mean SLUBMALLOC_PROF_SAMPLE. */
static int64_t pf_draw(struct tcache *tc)
{
	double n = exp_draw(tc) * (double)sm_opt.prof_sample;
	return n < 4e18 ? (int64_t)n + 1 : (int64_t)4e18;
}

/* 1 - e^-x for x >= 0, to about 1e-6 (no libm): a series for small x, else 2^-y by halving
 * and a polynomial. */
static double one_minus_exp_neg(double x)
{
	if (x < 0.01)
		return x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4)));
	double y = x * 1.4426950408889634; /* e^-x = 2^-y */
	if (y > 60)
		return 1;
	int k = (int)y;
	double f = y - k, p = 1; /* 2^-f = e^(-f ln 2), f in [0, 1): a Taylor series */
	double t = -f * 0.6931471805599453, term = 1;
	for (int i = 1; i < 12; i++) {
		term *= t / i;
		p += term;
	}
	while (k--)
		p /= 2;
	return 1 - p;
}

/* The sample was drawn for a block of class size cls, with probability 1 - e^(-cls/R); keep
 * it with probability (1 - e^(-req/R)) / (1 - e^(-cls/R)), so that a request of req bytes is
 * sampled with 1 - e^(-req/R), as the profile's readers assume (prof_dump.c). */
static bool keep_for(struct tcache *tc, size_t req, size_t cls)
{
	if (req >= cls)
		return true;
	double r = (double)sm_opt.prof_sample;
	double q = one_minus_exp_neg((double)req / r) / one_minus_exp_neg((double)cls / r);
	return (double)(next_random(tc) >> 11) * (1.0 / 9007199254740992.0) < q;
}

bool sm_sample_prof_due(size_t bytes)
{
	struct tcache *tc = sm_tcp;
	if (tc->state == T_NEW) /* (with every class a debug cache, nothing else sets it up) */
		tc = sm_thread_start();
	if (sm_in_unwind || tc->state != T_LIVE) /* (a thread without a cache is not sampled) */
		return false;
	if (!tc->pf_other)
		tc->pf_other = pf_draw(tc);
	tc->pf_other -= (int64_t)bytes;
	if (tc->pf_other > 0)
		return false;
	tc->pf_other = pf_draw(tc);
	return true;
}

/* The calling thread's source of allocation stack b, or NULL (not a size class's, or the
 * thread has no cache). */
static struct source *source_of(struct tcache *tc, struct stack *b)
{
	if (tc->state != T_LIVE || b < tc->alloc_stack || b >= tc->alloc_stack + NCLASS)
		return NULL;
	return &tc->source[b - tc->alloc_stack];
}

/* popped more allocations of the class, of size bytes each: the countdowns go down. KFENCE's
 * stops at 1 (due); the profiler's at -1 (due). */
static void consume(struct tcache *tc, struct source *src, uint32_t size, uint32_t popped)
{
	if (sm_kfence_every) {
		if (!src->kf_left)
			src->kf_left = kf_draw(tc);
		src->kf_left = popped >= src->kf_left ? 1 : src->kf_left - popped;
	}
	if (sm_opt.prof) {
		if (!src->pf_left)
			src->pf_left = pf_draw(tc);
		src->pf_left -= (int64_t)popped * size;
		if (src->pf_left <= 0)
			src->pf_left = -1;
	}
}

/* Whether the profiler's sample is the next allocation of the class: the one whose bytes take
 * the countdown to 0 (or past it already). */
static bool pf_due(const struct source *src, uint32_t size)
{
	return sm_opt.prof && src->pf_left && src->pf_left <= (int64_t)size;
}

/* The allocations of b's class until the next sample, the sample included (1: the next one),
 * when at most n; else more than n. (No division unless the profiler's sample is that near.) */
static uint32_t until_sample(const struct source *src, uint32_t size, uint32_t n)
{
	uint32_t left = sm_kfence_every ? src->kf_left : UINT32_MAX;
	if (sm_opt.prof && src->pf_left <= (int64_t)n * size) {
		uint32_t k = src->pf_left <= 0 ? 1 : (uint32_t)((src->pf_left + size - 1) / size);
		left = k < left ? k : left;
	}
	return left;
}

/* The allocations b's class made from b since the last count. */
static uint32_t popped_since_mark(const struct source *src, const struct stack *b)
{
	uintptr_t m = (uintptr_t)src->smp_mark; /* (a mark in another array: not counted) */
	return m > (uintptr_t)b->top && m <= (uintptr_t)b->lim
		       ? (uint32_t)((m - (uintptr_t)b->top) / sizeof(void *))
		       : 0;
}

/* Raise b's floor just above the next sample, if it is among b's objects. popped: objects the
 * caller has just taken from b's top since b changed, counted here. */
static void arm(struct tcache *tc, struct source *src, struct stack *b, uint32_t popped)
{
	uint32_t size = sm_g.caches[src - tc->source].size;
	consume(tc, src, size, popped);
	src->smp_mark = b->top;
	uint32_t n = stack_count(b), left = until_sample(src, size, n);
	stack_set_floor(b, left <= n ? b->top - (left - 1) : b->slots);
}

void sm_sample_skip(unsigned cls)
{
	struct tcache *tc = sm_tcp;
	if (tc->state != T_LIVE || !tc->smp_armed || cls >= NCLASS)
		return;
	struct source *src = &tc->source[cls];
	const struct stack *b = &tc->alloc_stack[cls];
	uintptr_t m = (uintptr_t)src->smp_mark;
	if (m > (uintptr_t)b->top && m <= (uintptr_t)b->lim)
		src->smp_mark--;
}

void sm_sample_arm(struct stack *b, uint32_t popped)
{
	struct tcache *tc = sm_tcp;
	struct source *src = source_of(tc, b);
	if (src && tc->smp_armed)
		arm(tc, src, b, popped);
}

/* Arm the thread (on), or let it rest. Armed, each class counts from now on. */
static void set_armed(struct tcache *tc, bool on)
{
	tc->smp_armed = on;
	for (unsigned i = 0; i < NCLASS; i++) {
		struct stack *b = &tc->alloc_stack[i];
		tc->source[i].smp_mark = b->top;
		stack_set_floor(b, b->slots);
		sm_free_stack_floor(tc, i);
	}
}

void sm_sample_wake(struct tcache *tc)
{
	if (tc->state == T_LIVE && !tc->smp_armed &&
	    sm_os_now_ns() - __atomic_load_n(&last_ns, __ATOMIC_RELAXED) >= SAMPLE_GAP_NS)
		set_armed(tc, true);
}

/* KFENCE's sample of b's class is due: a KFENCE object of size bytes, unless one was taken
 * less than SAMPLE_GAP_NS ago. Either way the thread rests, unless the profiler is on. */
static void *take(struct tcache *tc, struct source *src, size_t size)
{
	src->kf_left = 0;
	uint64_t now = sm_os_now_ns(), last = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
	void *k = NULL;
	if (now - last >= SAMPLE_GAP_NS &&
	    __atomic_compare_exchange_n(&last_ns, &last, now, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		k = sm_kfence_alloc(size);
	if (!sm_opt.prof)
		set_armed(tc, false);
	return k;
}

/* sm_alloc_swap while sampling: malloc's fastpath stopped at b's floor, the sample, or found
 * b empty. */
void *sm_sample_swap(struct stack *b, size_t size, unsigned form)
{
	struct tcache *tc = sm_tcp;
	struct source *src = source_of(tc, b);
	if (!src)
		return sm_alloc_slow(size, form);
	sm_sample_wake(tc);
	if (!tc->smp_armed) { /* at rest: sm_alloc_swap's usual work */
		struct stack *f = free_stack_beside(b);
		if (f->top == f->slots || !stack_swap(b, f))
			return sm_alloc_slow(size, form);
		return free_key_clear(*--b->top);
	}
	unsigned cls = (unsigned)(src - tc->source);
	uint32_t csize = sm_g.caches[cls].size, popped = popped_since_mark(src, b);
	if (b->top > b->slots) { /* stopped at the floor: the sample is due */
		consume(tc, src, csize, popped);
		src->smp_mark = b->top;
		popped = 0;
	}
	if (b->top > b->slots && until_sample(src, csize, 1) == 1) {
		void *k = NULL;
		if (sm_kfence_every && src->kf_left == 1)
			k = take(tc, src, size);
		if (pf_due(src, csize)) {
			/* the next countdown starts after this block: (+ csize) is what arm() takes
			 * off for it */
			src->pf_left = pf_draw(tc) + csize;
			if (!k && keep_for(tc, size, csize))
				k = sm_prof_alloc(cls, size, form, NULL);
		}
		if (!tc->smp_armed) /* (KFENCE's rest) */
			return k ? k : free_key_clear(*--b->top);
		if (k) {
			arm(tc, src, b, 1);
			return k;
		}
	}
	/* b is empty, or no sample was taken: pops of b's old array are counted with the one
	 * below (arm) */
	struct stack *f = free_stack_beside(b);
	if (b->top == b->slots) {
		if (!swap_pays(tc, f) || !stack_swap(b, f)) {
			consume(tc, src, csize, popped);
			src->smp_mark = b->top;
			stack_set_floor(b, b->slots);
			return sm_alloc_slow(size, form); /* a refill, which arms b */
		}
	}
	void *p = *--b->top;
	arm(tc, src, b, popped + 1);
	return free_key_clear(p);
}

/* Patched mode: the allocation of size bytes whose bytes ran its class's countdown out (or a
 * thread's first of the class, which only draws the countdown) is the sample. Its thread is
 * set up (the caller counted on it). Inside the unwinder: not sampled, the countdown stays
 * run out. The counting form calls it last (a tail call), so the stack walk starts at this
 * function's caller, most often the program (from its frame address). */
void *sm_prof_direct_due(size_t size, unsigned form)
{
	struct tcache *tc = sm_tcp;
	if (sm_in_unwind)
		return sm_alloc_fast_form(size, form);
	struct stack *b = alloc_stack_for(size);
	struct pf_count *pc = pf_count_beside(b);
	if (!pc->drawn) {
		pc->drawn = 1;
		int64_t d = pf_draw(tc) - 1;
		if (d >= (int64_t)size) {
			pc->left = d - (int64_t)size;
			return sm_alloc_fast_form(size, form);
		}
	}
	pc->left = pf_draw(tc) - 1; /* the next countdown starts after this block */
	void *p = sm_prof_alloc((unsigned)(b - tc->alloc_stack), size, form,
				__builtin_frame_address(0));
	return p ? p : sm_alloc_fast_form(size, form);
}

/* Patched mode: both of b's stacks are empty (or the free stack held). Counted, then
 * sm_alloc_swap. A thread's first allocation sets it up there: that block goes on its free
 * stack and is taken again, counted. */
void *sm_prof_direct_swap(struct stack *b, size_t size, unsigned form)
{
	if (sm_tcp->state == T_LIVE) {
		if ((pf_count_beside(b)->left -= (int64_t)size) < 0)
			return sm_prof_direct_due(size, form);
		return sm_alloc_swap(b, size, form);
	}
	void *p = sm_alloc_swap(b, size, form);
	if (!p || sm_tcp->state != T_LIVE)
		return p; /* (a thread without a cache is not sampled) */
	sm_free_fast(p);
	return sm_alloc_prof_form(size, form);
}

bool sm_prof_count_n(size_t size, size_t n)
{
	size_t bytes;
	if (sm_tcp->state != T_LIVE || __builtin_mul_overflow(size, n, &bytes) || bytes > INT64_MAX)
		return false;
	struct pf_count *pc = pf_count_beside(alloc_stack_for(size));
	if (pc->left < (int64_t)bytes)
		return false;
	pc->left -= (int64_t)bytes;
	return true;
}

int sm_prof_direct;
static struct {
	void *at;
	uint8_t saved[SM_PATCH_LEN];
} patched[8];

/* Whether malloc's entry (entry, patched) runs its counting form: one allocation of 16 bytes
 * must draw its class's countdown. Not so under valgrind without --smc-check=all, which runs
 * the code it translated before the patch. */
static bool patch_shows(void *entry)
{
	void *p = ((void *(*)(size_t))entry)(16);
	bool drawn = sm_tcp->state == T_LIVE && pf_count_beside(alloc_stack_for(16))->drawn;
	sm_free_fast(p);
	return drawn;
}

/* Patched mode: every allocating entry counts its own small allocations on pf_direct: malloc,
 * malloc_bulk and operator new (plain, array, nothrow) in their counting forms, the others
 * through sm_alloc_counted. So no thread is armed, and the swaps count nothing.
 * Not with KFENCE, debug caches or SLUBMALLOC_STATS=1, which count on every pop being the
 * held stacks' (or the slow paths'). Nor once a second thread has used malloc: it might run an
 * entry while it is written. All or none: an entry that cannot be patched undoes the others,
 * and the allocation stacks count, armed, as without patching. entry[0] is malloc's. */
void sm_prof_entries(void *const entry[][2], unsigned n)
{
	sm_init();
	if (!sm_opt.prof || sm_kfence_every || sm_opt.debug || sm_opt.stats || sm_prof_direct ||
	    !n || n > sizeof patched / sizeof patched[0] ||
	    __atomic_load_n(&sm_second_thread, __ATOMIC_RELAXED))
		return;
	unsigned done = 0;
	while (done < n && sm_os_patch_jump(entry[done][0], entry[done][1], patched[done].saved))
		patched[done].at = entry[done][0], done++;
	struct tcache *tc = sm_tcp;
	if (done == n) {
		sm_prof_direct = 1;
		sm_sampling = 0;
		if (tc->state == T_LIVE && tc->smp_armed)
			set_armed(tc, false);
		if (!patch_shows(entry[0][0])) {
			sm_prof_direct = 0;
			sm_sampling = 1;
		}
	}
	if (!sm_prof_direct) {
		while (done)
			done--, sm_os_patch_undo(patched[done].at, patched[done].saved);
		tc = sm_tcp;
		if (tc->state == T_LIVE && !tc->smp_armed)
			set_armed(tc, true);
	}
	if (sm_opt.verbose) {
		sm_write(2, "slubmalloc: SLUBMALLOC_PROF: ");
		sm_write_num(2, done, 10);
		sm_write(2, " of ");
		sm_write_num(2, n, 10);
		sm_write(2, " entry points count their allocations\n");
	}
}
