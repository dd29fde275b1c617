/* fork.c: the allocator across fork(). The rule is written once, in the lock order at the top
 * of src/freelist.c; this file carries it out.
 * Multi-threaded process: prepare takes glibc's stdio list lock, then every engine lock in
 * that order, so the child starts with each structure whole. The parent releases them; the
 * child re-initialises them, and the locks that guard only scratch buffers (statistics).
 * Before them, prepare passes the gate of the only thread (freelist.c): a plain section has
 * no lock, so the gate is what keeps a fork from copying a word half written.
 * Single-threaded process: nothing is taken (glibc's rule for its own malloc), so a signal
 * handler may fork, even while its thread is inside fork.
 * Invariant: fork_locked is 1 from a prepare that took the locks to its parent or child
 * handler, and written only while they are held (or by a single-threaded process): two
 * threads that fork at once each see their own. */
#include <pthread.h>
#include <sys/single_threaded.h>

#include "background.h"
#include "diag/diag.h"
#include "fork.h"
#include "freelist.h"
#include "jemalloc/compat.h"
#include "large.h"
#include "options.h"
#include "region.h"
#include "stats.h"
#include "thread.h"
#include "typed.h"
#include "percpu_internal.h"

/* glibc's stdio list lock (recursive), exported by libc.so.6; weak: absent elsewhere. fork
 * takes it itself after the atfork handlers, and resets it in a multi-threaded child. */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));

static int fork_locked;

/* The locks of the options that are off (sm_opt is fixed at init) are never taken, so they
 * are skipped: after the fork, each page the parent writes faults (copy on write). */
static bool quarantine_on(void)
{
	return sm_opt.debug || sm_opt.prof; /* (the profile's caches are debug caches) */
}

static void engine_lock_all(void)
{
	sm_backtrace_lock_all();
	sm_orphan_lock_all();
	sm_typed_lock_all();
	sm_block_lock_all();
	sm_caches_lock_all();
	if (sm_opt.prof)
		sm_prof_caches_lock_all();
	sm_region_lock_all();
	sm_large_lock_all();
	if (quarantine_on())
		sm_debug_lock_all();
	if (sm_opt.kfence)
		sm_kfence_lock_all();
	if (sm_opt.prof)
		sm_prof_lock_all();
	pcpu_lock_all();
}

static void engine_unlock_all(bool child)
{
	pcpu_unlock_all(child);
	if (sm_opt.prof)
		sm_prof_unlock_all();
	if (sm_opt.kfence)
		sm_kfence_unlock_all();
	if (quarantine_on())
		sm_debug_unlock_all();
	sm_large_unlock_all(child);
	sm_region_unlock_all(child);
	if (sm_opt.prof)
		sm_prof_caches_unlock_all();
	sm_caches_unlock_all(child);
	sm_block_unlock_all();
	sm_typed_unlock_all(child);
	sm_orphan_unlock_all(child);
	sm_backtrace_unlock_all();
}

static void fork_prepare(void)
{
	if (__libc_single_threaded) {
		fork_locked = 0;
		return;
	}
	/* The only thread may be inside a plain section (freelist.c, THE ONLY THREAD) while
	 * another thread forks: the gate waits for it, and the child gets whole words. */
	sm_gate();
	/* Another thread may hold a FILE's lock and wait for an engine lock inside malloc, while
	 * a third holds the list lock (fflush(NULL)) and waits for that FILE: so the list lock
	 * first, as glibc's fork orders it before its own malloc's locks. */
	if (_IO_list_lock)
		_IO_list_lock();
	engine_lock_all();
	fork_locked = 1;
}

static void fork_parent(void)
{
	if (!fork_locked)
		return;
	fork_locked = 0;
	engine_unlock_all(false);
	if (_IO_list_unlock)
		_IO_list_unlock();
}

static void fork_child(void)
{
	sm_bg_forked();
	if (!fork_locked)
		return;
	fork_locked = 0;
	engine_unlock_all(true);
	sm_stats_after_fork();
	sm_ctl_after_fork();
	sm_prof_dump_after_fork();
	/* glibc resets it too when it saw threads; either way only this thread held it */
	if (_IO_list_resetlock)
		_IO_list_resetlock();
}

void sm_fork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
