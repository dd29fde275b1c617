/* tcache.h: the thread caches (tcache.c): which stack free() pushes, the stacks' neighbours
 * in struct tcache, and the slow paths: refill, flush, growth. */
#ifndef SM_TCACHE_H
#define SM_TCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "platform.h"
#include "stack.h"
#include "types.h"

#pragma GCC visibility push(hidden)

uint32_t sm_fill(struct cache *c, uint16_t owner, struct source *source, void **out, uint32_t want);
bool sm_slow_begin(struct tcache *tc, unsigned cls); /* sign of life; drain if asked */
void *sm_refill(struct tcache *tc, unsigned cls);
size_t sm_take_n(struct cache *c, uint16_t owner, struct stack *b, struct stack *f,
		 struct source *source,
		 void **out, size_t n);
void sm_flush(struct tcache *tc, unsigned cls);  /* free_stack[cls] is full: swap, grow, or older
						  * half back */
void sm_flush_remote(struct tcache *tc, unsigned cls); /* remote_stack[cls] is full: all back */
void sm_stacks_resize(struct tcache *tc, unsigned cls, uint32_t cap); /* both stacks' room */
uint64_t sm_burst_held(const struct tcache *tc); /* bytes of objects its burst stacks hold at
						 * most (<= TCACHE_BURST_BUDGET) */
void sm_free_chain(void *head, uint32_t fpoff);   /* objects of any slabs, grouped by slab */
void sm_free_array(void **v, size_t n);           /* the same for an array (NULLs skipped) */
void sm_drop(struct stack *b, struct stack *f, struct source *source,
	     const struct cache *c); /* all back, the spill first */

/* From a thread's free stack of a class to its remote stack of that class, in bytes. */
#define REMOTE_OFF \
	((int64_t)(offsetof(struct tcache, remote_stack) - offsetof(struct tcache, free_stack)))

/* Objects below this size share cache lines: free() keeps another thread's apart (below). */
#define SUBLINE 64

/* free()'s stack for an object of s in thread tc, so that tc never reuses an object next to
 * ones another thread writes. A slab of objects smaller than a line (SUBLINE) points free()
 * at remote_stack[s->cls]; the thread that froze it last (subline_owner == tc->id) takes
 * REMOTE_OFF off, to its free_stack[s->cls]. A slab of larger objects points at free_stack and
 * has subline_owner 0, which is no thread's id (thread.c; sm_tc_new's and sm_tc_dead's stacks
 * have no room). Without a branch: a program frees objects of both kinds in any order, and a
 * branch here mispredicts. With SLUBMALLOC_STATS=1 the slabs point at free_stack[NCLASS] or
 * remote_stack[NCLASS]: both have no room, and every free takes its counted slow path
 * (slab.c). */
static inline struct stack *free_stack_in(const struct tcache *tc, const struct slab *s)
{
	uint16_t owner = __atomic_load_n(&s->subline_owner, __ATOMIC_RELAXED);
	uintptr_t at = (uintptr_t)tc + (uintptr_t)s->free_stack_off;
	return (struct stack *)select_eq16(owner, &tc->id, at - REMOTE_OFF, at);
}

/* Whether b, a stack free() pushes in tc, is one of its remote stacks. */
static inline bool stack_is_remote(const struct tcache *tc, const struct stack *b)
{
	return b >= tc->remote_stack;
}

static inline struct stack *free_stack_of(const struct slab *s)
{
	return free_stack_in(sm_tcp, s);
}

/* Free stack cls's floor, after its slots or lim change: lim while the thread is armed for
 * sampling (sample.c), else slots. */
static inline void sm_free_stack_floor(struct tcache *tc, unsigned cls)
{
	struct stack *f = &tc->free_stack[cls];
	stack_set_floor(f, tc->smp_armed ? f->lim : f->slots);
}

/* Whether held free stack f should become the allocation stack now: always, unless the
 * thread is armed for sampling (sample.c); then once it holds SAMPLE_BATCH objects or a
 * quarter of its room. */
static inline bool swap_pays(const struct tcache *tc, const struct stack *f)
{
	uint32_t n = stack_count(f);
	return !tc->smp_armed || n >= SAMPLE_BATCH || n * 4 >= stack_cap(f);
}

/* The free stack of the same class as the allocation stack b. */
static inline struct stack *free_stack_beside(struct stack *b)
{
	return b + (offsetof(struct tcache, free_stack) - offsetof(struct tcache, alloc_stack)) /
			   sizeof(struct stack);
}
/* The remote stack of the same class as the free stack f. */
static inline struct stack *remote_stack_beside(struct stack *f)
{
	return (struct stack *)(void *)((char *)f + REMOTE_OFF);
}
/* The profiler's countdown of allocation stack b's class. */
static inline struct pf_count *pf_count_beside(struct stack *b)
{
	_Static_assert(sizeof(struct pf_count) == sizeof(struct stack), "stack-sized");
	return (struct pf_count *)(void *)(b + (offsetof(struct tcache, pf_direct) -
						offsetof(struct tcache, alloc_stack)) /
						       sizeof(struct stack));
}

/* The bytes of a thread's burst arrays of cls (tcache.burst: stack's and free_stack's, cap_burst
 * slots after a NULL guard each). */
static inline size_t burst_bytes(unsigned cls)
{
	return 2 * (sm_g.caches[cls].cap_burst + 1) * sizeof(void *);
}

#pragma GCC visibility pop

#endif
