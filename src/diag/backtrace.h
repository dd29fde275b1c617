/* backtrace.h: the calling thread's stack (backtrace.c has the rules), for debug.c, kfence.c
 * and prof.c. Inline: each frame of this library costs the unwinder as much as one of the
 * program's. */
#ifndef SM_DIAG_BACKTRACE_H
#define SM_DIAG_BACKTRACE_H

#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "lock.h"
#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

extern sm_lock_t sm_bt_gate;
extern uintptr_t sm_bt_self_lo, sm_bt_self_hi;

/* Up to max return addresses of the caller's stack, this library's frames left out; 0 when
 * called from inside the unwinder (backtrace.c has the rules). from: NULL, or the frame address
 * of a function of this library the caller was called from, whose caller is the program's:
 * the walk may start there (sm_os_backtrace). */
static inline __attribute__((always_inline)) int sm_backtrace(void **out, int max, const void *from)
{
	if (sm_in_unwind)
		return 0;
	void *pc[PROF_FRAMES + 16];
	int want = max + 16 < PROF_FRAMES + 16 ? max + 16 : PROF_FRAMES + 16;
	sm_in_unwind = 1;
	sm_lock(&sm_bt_gate);
	int n = sm_os_backtrace(pc, want, 0, from);
	sm_unlock(&sm_bt_gate);
	sm_in_unwind = 0;
	int k = 0;
	while (k < n && (uintptr_t)pc[k] - sm_bt_self_lo < sm_bt_self_hi - sm_bt_self_lo)
		k++;
	int m = 0;
	for (; k < n && m < max; k++)
		out[m++] = pc[k];
	return m;
}

#pragma GCC visibility pop

#endif
