/* engine.c: the engine's global state and its initialisation.
 * sm_init() runs once, on the first slow-path call, whichever thread makes it, before main if
 * need be. It never allocates: no dlsym, no stdio. Options come from walking environ
 * (options.c).
 * With the engine ready, so that a malloc they make works, it registers the fork handlers
 * (fork.c) and the thread-exit key (thread.c).
 * Invariant: sm_g is written only here, before sm_g.ready is set (release); readers that
 * find it set (acquire) see it whole. */
#include <string.h>

#include "background.h"
#include "config.h"
#include "diag/diag.h"
#include "engine.h"
#include "fork.h"
#include "large.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "sizeclass.h"
#include "slab.h"
#include "stats.h"
#include "thread.h"
#include "types.h"
#include "zero.h"

/* Page-aligned: its fields keep their offsets in a page, as a thread's block (mmap) does. Where
 * .bss put it, changes elsewhere moved it; at one offset (0xbc0) the slub_cache bulk calls
 * took 1.8 times as long (bench/results/studies/fork-cost-2026-12-05-vm-4acc12a.md). */
struct sm_global sm_g __attribute__((aligned(4096)));
size_t sm_vec_min = SIZE_MAX;
__thread struct tcache *sm_tcp TLS_IE = (struct tcache *)&sm_tc_new;
__thread uint8_t sm_in_unwind TLS_IE;
size_t sm_page_size = 4096; /* the OS page: 4, 16 or 64 KiB, read at init */
__thread struct cache *sm_typed_in TLS_IE;

static sm_lock_t init_lock;
static int stats_fd = 2; /* a duplicate of stderr (programs may close fd 2 before exit), or
			  * SLUBMALLOC_STATS_FILE */

__attribute__((destructor)) static void at_exit_stats(void)
{
	if (sm_opt.stats)
		sm_stats_print(stats_fd);
}

void sm_init(void)
{
	if (__atomic_load_n(&sm_g.ready, __ATOMIC_ACQUIRE))
		return;
	sm_lock(&init_lock);
	if (sm_g.ready) {
		sm_unlock(&init_lock);
		return;
	}
	sm_os_cpu_init();
	sm_page_size = sm_os_page_size();
	sm_options_read();
	sm_os_random(&sm_g.secret, sizeof sm_g.secret);
	sm_vec_min = sm_opt.avx2 && cpu_has_avx2() ? 4 : SIZE_MAX;
	sm_sizeclass_init(sm_opt.stats);
	sm_region_first();
	if (sm_opt.kfence || sm_opt.prof || sm_opt.debug) /* debug: this library's range too */
		sm_backtrace_init();
	if (sm_opt.kfence)
		sm_kfence_init(sm_opt.kfence);
	sm_sample_init();
	if (sm_opt.debug & DBG_Z && sm_options_debugs("zero"))
		sm_zero_init(); /* malloc(0): blocks with no access; else 16-byte ones */
	sm_fault_init();
	sm_large_debug = sm_opt.debug & (DBG_Z | DBG_P | DBG_Q) && sm_options_debugs("large")
				 ? sm_opt.debug : 0;
	for (unsigned i = 0; i < NCLASS; i++) {
		char name[32] = "kmalloc-";
		unsigned sz = sm_class_size(i), k = 8;
		char digits[12];
		int d = 0;
		do
			digits[d++] = (char)('0' + sz % 10);
		while ((sz /= 10) && d < 11);
		while (d)
			name[k++] = digits[--d];
		name[k] = 0;
		sm_cache_setup(&sm_g.caches[i], name, sm_class_size(i), (uint16_t)i);
		if (sm_opt.debug && sm_options_debugs(name))
			sm_debug_setup(&sm_g.caches[i], sm_opt.debug);
	}
	if (sm_opt.prof)
		sm_prof_init();
	if (sm_opt.stats) {
		int fd = -1;
		if (sm_opt.stats_file[0]) {
			fd = sm_os_open_log(sm_opt.stats_file);
			if (fd < 0) {
				sm_write(2, "slubmalloc: warning: SLUBMALLOC_STATS_FILE: cannot open ");
				sm_write(2, sm_opt.stats_file);
				sm_write(2, "; statistics go to stderr\n");
			}
		}
		if (fd < 0)
			fd = sm_os_dup(2);
		stats_fd = fd >= 0 ? fd : 2;
	}
	if (sm_opt.verbose)
		sm_options_print();
	__atomic_store_n(&sm_g.ready, 1, __ATOMIC_RELEASE);
	sm_unlock(&init_lock);

	/* the engine works from here: these may allocate */
	sm_fork_register();
	sm_thread_init();
}

__attribute__((constructor)) static void init_at_load(void)
{
	sm_init();
	if (sm_opt.background) /* not in sm_init: a first malloc may come before libc can start
				* threads */
		sm_bg_start();
}
