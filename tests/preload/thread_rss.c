/* thread_rss: what a thread's first malloc adds to the resident set. 32 threads start and wait;
 * VmRSS is read; each thread then mallocs and writes one 16-byte object; VmRSS is read again.
 * The growth, per thread, must be at most 64 KiB. The stacks of the threads are resident at the
 * first reading already, so the difference is the allocator's own: its per-thread state and the
 * pages it touched for one object.
 * Why 64 KiB: on a kernel that maps no zero page (this project's CI VM), a read of an untouched
 * page faults in a real one. slubmalloc read the guard of every slot array of a new thread's
 * block, and so made 160 KiB of a 188 KiB block resident for one malloc (179 KiB per thread,
 * measured before 2026-12-05). glibc adds about 10 KiB here, mimalloc about 60 KiB.
 * Usage: thread_rss [threads (32)] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { MAX_THREADS = 256, LIMIT_KIB = 64 };

static pthread_barrier_t started, measured, allocated, done;

static void *thread_main(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&measured);
    char *p = malloc(16);
    check(p != NULL, "malloc(16) failed in a thread");
    if (p)
        memset(p, 0x5a, 16);
    pthread_barrier_wait(&allocated);
    pthread_barrier_wait(&done);
    free(p);
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
    pthread_barrier_init(&started, NULL, (unsigned)n + 1);
    pthread_barrier_init(&measured, NULL, (unsigned)n + 1);
    pthread_barrier_init(&allocated, NULL, (unsigned)n + 1);
    pthread_barrier_init(&done, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0) {
            fprintf(stderr, "thread_rss: pthread_create failed\n");
            return 2;
        }
    pthread_barrier_wait(&started);
    long before = tu_vmrss();
    pthread_barrier_wait(&measured);
    pthread_barrier_wait(&allocated);
    long after = tu_vmrss();
    pthread_barrier_wait(&done);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    check(before > 0 && after > 0, "VmRSS unreadable");
    long per = (after - before) / n / 1024;
    printf("thread_rss: %d threads, VmRSS %ld -> %ld KiB: %ld KiB per thread (limit %d)\n", n,
           before / 1024, after / 1024, per, LIMIT_KIB);
    check(per <= LIMIT_KIB, "a thread's first malloc added %ld KiB to VmRSS (limit %d)", per,
          LIMIT_KIB);
    return tu_finish("thread_rss");
}
