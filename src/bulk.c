/* bulk.c: malloc_bulk and free_bulk, after the kernel's kmem_cache_alloc_bulk/free_bulk.
 * Allocation of one object is malloc's.
 * When one of the thread's stacks holds n objects (the free stack first, as malloc), they are one
 * copy of its top n pointers and one store of its top; each loses its free key, as in malloc.
 * Otherwise whole runs come from the stack, then straight from the slab sources (spill chain,
 * take-all, carving) into the caller's array. There are never n trips through malloc.
 * Free checks a run of pointers into one slab against that slab's descriptor, read once per run.
 * Each object's free key is checked and set, as free() does (below). The run is pushed onto the
 * stack free() would pick (the thread's free stack, or its remote stack) with one store of its
 * top.
 * The checks are in bulk_runs.h, scalar or four at a time with AVX2. The whole array as one run
 * is tried first.
 * A pointer that fails a check, or finds its stack full, takes free()'s slow path. That reports
 * it, or flushes (the older half of a free stack, a whole remote stack), grouped by slab, one
 * cmpxchg16b per slab.
 * One pointer takes free()'s fastpath. Two or three take one scalar run.
 * The AVX2 variants are chosen per call (sm_vec_min): the CPU has AVX2 and SLUBMALLOC_AVX2 is
 * not 0.
 * All or nothing: when memory runs out, everything taken is given back, and malloc_bulk returns
 * 0 with errno ENOMEM. */
#include <errno.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define SM_HAVE_AVX2 1 /* the AVX2 variants exist (chosen at run time, sm_vec_min) */
#else
#define SM_HAVE_AVX2 0 /* (elsewhere sm_vec_min stays SIZE_MAX: the scalar paths only) */
#endif

#include "alloc.h"
#include "bulk.h"
#include "config.h"
#include "diag/diag.h"
#include "engine.h"
#include "fastpath.h"
#include "harden.h"
#include "large.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "sizeclass.h"
#include "slab.h"
#include "stack.h"
#include "tcache.h"
#include "thread.h"
#include "types.h"
#include "slubmalloc.h"

/* Memory ran out: the objects taken go back, and large ranges to the OS (the cache would
 * keep them, up to the recent peak of live large bytes). */
static size_t bulk_fail(size_t size, size_t got, void **ptrs)
{
	free_bulk(got, ptrs);
	if (size > MAX_SMALL)
		sm_large_release(true, NULL);
	errno = ENOMEM;
	return 0;
}

/* The same for objects of small classes taken by sm_take_n: straight back to their slabs,
 * grouped by slab, not through the thread's stacks, which would keep them (memory has just
 * run out). */
static SM_COLD size_t take_fail(size_t got, void **ptrs)
{
	sm_free_array(ptrs, (uint32_t)got); /* (ZERO_KEYs become SLAB_KEYs) */
	errno = ENOMEM;
	return 0;
}

/* One at a time, for large sizes and for threads without a cache of their own. */
static size_t alloc_each(size_t size, size_t n, void **ptrs)
{
	for (size_t i = 0; i < n; i++)
		if (!(ptrs[i] = sm_alloc_slow(size, FORM_C)))
			return bulk_fail(size, i, ptrs);
	return n;
}

/* copy_ptrs as a function returning n (many's tail call); then the same with 32-byte moves,
 * the stores free_bulk's AVX2 run check loads back (sm_copy_ptrs: typed caches, refills). */
static __attribute__((noinline)) size_t copy_ptrs_n(void **dst, void *const *src, size_t n)
{
	copy_ptrs(dst, src, n);
	return n;
}

#if SM_HAVE_AVX2
static __attribute__((noinline, target("avx2"))) size_t copy_ptrs_avx2(void **dst,
								      void *const *src, size_t n)
{
	size_t m = n & ~(size_t)3;
	for (size_t i = 0; i < m; i += 4)
		_mm256_storeu_si256((__m256i *)(void *)(dst + i),
				    _mm256_loadu_si256((const __m256i *)(const void *)(src + i)));
	if (n & 2)
		__builtin_memcpy(dst + m, src + m, 2 * sizeof(void *));
	if (n & 1)
		dst[n - 1] = src[n - 1];
	return n;
}
#else
#define copy_ptrs_avx2 copy_ptrs_n
#endif

/* ---- the free key ----
 * Every object on a thread's stacks carries the free key, so that a double free is found
 * (harden.h). free_bulk checks and sets it as free() does, one object after another: a pointer
 * whose key is already there ends its run, and free()'s slow path looks for it (the same
 * pointer twice in one array included: the first one's key is set by then).
 * A typed cache's objects have theirs at the cache's koff (past a ctor's body). */

/* Sets p's free key (at koff: 8, or a typed cache's), unless it is there already (false). */
static inline bool key_take(void *p, uint32_t koff)
{
	if (unlikely(free_key_maybe_set_at(p, koff)))
		return false;
	free_key_set_at(p, koff);
	return true;
}

/* Sets the key of v[0], v[1], ... until one already carries it; returns how many it set.
 * One after another, so a pointer twice in v finds the key its first copy got. Four a step,
 * with no loop branch between them. */
static inline size_t keys_set(void *const *v, size_t n, uint32_t koff)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		if (unlikely(!key_take(v[i], koff)))
			return i;
		if (unlikely(!key_take(v[i + 1], koff)))
			return i + 1;
		if (unlikely(!key_take(v[i + 2], koff)))
			return i + 2;
		if (unlikely(!key_take(v[i + 3], koff)))
			return i + 3;
	}
	for (; i < n; i++)
		if (unlikely(!key_take(v[i], koff)))
			return i;
	return n;
}

static SM_COLD size_t alloc_slow(size_t size, size_t n, void **ptrs)
{
	if (unlikely(!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE)))
		sm_init();
	if (size > MAX_SMALL)
		return alloc_each(size, n, ptrs);
	unsigned cls = sm_size_to_class(size);
	if (unlikely(sm_g.caches[cls].debug)) /* SLUBMALLOC_DEBUG: one checked object at a time */
		return alloc_each(size, n, ptrs);
	struct tcache *tc = sm_tcp;
	if (tc->state == T_NEW)
		tc = sm_thread_start();
	if (tc->state != T_LIVE)
		return alloc_each(size, n, ptrs);
	sm_slow_begin(tc, cls); /* (pop_n stopped at a poke: the drain is here) */
	size_t got = sm_take_n(&sm_g.caches[cls], tc->id, &tc->alloc_stack[cls], &tc->free_stack[cls],
			       &tc->source[cls], ptrs, n);
	return got == n ? free_keys_clear(ptrs, n, 8) : take_fail(got, ptrs);
}

static SM_COLD size_t malloc_bulk_slow(size_t size, size_t n, void **ptrs)
{
	if (!n)
		return 0;
	if (!ptrs)
		return errno = EINVAL, 0;
	if (n == 1) /* one object: malloc's own paths */
		return (ptrs[0] = sm_alloc_slow(size, FORM_C)) ? 1 : 0;
	return alloc_slow(size, n, ptrs);
}

/* Pops the top n objects of one of the thread's stacks into *tp (false when neither holds n):
 * the free stack first, as malloc pops it, unless it is held or poked (its floor), so a round
 * trip with free_bulk stays on it. A poked allocation stack stops it too: the slow path drains
 * (sm_slow_begin). The stacks are empty in debug and stats modes and until the thread is set
 * up. size is a small class's (1..MAX_SMALL). */
static inline bool pop_n(size_t size, size_t n, void ***tp)
{
	struct stack *b = alloc_stack_for(size), *f = free_stack_beside(b);
	void **t = f->top, **floor = stack_floor_raw(f);
	if (!(t > floor && (size_t)(t - floor) >= n)) {
		f = b;
		t = b->top;
		if ((size_t)(t - b->slots) < n || ((uintptr_t)stack_floor_raw(b) & FLOOR_POKED))
			return false;
	}
	f->top = *tp = t - n;
	return true;
}

/* n objects (n != 1, or any n prof_bulk counted), popped in one (pop_n) and copied out (inline
 * for short arrays, else a tail call). They lose their keys, as malloc's objects do. */
static __attribute__((noinline)) size_t many(size_t size, size_t n, void **ptrs)
{
	void **t;
	if (likely(size - 1 < MAX_SMALL && ptrs && n) && pop_n(size, n, &t)) {
		free_keys_clear(t, n, 8);
		if (n < 4) { /* inline: one 16-byte move and perhaps one more pointer */
			copy_ptrs(ptrs, t, n);
			return n;
		}
		return copy_ptrs_n(ptrs, t, n);
	}
	return malloc_bulk_slow(size, n, ptrs);
}

#if SM_HAVE_AVX2
/* Four objects handed out: one 32-byte move of their pointers (the stores free_bulk's run check
 * loads back) and their keys cleared. */
static inline __attribute__((always_inline, target("avx2"))) void take4_avx2(void **dst,
									   void *const *src)
{
	_mm256_storeu_si256((__m256i *)(void *)dst,
			    _mm256_loadu_si256((const __m256i *)(const void *)src));
	free_keys_clear(src, 4, 8);
}

/* many() for n >= 4 with AVX2: groups of four (take4_avx2) in one pass; the last group
 * overlaps the one before it when 4 does not divide n. */
static __attribute__((noinline, target("avx2"))) size_t many_avx2(size_t size, size_t n,
								  void **ptrs)
{
	void **t;
	if (likely(size - 1 < MAX_SMALL && ptrs) && pop_n(size, n, &t)) {
		size_t last = n - 4;
		for (size_t i = 0; i < last; i += 4)
			take4_avx2(ptrs + i, t + i);
		take4_avx2(ptrs + last, t + last);
		return n;
	}
	return malloc_bulk_slow(size, n, ptrs);
}
#else
#define many_avx2 many
#endif

/* Any n but 1: four or more with AVX2, else the scalar copy. */
static inline size_t many_any(size_t size, size_t n, void **ptrs)
{
	return n >= sm_vec_min ? many_avx2(size, n, ptrs) : many(size, n, ptrs);
}

/* malloc_bulk's counting form, in the profiler's patched mode (sample.c): the objects are
 * counted as malloc counts them, all at once; one at a time, in malloc's counting form, when
 * the countdown runs out among them. */
static size_t prof_bulk(size_t size, size_t n, void **ptrs)
{
	if (size - 1 >= MAX_SMALL || !ptrs || !n || sm_prof_count_n(size, n))
		return many_any(size, n, ptrs);
	for (size_t i = 0; i < n; i++)
		if (!(ptrs[i] = sm_alloc_prof_form(size, FORM_C)))
			return bulk_fail(size, i, ptrs);
	return n;
}

/* One object, when the stacks are empty or the size is large: malloc's paths. */
static __attribute__((noinline)) SM_COLD size_t one_slow(size_t size, void **ptrs)
{
	void *p = sm_alloc_fast(size);
	if (unlikely(!p))
		return 0;
	ptrs[0] = p;
	return 1;
}

/* One object is malloc's pop from the stacks, inline, and nothing else here (no call to keep
 * a register across); anything else: a tail call. */
SM_EXPORT SM_HOT size_t malloc_bulk(size_t size, size_t n, void **ptrs)
{
	if (unlikely(n != 1 || !ptrs))
		return many_any(size, n, ptrs);
	void *p;
	if (unlikely(size - 1 >= MAX_SMALL || !(p = stacks_pop(alloc_stack_for(size), NULL))))
		return one_slow(size, ptrs);
	ptrs[0] = p;
	return 1;
}

SM_SELF(malloc_bulk_self, malloc_bulk);

/* Patched with malloc's (override.c, sm_prof_entries). */
void *const sm_bulk_prof_entry[2] = {(void *)malloc_bulk_self, (void *)prof_bulk};

/* The stack a run that starts with the pointer a goes to, and d = a's page descriptor; NULL when a
 * is not an object of ours (the descriptor of a page of no slab is not read beyond that check), or,
 * for a typed cache, not one of its objects. Untyped: free()'s choice of stack, free_stack or
 * remote_stack (tc is the caller's). */
static inline struct stack *run_start(struct tcache *tc, uintptr_t a, struct cache *typed,
				    struct slab **dp)
{
	if (unlikely(!region_is_ours(a)))
		return NULL; /* NULL, large, or not ours */
	struct slab *d = *dp = page_desc(a);
	if (unlikely(!is_object(d, a)))
		return NULL;
	if (typed)
		return likely(d->cache == typed) ? &tc->typed_free[typed->id] : NULL;
	struct stack *b = free_stack_in(tc, d);
	if (!b)
		__builtin_unreachable(); /* (an address in tc: the callers test no NULL for it) */
	return b;
}

#define RUNS_VEC 0
#define RUNS_NAME free_runs
#include "bulk_runs.h"
#undef RUNS_VEC
#undef RUNS_NAME
#if SM_HAVE_AVX2
#define RUNS_VEC 1
#define RUNS_NAME free_runs_avx2
#include "bulk_runs.h"
#endif

static SM_COLD void free_rest(void **at, void **end)
{
	do {
		if (*at)
			sm_free_slow(*at, FORM_C); /* flush, report, large, or a thread without a cache */
		at = free_runs(sm_tcp, at + 1, end, NULL); /* (the slow path may set the thread up) */
	} while (at != end);
}

#if SM_HAVE_AVX2
/* The AVX2 paths: the whole array as one run, else (a tail call, so the common case sets up no
 * stack frame) the runs. */
static __attribute__((noinline, target("avx2"))) void free_bulk_runs_avx2(size_t n, void **ptrs)
{
	struct tcache *tc = sm_tcp;
	void **at = free_runs_avx2(tc, ptrs, ptrs + n, NULL);
	if (unlikely(at != ptrs + n))
		free_rest(at, ptrs + n);
}

static __attribute__((noinline, target("avx2"))) void free_bulk_avx2(size_t n, void **ptrs)
{
	size_t k = one_run(sm_tcp, ptrs, n, NULL);
	if (likely(k == n))
		return;
	free_bulk_runs_avx2(n - k, ptrs + k);
}

static __attribute__((noinline, target("avx2"))) void **typed_runs_rest_avx2(struct tcache *tc,
									     void **src, void **end,
									     struct cache *c)
{
	return free_runs_avx2(tc, src, end, c);
}

static __attribute__((noinline, target("avx2"))) void **typed_runs_avx2(struct tcache *tc,
									void **src, void **end,
									struct cache *c)
{
	size_t k = one_run(tc, src, (size_t)(end - src), c);
	if (likely(src + k == end))
		return end;
	return typed_runs_rest_avx2(tc, src + k, end, c);
}

#else
#define free_bulk_avx2 free_bulk_scalar
#define typed_runs_avx2 typed_runs
#endif

static __attribute__((noinline)) void **typed_runs(struct tcache *tc, void **src, void **end,
						   struct cache *c)
{
	return free_runs(tc, src, end, c);
}

/* Dispatchers only (tail calls), for typed.c. */
void **sm_bulk_runs(struct tcache *tc, void **src, void **end, struct cache *typed)
{
	if ((size_t)(end - src) >= sm_vec_min)
		return typed_runs_avx2(tc, src, end, typed);
	return typed_runs(tc, src, end, typed);
}

size_t sm_copy_ptrs(void **dst, void *const *src, size_t n)
{
	if (n >= sm_vec_min)
		return copy_ptrs_avx2(dst, src, n);
	return copy_ptrs_n(dst, src, n);
}

static __attribute__((noinline)) void free_bulk_scalar(size_t n, void **ptrs)
{
	struct tcache *tc = sm_tcp;
	void **at = free_runs(tc, ptrs, ptrs + n, NULL);
	if (unlikely(at != ptrs + n))
		free_rest(at, ptrs + n);
}

static __attribute__((noinline)) void free_short(size_t n, void **ptrs)
{
	for (size_t i = 0; i < n; i++)
		sm_free_fast(ptrs[i]);
}

/* A short array (2 or 3 pointers) as one run: each an object in the first one's page, and room
 * on the stack for all; then their keys, and one push of those whose key was not there yet.
 * Returns how many it pushed, from the start (the caller frees the rest one by one). */
static inline size_t short_run(size_t n, void **ptrs)
{
	struct slab *d;
	struct tcache *tc = sm_tcp;
	struct stack *b = run_start(tc, (uintptr_t)ptrs[0], NULL, &d);
	if (unlikely(!b))
		return 0;
	void **t = b->top;
	if (unlikely(b->lim - t < (ptrdiff_t)n))
		return 0;
	if (unlikely(!short_run_ok(d, ptrs, n, t[-1]))) /* the first passed run_start */
		return 0;
	size_t k = keys_set(ptrs, n, 8);
	copy_ptrs(t, ptrs, k); /* all checked: one push */
	b->top = t + k;
	return k;
}

/* One pointer: free()'s fastpath; four or more with AVX2: a tail call; two or three: one
 * scalar run; more: a tail call. */
SM_EXPORT SM_HOT void free_bulk(size_t n, void **ptrs)
{
	if (likely(n == 1)) {
		if (likely(ptrs))
			sm_free_fast(ptrs[0]);
		return;
	}
	if (n >= sm_vec_min && ptrs) { /* (4 or more) */
		free_bulk_avx2(n, ptrs);
		return;
	}
	if (unlikely(!ptrs || !n)) /* (short_run reads ptrs[0] and the stack's top) */
		return;
	if (n < SHORT_BULK) {
		size_t k = short_run(n, ptrs);
		if (unlikely(k != n))
			free_short(n - k, ptrs + k);
		return;
	}
	free_bulk_scalar(n, ptrs);
}
