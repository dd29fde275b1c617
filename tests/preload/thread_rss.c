/* thread_rss: what a thread's first mallocs add to the resident set. 32 threads start and wait,
 * and VmRSS is read between steps. Step 1: each thread mallocs and writes one 16-byte object.
 * Step 2: one object of each of 40 sizes, 32..656 bytes (26 size classes). The stacks of the
 * threads are resident before step 1, so the growth is the allocator's own: its per-thread
 * state and the pages it touched for those objects. Per thread, step 1 may add 64 KiB at most,
 * step 2 240 KiB.
 * Why: on a kernel that maps no zero page (this project's CI VM), a read of an untouched page
 * faults in a real one. slubmalloc read the guard of every slot array of a new thread's block,
 * and so made 160 KiB of a 188 KiB block resident for one malloc (168 KiB per thread in step 1
 * before 2026-12-05). A class's first refill keyed half a stack of objects, 8 KiB of them
 * for most classes, so two pages each (289 KiB in step 2; a page's worth: 189 KiB).
 * glibc adds about 6 KiB in step 1, jemalloc 35, mimalloc 60.
 * Usage: thread_rss [threads (32)] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { MAX_THREADS = 256, SIZES = 40, LIMIT1_KIB = 64, LIMIT2_KIB = 240 };

static pthread_barrier_t step;

static void *thread_main(void *arg)
{
    (void)arg;
    char *p[SIZES + 1];
    pthread_barrier_wait(&step); /* started */
    pthread_barrier_wait(&step); /* read */
    p[SIZES] = malloc(16);
    pthread_barrier_wait(&step); /* step 1 done */
    pthread_barrier_wait(&step); /* read */
    for (int i = 0; i < SIZES; i++)
        p[i] = malloc(32 + 16 * (size_t)i);
    pthread_barrier_wait(&step); /* step 2 done */
    pthread_barrier_wait(&step); /* read */
    for (int i = 0; i <= SIZES; i++) {
        check(p[i] != NULL, "malloc failed in a thread");
        if (p[i])
            memset(p[i], 0x5a, 16);
        free(p[i]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 32;
    if (n < 1 || n > MAX_THREADS) {
        fprintf(stderr, "usage: thread_rss [threads, 1..%d]\n", MAX_THREADS);
        return 2;
    }
    free(malloc(16)); /* the main thread's own first malloc is not counted */
    pthread_t t[MAX_THREADS];
    pthread_barrier_init(&step, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0) {
            fprintf(stderr, "thread_rss: pthread_create failed\n");
            return 2;
        }
    long rss[3];
    for (int k = 0; k < 3; k++) {
        pthread_barrier_wait(&step); /* started, step 1 done, step 2 done */
        rss[k] = tu_vmrss();
        pthread_barrier_wait(&step);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    check(rss[0] > 0 && rss[1] > 0 && rss[2] > 0, "VmRSS unreadable");
    long per1 = (rss[1] - rss[0]) / n / 1024, per2 = (rss[2] - rss[1]) / n / 1024;
    printf("thread_rss: %d threads, VmRSS %ld -> %ld -> %ld KiB: per thread %ld KiB for one "
           "object (limit %d), %ld KiB for %d sizes (limit %d)\n", n, rss[0] / 1024,
           rss[1] / 1024, rss[2] / 1024, per1, LIMIT1_KIB, per2, SIZES, LIMIT2_KIB);
    check(per1 <= LIMIT1_KIB, "a thread's first malloc added %ld KiB to VmRSS (limit %d)", per1,
          LIMIT1_KIB);
    check(per2 <= LIMIT2_KIB, "a thread's first %d sizes added %ld KiB to VmRSS (limit %d)",
          SIZES, per2, LIMIT2_KIB);
    return tu_finish("thread_rss");
}
