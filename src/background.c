/* background.c: SLUBMALLOC_BACKGROUND=1: one thread gives freed memory back on time, also
 * while the program makes no calls. Without it, dirty slab pages and cached large ranges go
 * back only when a later free finds them past the purge delay (region.c, large.c), so an idle
 * program keeps what it freed last.
 * The thread purges what is due, then sleeps until the next deadline; after a purge delay with
 * nothing pending it sleeps until a kick. So it wakes about once a delay in a busy program, and
 * not at all in an idle one. It never allocates.
 * Free objects in a thread's stacks keep their slabs. Once a delay, it pokes each thread that
 * has made no refill or flush since its last look (sm_poke: one CAS per floor): that thread's
 * next malloc drains its cache, and the drained pages are purged a delay later. A thread is
 * poked again only after POKE_AGAIN more refills and flushes, so neither a sleeping thread nor
 * the refills after a drain bring another poke.
 * With SLUBMALLOC_DEBUG's red zones or poison, each look checks every debug block (debug.c).
 * It starts at load (engine.c); a forked child starts its own at its first slow path.
 * bg_state is the futex word:
 *   BG_OFF: no thread; BG_STARTING: being created; BG_FAILED: pthread_create failed (never
 *   again); BG_ARMED: the thread runs, or sleeps until a deadline; BG_IDLE: it sleeps until
 *   a kick.
 * A kick comes under page_lock or large_lock, after memory became pending there: BG_IDLE ->
 * BG_ARMED, and a wake. The thread swaps in BG_IDLE, then looks for pending memory under both
 * locks, then waits on BG_IDLE. So a kick either finds BG_IDLE and wakes it, or held its lock
 * before the thread's look, which then sees its memory.
 * A thread's flush kicks too, with no lock: its free stack is full, and it may go quiet with
 * that much. The thread goes idle only after a look found every thread quiet and poked.
 * glibc ends the process when its last thread ends, and it counts this thread. So each
 * thread's exit wakes it (sm_bg_thread_left), and when it is the process's last thread it
 * ends the process as glibc would, with exit(0). */
#include "background.h"
#include "config.h"
#include "diag/diag.h"
#include "large.h"
#include "options.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "trim.h"
#include "typed.h"
#include "types.h"

enum { BG_OFF, BG_STARTING, BG_FAILED, BG_ARMED, BG_IDLE };
static int bg_state;
enum { BG_LEFT_OTHER = 1, BG_LEFT_MAIN = 2 };
static int bg_left; /* a thread ended since the thread last counted them (BG_LEFT_MAIN: the
		     * main one was among them), else 0 */
int sm_bg_want; /* a forked child's thread is wanted (sm_bg_poll) */

/* Purge what is due; returns when the next purge is due, or 0 when nothing is pending. */
static uint64_t purge_due(void)
{
	uint64_t pages = sm_pages_purge_due(), large;
	sm_large_release(false, &large);
	return !pages || (large && large < pages) ? large : pages;
}

/* Under the registry lock (sm_typed_registry_walk): poke tc if it has been quiet since the
 * last look. Once poked, only after POKE_AGAIN more refills and flushes: its drain and the few
 * refills after it are not a new spell of work. *busy: whether a thread was poked, or worked. */
static void poke_quiet(struct tcache *tc, void *busy)
{
	uint32_t n = __atomic_load_n(&tc->slow_n, __ATOMIC_RELAXED);
	if (n != tc->bg_seen) {
		tc->bg_seen = n;
		if (tc->bg_poked && n - tc->bg_poked_at < POKE_AGAIN)
			return;
		tc->bg_poked = 0;
		*(bool *)busy = true; /* it may go quiet before the next look */
	} else if (!tc->bg_poked) { /* its drain comes at its next malloc */
		sm_poke(tc);
		tc->bg_poked = 1;
		tc->bg_poked_at = n;
		*(bool *)busy = true;
	}
}

/* A thread ended (bg_left): when this one is left alone, the process ends. While the main
 * thread runs, that cannot be: it ends the process itself. Once it has ended or is ending
 * (pthread_exit: BG_LEFT_MAIN), the thread that woke this one may still be on its way out, so
 * it counts again for up to ALONE_WAIT_MS. Others that live on: the program goes on, and the
 * next exit wakes it again. */
static void exit_if_alone(int left)
{
	int never = 0;
	for (int ms = 0; ms <= ALONE_WAIT_MS; ms++) {
		bool leader_ended;
		int n = sm_os_live_threads(&leader_ended);
		if (n < 1 || (!leader_ended && left != BG_LEFT_MAIN) || (leader_ended && n > 2))
			return;
		if (leader_ended && n == 1)
			sm_os_exit(0);
		sm_os_wait(&never, 0, 1000000);
	}
}

static void bg_main(void)
{
	bool lingered = false;
	uint64_t look = 0; /* when the threads are looked at next */
	for (;;) {
		int left = __atomic_exchange_n(&bg_left, 0, __ATOMIC_ACQUIRE);
		if (left)
			exit_if_alone(left);
		uint64_t due = purge_due(), now = sm_os_now_ns();
		bool busy = false;
		if (now >= look) {
			if (sm_opt.debug & (DBG_Z | DBG_P))
				sm_debug_scan("by the background thread");
			sm_typed_registry_walk(poke_quiet, &busy);
			look = now + sm_opt.purge_delay_ns;
		}
		if (due || !lingered || busy) { /* nothing pending: one more delay before the kicks
						 * are needed, so a program that reuses its dirty
						 * pages at once does not kick it each time; a thread
						 * may go quiet, and a poke's drain is still to come */
			uint64_t wait = sm_opt.purge_delay_ns;
			if (due)
				wait = due > now ? due - now : 0;
			lingered = !due && !busy;
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

/* Is the thread there (mallctl's "background_thread")? */
bool sm_bg_running(void)
{
	int st = __atomic_load_n(&bg_state, __ATOMIC_RELAXED);
	return st != BG_OFF && st != BG_FAILED;
}

void sm_bg_kick(void)
{
	if (__atomic_load_n(&bg_state, __ATOMIC_RELAXED) == BG_IDLE &&
	    __atomic_exchange_n(&bg_state, BG_ARMED, __ATOMIC_SEQ_CST) == BG_IDLE)
		sm_os_wake(&bg_state);
}

/* thread.c, at a thread's exit: the thread counts whether it is the last one left. */
void sm_bg_thread_left(void)
{
	int st = __atomic_load_n(&bg_state, __ATOMIC_RELAXED);
	if (st != BG_ARMED && st != BG_IDLE)
		return;
	__atomic_fetch_or(&bg_left, sm_os_thread_is_main() ? BG_LEFT_MAIN : BG_LEFT_OTHER,
			  __ATOMIC_RELEASE);
	__atomic_exchange_n(&bg_state, BG_ARMED, __ATOMIC_SEQ_CST);
	sm_os_wake(&bg_state);
}

/* fork.c, in the child: the thread stayed in the parent. */
void sm_bg_forked(void)
{
	bg_state = BG_OFF;
	sm_bg_want = sm_opt.background;
}
