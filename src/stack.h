/* stack.h: the operations on a thread stack of object pointers (struct stack, types.h): the
 * pieces of a thread's object cache that the fastpaths and tcache.c share.
 * Invariants: slots <= floor <= lim and slots <= top <= lim, with floor read through
 * stack_floor. A free stack's floor is slots or lim; an allocation stack's is slots, or
 * (SLUBMALLOC_KFENCE) just above its next sample.
 * floor is the one word of a thread's stacks another thread may write: stack_poke sets its top
 * bit (FLOOR_POKED), which stops malloc's fastpath and malloc_bulk's pop. So its owner stores
 * it, and its slow paths read it, with relaxed atomics (plain moves on x86-64 and arm64). */
#ifndef SM_STACK_H
#define SM_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "platform.h"
#include "types.h"

/* A poked floor is above every address, so that malloc's fastpath stops at it and calls
 * sm_alloc_swap, which drains the thread's cache (sm_trim_self). */
#define FLOOR_POKED ((uintptr_t)1 << 63)

/* The fastpaths' load of floor: a poked one too. A plain load, as the fastpaths' loads of
 * top: gcc folds it into the compare, where a relaxed atomic load costs a mov more. Either
 * value of a concurrent poke is right, and an aligned word is not torn. Under ThreadSanitizer
 * (tests/sanitize.sh) it is the atomic load, which TSan sees. */
static inline void **stack_floor_raw(const struct stack *b)
{
#ifdef SM_TSAN
	return __atomic_load_n(&b->floor, __ATOMIC_RELAXED);
#else
	return b->floor;
#endif
}
static inline void **floor_load(const struct stack *b)
{
	return __atomic_load_n(&b->floor, __ATOMIC_RELAXED);
}
/* floor without the poke: what the slow paths compare with. */
static inline void **stack_floor(const struct stack *b)
{
	return (void **)((uintptr_t)floor_load(b) & ~FLOOR_POKED);
}
static inline bool stack_poked(const struct stack *b)
{
	return (uintptr_t)floor_load(b) & FLOOR_POKED;
}
/* The owner's store: it clears a poke. */
static inline void stack_set_floor(struct stack *b, void **floor)
{
	__atomic_store_n(&b->floor, floor, __ATOMIC_RELAXED);
}
/* Another thread's: set FLOOR_POKED, whatever the owner stores meanwhile (a store after it
 * only clears the poke). */
static inline void stack_poke(struct stack *b)
{
	void **v = floor_load(b);
	while (!((uintptr_t)v & FLOOR_POKED) &&
	       !__atomic_compare_exchange_n(&b->floor, &v, (void **)((uintptr_t)v | FLOOR_POKED),
					    true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline uint32_t stack_count(const struct stack *b)
{
	return (uint32_t)(b->top - b->slots);
}
static inline uint32_t stack_cap(const struct stack *b)
{
	return (uint32_t)(b->lim - b->slots);
}
/* Give b the array v (v[-1] a NULL guard) of cap slots, empty. */
static inline void stack_init(struct stack *b, void **v, uint32_t cap)
{
	b->top = b->slots = v;
	b->lim = v + cap;
	stack_set_floor(b, v);
}
/* Take b's room away (its objects are gone): every call on it takes the slow path. */
static inline void stack_close(struct stack *b)
{
	b->top = b->lim = b->slots;
	stack_set_floor(b, b->slots);
}
/* Whether free stack f is held: malloc's fastpath does not pop it. */
static inline bool stack_held(const struct stack *f)
{
	return stack_floor(f) != f->slots;
}

/* free()'s push, checks included: p onto b when there is room and p is not b's top already (a
 * double free; slots[-1] is a NULL guard). Returns false, b unchanged, otherwise. */
static inline bool stack_push(struct stack *b, void *p)
{
	void **t = b->top;
	if (likely(t < b->lim && t[-1] != p)) {
		*t = p;
		b->top = t + 1;
		return true;
	}
	return false;
}

/* Make f's objects the allocation stack's: a's array (empty) becomes the free stack, held if
 * f was. Returns whether a has objects now. */
static inline bool stack_swap(struct stack *a, struct stack *f)
{
	void **atop = a->top, **alim = a->lim, **aslots = a->slots;
	void **ftop = f->top, **flim = f->lim, **fslots = f->slots;
	bool held = stack_held(f);
	/* 8-byte loads, none wider: the fastpaths stored a->top and f->top alone a moment ago,
	 * and a load wider than such a store waits for it to leave the store buffer */
	__asm__("" : "+r"(atop), "+r"(alim), "+r"(aslots), "+r"(ftop), "+r"(flim), "+r"(fslots));
	f->top = atop;
	f->lim = alim;
	f->slots = aslots;
	stack_set_floor(f, held ? alim : aslots);
	a->top = ftop;
	a->lim = flim;
	a->slots = fslots;
	stack_set_floor(a, fslots);
	return ftop != fslots;
}

#endif
