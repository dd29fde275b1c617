/* diag.h: the diagnostics, the one header of src/diag/ that the rest of the library includes:
 * SLUBMALLOC_DEBUG's caches, SLUBMALLOC_KFENCE's guard pages, which allocations are sampled,
 * the heap profiler and its output, the stacks they record, and the reports of faults.
 * Unset, each costs the fastpaths nothing. The folder's other headers are its own. */
#ifndef SM_DIAG_H
#define SM_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

#pragma GCC visibility push(hidden)

/* "sample.c": which allocations are sampled (KFENCE, the profiler), with no work on the fastpaths */
void sm_sample_init(void);                 /* init, after sm_kfence_init */
void *sm_sample_swap(struct stack *b, size_t size, unsigned form); /* sm_alloc_swap's, sampling */
void sm_sample_arm(struct stack *b, uint32_t popped); /* b changed: its floor to the next sample */
void sm_sample_wake(struct tcache *tc);    /* a slow path: arm tc once it has rested enough */
bool sm_sample_prof_due(size_t bytes);     /* a large, aligned or debug block: sample it? */
void sm_sample_skip(unsigned cls);         /* cls's last allocation was counted elsewhere */
/* SLUBMALLOC_PROF=1: each entry point entry[i][0] jumps to its counting form entry[i][1]
 * (platform: sm_os_patch_jump), all or none, unless another option counts on the held free
 * stacks. Done: patched mode, sm_prof_direct. */
void sm_prof_entries(void *const entry[][2], unsigned n);
extern int sm_prof_direct;                 /* patched mode: each entry counts its allocations */
void *sm_prof_direct_due(size_t size, unsigned form); /* sm_alloc_prof_form's countdown ran out */
void *sm_prof_direct_swap(struct stack *b, size_t size, unsigned form); /* its stacks are empty */
bool sm_prof_count_n(size_t size, size_t n); /* n small blocks counted; false: not, one by one */
extern int sm_sampling; /* threads are armed: KFENCE, or the profiler not patched */
/* The operator new family's entries and counting forms (preload/cxx.c; weak: a static link
 * may leave the C++ names out) */
extern void *const sm_cxx_prof_entry[4][2] __attribute__((weak));

/* "debug.c": SLUBMALLOC_DEBUG caches (no thread stacks; every call comes here) */
void sm_debug_setup(struct cache *c, unsigned flags);
void sm_debug_slab_init(struct slab *s);   /* a new slab of a debug cache */
void *sm_debug_alloc(struct cache *c, size_t req, void *caller, unsigned form);
void sm_debug_free(struct slab *s, void *p, void *caller, unsigned form);
size_t sm_debug_usable(struct slab *s, const void *p);
void sm_debug_scan(const char *when);      /* every debug slot's red zones and poison */
/* a write of n bytes at dst by call (memcpy, ...), from ra: within one block, or a report */
void sm_debug_check_write(const void *dst, size_t n, const char *call, const void *ra);
void sm_debug_lock_all(void);              /* fork: the quarantine lock */
void sm_debug_unlock_all(void);

/* "prof.c": the heap profiler's samples and their stacks, SLUBMALLOC_PROF=1 */
void sm_prof_init(void);                   /* the profile caches (init) */
uint32_t sm_prof_record(size_t req);       /* the caller's stack, counted: its id; 0: none */
void sm_prof_drop(uint32_t id, size_t req); /* a sampled block of stack id was freed */
void sm_prof_caches_lock_all(void);        /* fork */
void sm_prof_caches_unlock_all(void);
void sm_prof_lock_all(void);
void sm_prof_unlock_all(void);

/* "prof_dump.c": the profile's output */
int sm_prof_dump(const char *path);        /* the profile, to path or the default */
void sm_prof_dump_after_fork(void);        /* a child: its name lock free */

/* "kfence.c": sampled guard pages, SLUBMALLOC_KFENCE=N */
void sm_kfence_init(uint32_t every);       /* the pool and the fault handler; then sampling */
bool sm_kfence_has(const void *p);         /* p points into the pool */
void sm_kfence_free(void *p);
size_t sm_kfence_usable(const void *p);
void sm_kfence_lock_all(void);             /* fork */
void sm_kfence_unlock_all(void);

/* "backtrace.c": the calling thread's stack, without this library's frames */
void sm_backtrace_init(void);              /* init: find this library, warm the unwinder up */
void sm_backtrace_lock_all(void);          /* fork: no thread is inside the unwinder */
void sm_backtrace_unlock_all(void);

/* "fault.c": faults in the allocator's no-access areas are reported (a signal handler) */
void sm_fault_init(void);

#pragma GCC visibility pop

#endif
