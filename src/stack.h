/* stack.h: a thread stack of object pointers (struct stack) and its operations: the pieces
 * of a thread's object cache that the fastpaths and tcache.c share. Included by internal.h.
 * Invariants: slots <= floor <= lim and slots <= top <= lim. A free stack's floor is slots or
 * lim; an allocation stack's is slots, or (SLUBMALLOC_KFENCE) just above its next sample. */
#ifndef SM_STACK_H
#define SM_STACK_H

#include <stdbool.h>
#include <stdint.h>

/* A thread's object cache of one class ("kmem_cache_cpu", shaped as the kernel's sheaves) is two
 * stacks of object pointers, each a struct stack.
 * free pushes *top++ of the free stack (tcache.free_stack).
 * malloc pops *--top of the free stack first, while it needs no sorting: the object freed last
 * comes back first, while its lines are likely still cached.
 * Else malloc pops the allocation stack (tcache.alloc_stack). It holds what a refill brought
 * and what a swap moved over.
 * malloc that finds the allocation stack empty while the free stack needs sorting swaps the
 * two first (stack_swap, through class_swap).
 * free that finds its stack full swaps them when malloc's is empty, else sends the older half
 * back.
 * Pointers, not a count: the fastpaths compare and store without scaling an index. */
struct stack {
	void **top;      /* objects are slots[0, top - slots) */
	void **lim;      /* slots + capacity: free's fastpath pushes while top < lim; equal to
			  * slots (no room) until the thread is set up, and again after it exits */
	void **slots;    /* slots[-1] is a NULL guard (the double-free check reads it) */
	void **floor;    /* malloc's fastpath pops while top > floor. A free stack's is slots, or
			  * lim while the stack is held (stack_held: its objects must be sorted
			  * before reuse, class_swap). An allocation stack's is slots, or raised
			  * to stop at a sample (kfence.c) */
};

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
	b->top = b->slots = b->floor = v;
	b->lim = v + cap;
}
/* Take b's room away (its objects are gone): every call on it takes the slow path. */
static inline void stack_close(struct stack *b)
{
	b->top = b->lim = b->floor = b->slots;
}
/* Whether free stack f is held: malloc's fastpath does not pop it. */
static inline bool stack_held(const struct stack *f)
{
	return f->floor != f->slots;
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
	f->floor = held ? alim : aslots;
	a->top = ftop;
	a->lim = flim;
	a->slots = a->floor = fslots;
	return ftop != fslots;
}

#endif
