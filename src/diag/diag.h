/* diag.h: the sampled and reported parts of the engine: SLUBMALLOC_KFENCE, the heap
 * profiler (SLUBMALLOC_PROF), the stacks they record, and the reports of faults. Included by
 * internal.h, after the types. */
#ifndef SM_DIAG_H
#define SM_DIAG_H

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
/* malloc_bulk's entry and counting form (bulk.c) */
extern void *const sm_bulk_prof_entry[2];
/* The operator new family's entries and counting forms (preload/cxx.c; weak: a static link
 * may leave the C++ names out) */
extern void *const sm_cxx_prof_entry[4][2] __attribute__((weak));

/* "prof.c": the heap profiler's samples and their stacks, SLUBMALLOC_PROF=1 */
struct prof_stack {
	uint64_t hash;
	uint32_t depth, next;     /* next: the next id of its hash chain; 0: none */
	int64_t inuse_n, inuse_bytes;
	uint64_t alloc_n, alloc_bytes;
	void *pc[PROF_FRAMES];
};
void sm_prof_init(void);                   /* the profile caches (init) */
uint32_t sm_prof_record(size_t req);       /* the caller's stack, counted: its id; 0: none */
void sm_prof_drop(uint32_t id, size_t req); /* a sampled block of stack id was freed */
/* a sampled block of class cls; from: as sm_backtrace's */
void *sm_prof_alloc(unsigned cls, size_t req, unsigned form, const void *from);
struct prof_stack *sm_prof_stack(uint32_t id);
uint32_t sm_prof_nstacks(void);
void sm_prof_counts(uint32_t id, struct prof_stack *out);
void sm_prof_after_sample(void);           /* prof_dump.c: SLUBMALLOC_PROF_INTERVAL's dumps */
int sm_prof_dump(const char *path);        /* prof_dump.c: the profile, to path or the default */
void sm_prof_dump_after_fork(void);        /* a child: its name lock free */
void sm_prof_caches_lock_all(void);        /* fork */
void sm_prof_caches_unlock_all(void);
void sm_prof_lock_all(void);
void sm_prof_unlock_all(void);

/* "kfence.c": sampled guard pages, SLUBMALLOC_KFENCE=N */
extern uint32_t sm_kfence_every;           /* N, or 0: off */
void sm_kfence_init(uint32_t every);       /* the pool and the fault handler; then sampling */
void *sm_kfence_alloc(size_t size);        /* a sampled object, or NULL (too soon) */
bool sm_kfence_has(const void *p);         /* p points into the pool */
void sm_kfence_free(void *p);
size_t sm_kfence_usable(const void *p);
void sm_kfence_fault(void *addr);          /* in the pool: a report, and abort */
void sm_kfence_lock_all(void);             /* fork */
void sm_kfence_unlock_all(void);

/* "backtrace.c": the calling thread's stack, without this library's frames */
void sm_backtrace_init(void);              /* init: find this library, warm the unwinder up */
void sm_backtrace_lock_all(void);          /* fork: no thread is inside the unwinder */
void sm_backtrace_unlock_all(void);
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

/* "fault.c": faults in the allocator's no-access areas are reported (a signal handler) */
void sm_fault_init(void);
bool sm_region_untouched(uintptr_t a);     /* region.c: a's page is one no slab has used yet */
enum { LF_NONE, LF_BEFORE, LF_AFTER, LF_FREED };
int sm_large_fault(uintptr_t a, uintptr_t *block, size_t *size); /* large.c: LF_*, no lock */
void sm_large_set_prof(void *p, uint32_t id, size_t req); /* large.c: p is a profile sample */

#pragma GCC visibility pop

#endif
