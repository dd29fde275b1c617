/* fork_cost: what a fork costs a multi-threaded program. The parent holds 64 blocks of 16 B to
 * 8 KiB and runs a second thread that mallocs and frees every 100 us, so the allocator's fork
 * handlers take their locks. Then FORKS times: fork, the child mallocs and frees once and
 * exits, the parent waits for it and mallocs and frees once.
 * After a fork each page either side writes faults once (copy on write), so an allocator whose
 * fork handlers write many pages makes every fork slower.
 * Measures: wall time per fork (lower is better) and the minor faults per fork of the parent
 * and of the child (getrusage).
 * Usage: fork_cost [FORKS]
 * Prints: RESULT name=fork_cost us_per_fork=... parent_faults=... child_faults=... */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

#define DEFAULT_FORKS 500

static atomic_int stop;

static void *second_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		free(xmalloc_or_die(100));
		usleep(100);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	bench_name = "fork_cost";
	long n = argc > 1 ? atol(argv[1]) : DEFAULT_FORKS;
	if (n < 1)
		fatal(2, "usage: fork_cost [FORKS]");
	void *keep[64];
	for (int i = 0; i < 64; i++)
		keep[i] = xmalloc_or_die((size_t)16 << (i % 10));
	pthread_t t;
	if (pthread_create(&t, NULL, second_thread, NULL) != 0)
		fatal(2, "pthread_create failed");
	struct rusage r0, r1, c1;
	getrusage(RUSAGE_SELF, &r0);
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			fatal(3, "fork failed");
		if (p == 0) {
			free(malloc(32));
			_exit(0);
		}
		int st = 0;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fatal(3, "a child failed");
		free(xmalloc_or_die(64));
	}
	uint64_t t1 = now_ns();
	getrusage(RUSAGE_SELF, &r1);
	getrusage(RUSAGE_CHILDREN, &c1);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	printf("RESULT name=fork_cost us_per_fork=%.1f parent_faults=%.1f child_faults=%.1f\n",
	       (double)(t1 - t0) / 1e3 / (double)n, (double)(r1.ru_minflt - r0.ru_minflt) / (double)n,
	       (double)c1.ru_minflt / (double)n);
	return 0;
}
