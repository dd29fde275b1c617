/* fork_plain: a thread that never allocated forks while the only thread flushes (src/freelist.c,
 * THE ONLY THREAD: its flushes push with plain stores). fork's prepare handler passes the gate
 * for the forking thread, so no child copies a plain section in progress. Without that, a
 * child copies the section's count, its thread waits at the gate for a section that never
 * ends, and alarm(5) kills it.
 * Each round is a process of its own, forked by this single-threaded one: its main thread is
 * the only thread, and it starts a second thread that does not allocate. The main thread frees
 * and allocates 60,000 objects in shuffled order (a flush every few hundred frees) while the
 * second thread waits a moment and forks. The grandchild allocates, checks and frees. Passes
 * under glibc too.
 * Usage: fork_plain [rounds (100)] */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OBJECTS 60000

static atomic_int stop;
static long wait_us;

/* The grandchild: the forking thread is its only thread. */
static void grandchild(void)
{
	alarm(5);
	void *p[256];
	for (int r = 0; r < 50; r++) {
		for (int i = 0; i < 256; i++) {
			if (!(p[i] = malloc(16 + (size_t)(i % 32) * 16)))
				_exit(3);
			memset(p[i], i, 16);
		}
		for (int i = 0; i < 256; i++) {
			if (((unsigned char *)p[i])[15] != (unsigned char)i)
				_exit(4);
			free(p[i]);
		}
	}
	_exit(0);
}

/* The second thread: it allocates nothing before the fork. */
static void *forker(void *arg)
{
	(void)arg;
	struct timespec t = {.tv_sec = 0, .tv_nsec = wait_us * 1000};
	nanosleep(&t, NULL);
	pid_t pid = fork();
	if (pid == 0)
		grandchild();
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		status = -1;
	atomic_store(&stop, 1);
	return (void *)(intptr_t)status;
}

static int round_main(void)
{
	static void *obj[OBJECTS];
	static uint32_t order[OBJECTS];
	uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1;
	for (uint32_t i = 0; i < OBJECTS; i++) {
		order[i] = i;
		if (!(obj[i] = malloc(48)))
			return 3;
	}
	for (uint32_t i = OBJECTS - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t j = (uint32_t)(x % (i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, forker, NULL))
		return 5;
	while (!atomic_load(&stop)) {
		for (uint32_t i = 0; i < OBJECTS; i++)
			free(obj[order[i]]);
		for (uint32_t i = 0; i < OBJECTS; i++)
			if (!(obj[i] = malloc(48)))
				return 3;
	}
	void *status;
	pthread_join(t, &status);
	int st = (int)(intptr_t)status;
	if (st == -1)
		return 6;
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "fork_plain: the grandchild died of signal %d%s\n", WTERMSIG(st),
			WTERMSIG(st) == SIGALRM ? " (it hung)" : "");
		return 1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 7;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	for (int r = 0; r < rounds; r++) {
		wait_us = 200 + (r * 977) % 3000;
		pid_t pid = fork();
		if (pid == 0)
			_exit(round_main());
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid) {
			fprintf(stderr, "fork_plain: fork or waitpid failed\n");
			return 1;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "fork_plain: round %d failed (status %#x)\n", r, status);
			return 1;
		}
	}
	printf("fork_plain: %d rounds passed\n", rounds);
	return 0;
}
