/* backtrace.c: the calling thread's stack, for KFENCE's reports and the profiler's samples.
 * Three rules around libgcc's unwinder (platform/unwind.c):
 *   - a malloc made from inside the unwinder (libgcc allocates for frame tables registered at
 *     run time) must not unwind again: sm_in_unwind says the thread is inside;
 *   - fork must not find another thread inside the unwinder, holding the loader's or libgcc's
 *     locks, which the child would then wait for forever: every unwind holds the gate, and
 *     fork takes the gate first (fork.c);
 *   - the frames inside this library are left out, so a stack starts at the program's call
 *     of malloc (found once, at init, with dl_iterate_phdr; linked statically, nothing is
 *     left out).
 * The gate comes first in the lock order (freelist.c): the unwinder may call malloc.
 * sm_backtrace itself is inline (backtrace.h): each frame of this library costs the unwinder as
 * much as one of the program's. */
#define _GNU_SOURCE
#include <link.h>

#include "backtrace.h"
#include "diag.h"
#include "lock.h"
#include "types.h"

sm_lock_t sm_bt_gate;
uintptr_t sm_bt_self_lo, sm_bt_self_hi; /* this library's executable segment; 0, 0: none */

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me - lo < ph->p_memsz) {
			if (info->dlpi_name && *info->dlpi_name) { /* not the program itself */
				sm_bt_self_lo = lo;
				sm_bt_self_hi = lo + ph->p_memsz;
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
	sm_backtrace(warm, 4, NULL); /* the unwinder's first call sets itself up */
}

void sm_backtrace_lock_all(void)
{
	sm_lock(&sm_bt_gate);
}

void sm_backtrace_unlock_all(void)
{
	sm_unlock(&sm_bt_gate);
}
