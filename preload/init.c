/* init.c: process and thread life cycle. sm_init() runs once, on the first slow-path call,
 * whichever thread makes it, before main if need be; it never allocates: no dlsym, no stdio,
 * options read by walking environ (src/options.c). Then, with the engine ready (so that a
 * malloc they may make works), it registers the fork handlers (src/fork.c) and the thread-exit
 * key. The child of a fork keeps the forking thread's cache; other threads' caches and active
 * slabs are never used again (their objects stay allocated in the child).
 * Thread exit: the key's destructor hands the thread's objects and active slabs back and marks
 * the thread dead; later calls from it use the orphan cache (alloc.c). */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

struct sm_global sm_g;
uint64_t sm_free_key;
size_t sm_vec_min = SIZE_MAX;
__thread struct tcache sm_tc TLS_IE;

static sm_lock_t init_lock;
static pthread_key_t exit_key;
static int exit_key_ok;
static int stats_fd = 2; /* a duplicate of stderr (programs may close fd 2 before exit), or
			  * SLUBMALLOC_STATS_FILE */

static void thread_exit(void *arg)
{
	struct tcache *tc = arg;
	sm_thread_teardown(tc); /* it leaves the registry first: no reader sees tc->st after */
	sm_stats_thread_exit(tc);
	tc->state = T_DEAD;
}

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
	sm_options_read();
	sm_os_random(&sm_g.secret, sizeof sm_g.secret);
	sm_os_random(&sm_free_key, sizeof sm_free_key);
	sm_free_key |= 1ULL << 63 | 1;
	sm_vec_min = sm_opt.avx2 && cpu_has_avx2() ? 4 : SIZE_MAX;
	sm_sizeclass_init(sm_opt.stats);
	sm_region_first();
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
	if (sm_opt.stats) {
		int fd = -1;
		if (sm_opt.stats_file[0]) {
			fd = open(sm_opt.stats_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0) {
				sm_write(2, "slubmalloc: warning: SLUBMALLOC_STATS_FILE: cannot open ");
				sm_write(2, sm_opt.stats_file);
				sm_write(2, "; statistics go to stderr\n");
			}
		}
		if (fd < 0)
			fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
		stats_fd = fd >= 0 ? fd : 2;
	}
	if (sm_opt.verbose)
		sm_options_print();
	__atomic_store_n(&sm_g.ready, 1, __ATOMIC_RELEASE);
	sm_unlock(&init_lock);

	/* the engine works from here: these may allocate */
	sm_fork_register();
	exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

void sm_thread_start(struct tcache *tc)
{
	sm_init();
	sm_thread_setup(tc);
	sm_stats_thread_start(tc);
	if (tc->state == T_LIVE)
		sm_typed_register(tc);
	if (exit_key_ok)
		pthread_setspecific(exit_key, tc);
}

__attribute__((constructor)) static void init_at_load(void)
{
	sm_init();
}
