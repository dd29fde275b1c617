/* backtrace.c: the calling thread's stack, for KFENCE's reports and the profiler's samples.
 * Three rules around libgcc's unwinder (platform/unwind.c):
 *   - a malloc made from inside the unwinder (libgcc allocates for frame tables registered at
 *     run time) must not unwind again: tcache.in_unwind says the thread is inside;
 *   - fork must not find another thread inside the unwinder, holding the loader's or libgcc's
 *     locks, which the child would then wait for forever: every unwind holds the gate, and
 *     fork takes the gate first (fork.c);
 *   - the frames inside this library are left out, so a stack starts at the program's call
 *     of malloc (found once, at init, with dl_iterate_phdr; linked statically, nothing is
 *     left out).
 * The gate comes first in the lock order (freelist.c): the unwinder may call malloc. */
#define _GNU_SOURCE
#include <link.h>

#include "internal.h"

static sm_lock_t gate;
static uintptr_t self_lo, self_hi; /* this library's executable segment; 0, 0: none known */

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me - lo < ph->p_memsz) {
			if (info->dlpi_name && *info->dlpi_name) { /* not the program itself */
				self_lo = lo;
				self_hi = lo + ph->p_memsz;
			}
			return 1;
		}
	}
	return 0;
}

void sm_backtrace_init(void)
{
	dl_iterate_phdr(find_self, (void *)(uintptr_t)sm_backtrace_init);
	void *warm[4];
	sm_backtrace(warm, 4); /* the unwinder's first call sets itself up */
}

int sm_backtrace(void **out, int max)
{
	struct tcache *tc = &sm_tc;
	if (tc->in_unwind)
		return 0;
	void *pc[PROF_FRAMES + 16];
	int want = max + 16 < (int)(sizeof pc / sizeof pc[0]) ? max + 16 : (int)(sizeof pc / sizeof pc[0]);
	tc->in_unwind = 1;
	sm_lock(&gate);
	int n = sm_os_backtrace(pc, want, 0);
	sm_unlock(&gate);
	tc->in_unwind = 0;
	int k = 0;
	while (k < n && (uintptr_t)pc[k] - self_lo < self_hi - self_lo)
		k++;
	int m = 0;
	for (; k < n && m < max; k++)
		out[m++] = pc[k];
	return m;
}

void sm_backtrace_lock_all(void)
{
	sm_lock(&gate);
}

void sm_backtrace_unlock_all(void)
{
	sm_unlock(&gate);
}
