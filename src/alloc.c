/* alloc.c: the slow halves of the malloc family: first calls, large sizes, aligned requests,
 * calloc/realloc, and the checks that turn a bad pointer into a report.
 * Contract (glibc 2.36's): failures return NULL with errno ENOMEM (EINVAL for a bad
 * alignment), free preserves errno, realloc(p, 0) frees p and returns NULL.
 * A thread without a cache of its own allocates from the orphan cache (thread.c); its frees
 * go straight to the slabs. */
#include <errno.h>
#include <string.h>

#include "alloc.h"
#include "background.h"
#include "bulk.h"
#include "config.h"
#include "diag/diag.h"
#include "engine.h"
#include "fastpath.h"
#include "freelist.h"
#include "harden.h"
#include "large.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "sizeclass.h"
#include "slab.h"
#include "stack.h"
#include "stats.h"
#include "tcache.h"
#include "thread.h"
#include "trim.h"
#include "typed.h"
#include "types.h"
#include "zero.h"

/* An object of class cls for a request of req bytes; caller: the return address of the
 * public entry point (debug caches record it). */
static void *alloc_class(unsigned cls, size_t req, void *caller, unsigned form, bool *zero)
{
	if (unlikely(sm_g.caches[cls].debug))
		return sm_debug_alloc(&sm_g.caches[cls], req, caller, form);
	struct tcache *tc = sm_tcp;
	if (unlikely(tc->state != T_LIVE)) {
		if (tc->state == T_NEW)
			tc = sm_thread_start();
		if (tc->state != T_LIVE) { /* exited, or no memory for a cache yet */
			void *p = sm_orphan_alloc(cls);
			return p ? free_key_clear(p) : (errno = ENOMEM, NULL);
		}
	}
	struct stack *b = &tc->alloc_stack[cls], *f = &tc->free_stack[cls];
	void *p;
	/* SLUBMALLOC_STATS=1 (sizeclass.c): the fastpath's work, counted here */
	if (f->top > stack_floor(f)) {
		p = *--f->top;
		sm_count(&sm_g.caches[cls], EV_ALLOC_FAST, 1);
	} else if (b->top != b->slots || (swap_pays(tc, f) && stack_swap(b, f))) {
		p = *--b->top;
		if (unlikely(tc->smp_armed))
			sm_sample_arm(b, 1);
		sm_count(&sm_g.caches[cls], EV_ALLOC_FAST, 1);
	} else {
		p = sm_refill(tc, cls);
		if (unlikely(tc->smp_armed) && p)
			sm_sample_arm(b, 1); /* (p was its top) */
	}
	if (!p)
		return errno = ENOMEM, NULL;
	sm_count(&sm_g.caches[cls], EV_BYTES, req);
	if (zero)
		*zero = free_key_zero(p);
	return free_key_clear(p);
}

/* A trim gives back at most what the caches map: no help to a request larger than that (an
 * impossible size, which must fail fast). */
static SM_COLD bool trim_may_help(size_t size)
{
	uint64_t mapped, dirty, live_n, live_bytes, cached, peak_n, peak_bytes;
	sm_region_figures(&mapped, &dirty);
	sm_large_figures(&live_n, &live_bytes, &cached, &peak_n, &peak_bytes);
	return size <= mapped + cached;
}

/* Out of memory (an RLIMIT_AS cap, say): the caches' memory goes back to the OS at once, as
 * malloc_trim(0) gives it (the empty slabs each cache keeps, dirty pages), the cached and
 * retained large ranges unmapped, and a large block is tried once more. */
static void *alloc_large(size_t size, size_t align, bool zero)
{
	void *p = sm_large_alloc(size, align, zero);
	if (unlikely(!p) && trim_may_help(size) && sm_trim(true) &&
	    !(p = sm_large_alloc(size, align, zero)))
		errno = ENOMEM;
	if (unlikely(sm_opt.prof) && p && sm_sample_prof_due(size))
		sm_large_set_prof(p, sm_prof_record(size), size);
	return p;
}

/* A small request that found no slab and could map no region (4 MiB): after the caches are
 * trimmed, its class once more; else a block of its own pages, as a large one is (free,
 * realloc and malloc_usable_size tell the two apart by address): wasteful, but only while
 * address space is that short. */
static SM_COLD void *no_region(unsigned cls, size_t size, size_t align)
{
	void *p = NULL;
	if (sm_trim(true))
		p = alloc_class(cls, size, NULL, FORM_C, NULL);
	return p ? p : alloc_large(size, align, false);
}

/* malloc's slow path; caller: the program's call, for debug caches; zero: calloc's (alloc_pop),
 * told when the object reads as zero. */
static inline __attribute__((always_inline)) void *alloc_slow(size_t size, unsigned form,
							       void *caller, bool *zero)
{
	if (unlikely(!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE)))
		sm_init();
	sm_bg_poll();
	if (size > MAX_SMALL)
		return alloc_large(size, 0, false);
	if (size == 0) { /* with Z, a block of its own with no access; else a 16-byte one */
		void *z = sm_zero_alloc();
		if (z)
			return z;
	}
	unsigned cls = sm_size_to_class(size);
	void *p = alloc_class(cls, size, caller, form, zero);
	return likely(p) ? p : no_region(cls, size, 0);
}

/* malloc's fastpath found nothing it may pop: the allocation stack is empty, and the free
 * stack is empty or held; or another thread poked them (sm_poke), and the thread's cache
 * drains first. A free stack with objects becomes the allocation stack (stack_swap) and
 * malloc takes its top; else the slow path. */
static inline __attribute__((always_inline)) void *alloc_swap(struct stack *b, size_t size,
							       unsigned form, void *caller,
							       bool *zero)
{
	struct tcache *tc = sm_tcp;
	struct stack *f = free_stack_beside(b);
	if (unlikely(stack_poked(b) || stack_poked(f)))
		sm_trim_self(tc);
	if (unlikely(sm_sampling))
		return sm_sample_swap(b, size, form);
	if (f->top == f->slots)
		return alloc_slow(size, form, caller, zero);
	stack_swap(b, f);
	return free_key_clear(*--b->top);
}

/* The fastpaths call the slow halves last (a tail call), so __builtin_return_address(0) here
 * is, in an optimised build, the caller of malloc/free itself. */
__attribute__((noinline)) void *sm_alloc_swap(struct stack *b, size_t size, unsigned form)
{
	return alloc_swap(b, size, form, __builtin_return_address(0), NULL);
}

/* calloc's (alloc_pop): the same, and a refill's object may read as zero. */
__attribute__((noinline)) void *sm_alloc_swap_zero(struct stack *b, size_t size, bool *zero)
{
	return alloc_swap(b, size, FORM_C, __builtin_return_address(0), zero);
}

__attribute__((noinline)) void *sm_alloc_slow(size_t size, unsigned form)
{
	return alloc_slow(size, form, __builtin_return_address(0), NULL);
}

void sm_free_slow(void *p, unsigned form)
{
	if (!p)
		return;
	int saved = errno;
	uintptr_t a = (uintptr_t)p;
	if (region_is_ours(a)) {
		struct slab *s = slab_of(a);
		if (s && unlikely(s->cache->debug)) {
			sm_debug_free(s, p, __builtin_return_address(0), form);
			errno = saved;
			return;
		}
		if (!s || slab_index(s, a) == UINT32_MAX)
			sm_fatal("invalid free", p, "(not the start of an object of slubmalloc)");
		struct tcache *tc = sm_tcp;
		if (tc->state == T_NEW)
			tc = sm_thread_start();
		/* the fastpath's push (fastpath.h), to the stack it picks, with that stack's own
		 * room: with SLUBMALLOC_STATS=1 the slabs send every free here (slab.c) */
		struct stack *b = free_stack_in(tc, s);
		bool remote = stack_is_remote(tc, b);
		struct cache *c = s->cache;
		if ((s->cls < NCLASS && b->top != b->slots && b->top[-1] == p) ||
		    (free_key_is_set_at(p, c->koff) &&
		     (s->cls < NCLASS ? sm_free_listed(tc, s, p) : sm_typed_listed(c, p))))
			sm_fatal_in("double free", p, c);
		uint32_t cap = tc->state == T_LIVE && s->cls < NCLASS ? stack_cap(b) : 0;
		if (!cap) {
			sm_count(c, EV_FREE_REMOTE, 1);
			/* on its slab's freelist, keyed: a free again is caught */
			if (slab_keyed(s))
				slab_key_set(p);
			else
				free_key_set_at(p, c->koff);
			sm_free_to_slab(s, p);
		} else {
			if (stack_count(b) >= cap)
				(remote ? sm_flush_remote : sm_flush)(tc, s->cls);
			*b->top++ = p;
			free_key_set(p);
			sm_count(c, EV_FREE_FAST, 1);
		}
	} else if (sm_kfence_has(p)) {
		sm_kfence_free(p);
	} else if (sm_zero_has(p)) {
		sm_zero_free(p);
	} else {
		int r = sm_large_free(p);
		if (r < 0)
			sm_fatal("double free", p, "(a large block, already freed)");
		if (r == 0)
			sm_fatal("invalid free", p, "(not allocated by slubmalloc)");
	}
	sm_bg_poll();
	errno = saved;
}

/* Usable size of p, reporting ("invalid <call> of 0x...") and aborting when p is not a live
 * block of ours. */
static size_t usable(const void *p, const char *call)
{
	uintptr_t a = (uintptr_t)p;
	if (region_is_ours(a)) {
		struct slab *s = slab_of(a);
		if (s && unlikely(s->cache->debug))
			return sm_debug_usable(s, p);
		if (!s || slab_index(s, a) == UINT32_MAX)
			sm_fatal(call, p, "(not the start of an object of slubmalloc)");
		return s->size;
	}
	if (sm_zero_has(p))
		return 0;
	if (sm_kfence_has(p))
		return sm_kfence_usable(p);
	size_t n = sm_large_usable(p);
	if (!n)
		sm_fatal(call, p, "(not allocated by slubmalloc)");
	return n;
}

size_t sm_usable_size(const void *p)
{
	return p ? usable(p, "invalid malloc_usable_size") : 0;
}

/* sized free's slow path (fastpath.h): the size given must fit the block and, with lower, be
 * one malloc or realloc could have put in it (a debug block knows its exact size). */
void sm_free_sized(void *p, size_t size, bool lower, unsigned form)
{
	if (p) {
		uintptr_t a = (uintptr_t)p;
		struct slab *s = region_is_ours(a) ? slab_of(a) : NULL;
		bool exact = s && s->cache->debug;
		size_t have = sm_usable_size(p);
		if (size > have)
			sm_fatal("sized free", p, "(size larger than the block)");
		if (lower && (exact ? size != have : !lower_ok(size, have)))
			sm_fatal("sized free", p, "(size smaller than the block)");
	}
	sm_free_slow(p, form);
}

void *sm_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return errno = ENOMEM, NULL;
	if (total > MAX_SMALL) {
		if (unlikely(!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE)))
			sm_init();
		return alloc_large(total, 0, true);
	}
	bool zero = false; /* an object carved from pages that read as zero: no memset */
	void *p = sm_alloc_counted_zero(total, &zero);
	if (p && !zero)
		memset(p, 0, total);
	return p;
}

void *sm_realloc(void *p, size_t size)
{
	if (!p)
		return sm_alloc_counted(size);
	if (size == 0) {
		sm_free_fast(p);
		return NULL;
	}
	size_t old = usable(p, "invalid realloc");
	uintptr_t a = (uintptr_t)p;
	bool debug = region_is_ours(a) && slab_of(a)->cache->debug; /* always moves: exact zones */
	if (size <= old && (size > old / 2 || old <= MIN_ALIGN) && !debug)
		return p;
	if (old > MAX_SMALL && size > MAX_SMALL) {
		void *q = sm_large_realloc(p, size);
		if (q) {
			if (unlikely(sm_opt.prof) && sm_sample_prof_due(size))
				sm_large_set_prof(q, sm_prof_record(size), size);
			return q;
		}
	}
	void *q = sm_alloc_counted(size);
	if (!q)
		return NULL;
	memcpy(q, p, old < size ? old : size);
	sm_free_fast(p);
	return q;
}

/* memalign's rules in glibc 2.36: an alignment that is not a power of two is rounded up. */
void *sm_memalign(size_t align, size_t size)
{
	if (align <= MIN_ALIGN)
		return sm_alloc_counted(size);
	if (align > SIZE_MAX / 2 + 1)
		return errno = EINVAL, NULL;
	if (align & (align - 1))
		align = 1UL << (64 - __builtin_clzll(align));
	if (size > PTRDIFF_MAX)
		return errno = ENOMEM, NULL;
	if (unlikely(!__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE)))
		sm_init();
	unsigned cls = sm_class_for_align(size, align);
	if (cls < NCLASS && !sm_g.caches[cls].debug) { /* debug slots are not naturally aligned */
		if (unlikely(sm_opt.prof)) { /* sampled here, as a large block (page-aligned) */
			if (sm_sample_prof_due(size)) {
				void *p = sm_large_alloc(size, align, false);
				if (p) {
					sm_large_set_prof(p, sm_prof_record(size), size);
					return p;
				}
			}
		}
		void *p = alloc_class(cls, size, __builtin_return_address(0), FORM_C, NULL);
		if (unlikely(sm_opt.prof))
			sm_sample_skip(cls); /* (counted above, not again for its class) */
		return likely(p) ? p : no_region(cls, size, align);
	}
	return alloc_large(size, align, false);
}

/* posix_memalign: EINVAL for an alignment that is not a power of two multiple of
 * sizeof(void *); ENOMEM, with errno ENOMEM too, as glibc leaves it; *out set only on
 * success. */
int sm_posix_memalign(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = sm_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *sm_valloc(size_t size)
{
	return sm_memalign(sm_os_page_size(), size);
}

/* pvalloc: whole pages, at least one. */
void *sm_pvalloc(size_t size)
{
	size_t page = sm_os_page_size();
	size_t rounded = (size + page - 1) & ~(page - 1);
	if (rounded < size)
		return errno = ENOMEM, NULL;
	return sm_memalign(page, rounded ? rounded : page);
}

void *sm_reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return errno = ENOMEM, NULL;
	return sm_realloc(p, total);
}

/* ---- C++ operator new (fastpath.h inlines its first try) ---- */
typedef void (*new_handler_fn)(void);
/* libstdc++'s, weak: present whenever the program uses libstdc++ (the only way to call new) */
extern new_handler_fn cxx_get_new_handler(void) __asm__("_ZSt15get_new_handlerv")
	__attribute__((weak));
extern void cxx_throw_bad_alloc(void) __asm__("_ZSt17__throw_bad_allocv")
	__attribute__((weak, noreturn));

/* A failed new runs std::get_new_handler()'s handler and retries. Without a handler it
 * returns NULL (nothrow) or throws std::bad_alloc through libstdc++'s own thrower. */
SM_COLD void *sm_new_failed(size_t n, size_t align, bool nothrow, unsigned form)
{
	for (;;) {
		new_handler_fn h = (!nothrow && cxx_get_new_handler) ? cxx_get_new_handler() : NULL;
		if (!h) {
			if (nothrow)
				return NULL;
			if (cxx_throw_bad_alloc)
				cxx_throw_bad_alloc();
			sm_fatal("operator new", NULL, "failed and std::bad_alloc cannot be thrown");
		}
		h();
		void *p = align            ? sm_memalign(align, n)
			  : sm_prof_direct ? sm_alloc_prof_form(n, form)
					   : sm_alloc_fast_form(n, form);
		if (p)
			return p;
	}
}
