/* stats.c: counters bumped on slow paths (relaxed atomics) and their printing with write(2).
 * SLUBMALLOC_STATS=1 prints the summary at exit (preload/init.c). */
#include "internal.h"

uint64_t sm_stat_slabs_made, sm_stat_slabs_freed;

void sm_stats_print(int fd)
{
	sm_write(fd, "slubmalloc: stats: slabs made ");
	sm_write_num(fd, __atomic_load_n(&sm_stat_slabs_made, __ATOMIC_RELAXED), 10);
	sm_write(fd, ", freed ");
	sm_write_num(fd, __atomic_load_n(&sm_stat_slabs_freed, __ATOMIC_RELAXED), 10);
	sm_write(fd, ", large allocations ");
	sm_write_num(fd, __atomic_load_n(&sm_stat_large, __ATOMIC_RELAXED), 10);
	sm_write(fd, "\n");
	for (unsigned i = 0; i < NCLASS; i++) {
		struct cache *c = &sm_g.caches[i];
		uint64_t n = __atomic_load_n(&c->nr_slabs, __ATOMIC_RELAXED);
		if (!n)
			continue;
		sm_write(fd, "slubmalloc:   ");
		sm_write(fd, c->name);
		sm_write(fd, " slabs ");
		sm_write_num(fd, n, 10);
		sm_write(fd, " partial ");
		sm_write_num(fd, c->nr_partial, 10);
		sm_write(fd, " objsize ");
		sm_write_num(fd, c->size, 10);
		sm_write(fd, " objperslab ");
		sm_write_num(fd, c->objects, 10);
		sm_write(fd, "\n");
	}
}
