/* harden.c: the default mode's double-free check, behind the free key (harden.h).
 * A free that finds the key in word 1 asks here whether the object is free already. It looks on
 * the calling thread's three stacks of the class, on its spill chain, and on the slab's shared
 * freelist.
 * Only a double free, or a program that stored the key itself, gets here. So the search may be
 * long.
 * It must not crash on a freelist that other threads change meanwhile. Each link is checked to
 * be an object of the slab before it is followed. The walk stops after as many links as the
 * slab has objects. */
#include "config.h"
#include "freelist.h"
#include "harden.h"
#include "slab.h"
#include "types.h"

bool sm_in_stack(const struct stack *b, const void *p)
{
	for (void **v = b->slots; v < b->top; v++)
		if (*v == p)
			return true;
	return false;
}

/* Whether p is on the chain from head (links at fpoff), following at most n links, each of
 * them an object of slab s. */
bool sm_in_chain(const struct slab *s, void *head, uint32_t fpoff, uint64_t n, const void *p)
{
	for (void *o = head; o && n--; o = fp_get(o, fpoff)) {
		if (o == p)
			return true;
		if (slab_index(s, (uintptr_t)o) == UINT32_MAX)
			return false; /* changed under us: the slab's freelist is someone else's now */
	}
	return false;
}

bool sm_free_listed(struct tcache *tc, struct slab *d, void *p)
{
	struct slab *s = d->head;
	unsigned cls = s->cls;
	if (cls < NCLASS && tc->state == T_LIVE) {
		if (sm_in_stack(&tc->alloc_stack[cls], p) || sm_in_stack(&tc->free_stack[cls], p) ||
		    sm_in_stack(&tc->remote_stack[cls], p))
			return true;
		/* the spill chain holds objects of the active slab only */
		struct source *source = &tc->source[cls];
		if (source->spill && source->active == s && sm_in_chain(s, source->spill, 0, source->nspill, p))
			return true;
	}
	void *head = (void *)__atomic_load_n(&s->word.lo, __ATOMIC_ACQUIRE);
	return sm_in_chain(s, head, s->cache->fpoff, s->objects, p);
}
