/* retained.h: large.c's ranges of pages, and the index of the retained ones: free address
 * space, purged and kept mapped (retained.c). Callers hold large_lock. */
#ifndef SM_RETAINED_H
#define SM_RETAINED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

struct lcached {
	uintptr_t base;
	size_t len;
	uint64_t when; /* cached: when it was freed */
	uint64_t map;  /* cached: the mapping (VMA) it lies in */
	uint8_t guard; /* GUARD_*: a page with no access is on that side */
	bool cold;     /* cached: growing it failed (few of its first pages in memory, or mremap) */
};
#define GUARD_AFTER 1u  /* the mapping's last page follows the range */
#define GUARD_BEFORE 2u /* the mapping's first page comes before it */

bool sm_ret_add(const struct lcached *r);            /* merged with its neighbours; false: no
						     * node for it */
uint32_t sm_ret_fit(size_t len, struct lcached *r); /* the lowest range of len bytes or more:
						     * a copy in *r, and its node; 0: none */
uint32_t sm_ret_at(uintptr_t base, size_t len, struct lcached *r); /* the one at base, if it
								     * has len bytes: as fit */
void sm_ret_cut(uint32_t node, const struct lcached *r); /* node's range is r now: its lower
							  * part cut (r->len 0: all of it) */
bool sm_ret_pop(struct lcached *r);             /* any range: out */
size_t sm_ret_bytes(void);
uint64_t sm_ret_resident(void);                 /* their bytes in memory (mincore), the index's */

#pragma GCC visibility pop

#endif
