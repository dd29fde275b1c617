/* pcpu_test.h: the per-CPU unit tests' driver. pcpu_test_main() runs the test body in the
 * mode this process got (rseq when the kernel and glibc allow it), then re-executes the test
 * (/proc/self/exe) once with GLIBC_TUNABLES=glibc.pthread.rseq=0, where the body must run in
 * the fallback mode; the parent fails unless that child exits 0. So tests/run.sh covers both
 * modes with one executable. */
#ifndef UNIT_PCPU_TEST_H
#define UNIT_PCPU_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "slubmalloc.h"

#define PCPU_TEST_CHILD "UNIT_PCPU_FALLBACK_CHILD"

static inline double pcpu_test_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

extern char **environ;

static inline int pcpu_test_main(const char *name, char **argv, void (*body)(int rseq))
{
	setvbuf(stdout, NULL, _IONBF, 0);
	int child = getenv(PCPU_TEST_CHILD) != NULL;
	int rseq = pcpu_rseq_active();
	if (child)
		CHECK(!rseq, "%s: GLIBC_TUNABLES=glibc.pthread.rseq=0 did not select the fallback",
		      name);
	printf("%s: %s mode, %d possible CPUs%s\n", name, rseq ? "rseq" : "fallback",
	       pcpu_nr_cpus(), child ? " (re-executed with glibc.pthread.rseq=0)" : "");
	if (!child && !rseq)
		printf("%s: note: rseq + membarrier RSEQ unavailable here; both runs use the "
		       "fallback\n", name);
	double t0 = pcpu_test_now();
	body(rseq);
	printf("%s: %s mode passed in %.2f s\n", name, rseq ? "rseq" : "fallback",
	       pcpu_test_now() - t0);
	if (child)
		return 0;

	/* the same body again, with glibc's rseq registration turned off */
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "GLIBC_TUNABLES=", 15))
			env[k++] = environ[i];
	env[k++] = (char *)"GLIBC_TUNABLES=glibc.pthread.rseq=0";
	env[k++] = (char *)PCPU_TEST_CHILD "=1";
	env[k] = NULL;
	pid_t pid = fork();
	CHECK(pid >= 0, "fork failed");
	if (pid == 0) {
		execve("/proc/self/exe", argv, env);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid failed");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the fallback-mode run (GLIBC_TUNABLES=glibc.pthread.rseq=0) failed: status %#x", st);
	free(env);
	printf("%s: PASS (%s run, then fallback run)\n", name, rseq ? "rseq" : "fallback");
	return 0;
}
#endif
