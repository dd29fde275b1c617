/* fork_faults: what the allocator's fork handlers cost, as page faults. A parent with a second
 * thread (so the handlers take the engine's locks) forks 200 times; each child mallocs and
 * frees once and exits. After a fork every page the parent writes faults once (copy on write),
 * and so does every page the child writes. The handlers write the lock words, so each page
 * that holds one costs a fault on each side, per fork.
 * Per fork, the parent may take 40 minor faults at most, the child 90.
 * Why: slubmalloc's 88 depots each kept their lock on a page of its own, and the profiler's
 * caches were locked with the profiler off: 112 faults in the parent and 139 in the child per
 * fork, 4 ms a fork on the CI VM (before 2026-12-05). glibc takes about 8 and 28.
 * Usage: fork_faults [forks (200)] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

enum { PARENT_MAX = 40, CHILD_MAX = 90 };

static volatile int stop;

static void *second_thread(void *arg)
{
    (void)arg;
    while (!stop) {
        free(malloc(100));
        usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    if (n < 1) {
        fprintf(stderr, "usage: fork_faults [forks]\n");
        return 2;
    }
    void *keep[64];
    for (int i = 0; i < 64; i++) /* some classes in use, as in a program that runs */
        keep[i] = malloc((size_t)16 << (i % 10));
    pthread_t t;
    if (pthread_create(&t, NULL, second_thread, NULL) != 0) {
        fprintf(stderr, "fork_faults: pthread_create failed\n");
        return 2;
    }
    /* one fork first: its faults include the pages touched for the first time */
    struct rusage r0, r1, c1;
    for (int i = 0; i <= n; i++) {
        if (i == 1)
            getrusage(RUSAGE_SELF, &r0);
        pid_t p = fork();
        if (p == 0) {
            free(malloc(32));
            _exit(0);
        }
        int st = 0;
        check(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "fork %d: the child failed", i);
        free(malloc(64));
    }
    getrusage(RUSAGE_SELF, &r1);
    getrusage(RUSAGE_CHILDREN, &c1);
    stop = 1;
    pthread_join(t, NULL);
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    double parent = (double)(r1.ru_minflt - r0.ru_minflt) / n;
    double child = (double)c1.ru_minflt / (n + 1);
    printf("fork_faults: %d forks: per fork %.1f minor faults in the parent (limit %d), %.1f in "
           "the child (limit %d)\n", n, parent, PARENT_MAX, child, CHILD_MAX);
    check(parent <= PARENT_MAX, "the parent took %.1f faults per fork (limit %d)", parent,
          PARENT_MAX);
    check(child <= CHILD_MAX, "a child took %.1f faults (limit %d)", child, CHILD_MAX);
    return tu_finish("fork_faults");
}
