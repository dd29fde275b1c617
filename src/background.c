/* background.c: SLUBMALLOC_BACKGROUND=1: one thread gives freed memory back on time, also
 * while the program makes no calls. Without it, dirty slab pages and cached large ranges go
 * back only when a later free finds them past the purge delay (region.c, large.c), so an idle
 * program keeps what it freed last.
 * The thread purges what is due, then sleeps until the next deadline; after a purge delay with
 * nothing pending it sleeps until a kick. So it wakes about once a delay in a busy program, and
 * not at all in an idle one. It never allocates and never touches a thread cache (only the owner
 * writes one): objects in other threads' stacks go back at their next slow path or malloc_trim.
 * It starts at load (engine.c); a forked child starts its own at its first slow path.
 * bg_state is the futex word:
 *   BG_OFF: no thread; BG_STARTING: being created; BG_FAILED: pthread_create failed (never
 *   again); BG_ARMED: the thread runs, or sleeps until a deadline; BG_IDLE: it sleeps until
 *   a kick.
 * A kick comes under page_lock or large_lock, after memory became pending there: BG_IDLE ->
 * BG_ARMED, and a wake. The thread swaps in BG_IDLE, then looks for pending memory under both
 * locks, then waits on BG_IDLE. So a kick either finds BG_IDLE and wakes it, or held its lock
 * before the thread's look, which then sees its memory. */
#include "internal.h"

enum { BG_OFF, BG_STARTING, BG_FAILED, BG_ARMED, BG_IDLE };
static int bg_state;
int sm_bg_want; /* a forked child's thread is wanted (sm_bg_poll) */

/* Purge what is due; returns when the next purge is due, or 0 when nothing is pending. */
static uint64_t purge_due(void)
{
	uint64_t pages = sm_pages_purge_due(), large;
	sm_large_release(false, &large);
	return !pages || (large && large < pages) ? large : pages;
}

static void bg_main(void)
{
	bool lingered = false;
	for (;;) {
		uint64_t due = purge_due();
		if (due || !lingered) { /* nothing pending: one more delay before the kicks are
					 * needed, so a program that reuses its dirty pages at
					 * once does not kick it each time */
			uint64_t now = sm_os_now_ns(), wait = sm_opt.purge_delay_ns;
			if (due)
				wait = due > now ? due - now : 0;
			lingered = !due;
			sm_os_wait(&bg_state, BG_ARMED, wait + BG_SLACK_NS);
			continue;
		}
		lingered = false;
		__atomic_exchange_n(&bg_state, BG_IDLE, __ATOMIC_SEQ_CST);
		if (!purge_due())
			sm_os_wait(&bg_state, BG_IDLE, 0);
		__atomic_store_n(&bg_state, BG_ARMED, __ATOMIC_SEQ_CST);
	}
}

void sm_bg_start(void)
{
	int off = BG_OFF;
	__atomic_store_n(&sm_bg_want, 0, __ATOMIC_RELAXED);
	if (!sm_opt.background ||
	    !__atomic_compare_exchange_n(&bg_state, &off, BG_STARTING, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&bg_state, BG_ARMED, __ATOMIC_SEQ_CST);
	if (sm_os_thread_start(bg_main, "slubmalloc-bg"))
		return;
	__atomic_store_n(&bg_state, BG_FAILED, __ATOMIC_RELAXED);
	sm_write(2, "slubmalloc: warning: SLUBMALLOC_BACKGROUND: cannot start a thread; "
		    "memory goes back at later frees\n");
}

void sm_bg_kick(void)
{
	if (__atomic_load_n(&bg_state, __ATOMIC_RELAXED) == BG_IDLE &&
	    __atomic_exchange_n(&bg_state, BG_ARMED, __ATOMIC_SEQ_CST) == BG_IDLE)
		sm_os_wake(&bg_state);
}

/* fork.c, in the child: the thread stayed in the parent. */
void sm_bg_forked(void)
{
	bg_state = BG_OFF;
	sm_bg_want = sm_opt.background;
}
