/* thread_exit: per-thread allocator state must not leak when threads exit.
 * Part 1: 10,000 short-lived threads (batches of 8 concurrent) each churn through many size
 * classes, then allocate objects, hand them to the main thread and exit; main verifies and frees
 * them a few batches later. Part 2: threads that never allocate, only free objects allocated by
 * main, in a loop. In both parts VmRSS growth after warm-up must stay below 64 MiB and every
 * object's content is verified at free. Usage: thread_exit [threads] [max_growth_MiB] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { BATCH = 8, PER_THREAD = 24, LAG = 4 };

static const size_t class_sizes[] = { 8, 16, 24, 32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512,
                                      768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768 };
enum { NCLASS = sizeof class_sizes / sizeof class_sizes[0] };

struct handoff {
    void *p[PER_THREAD];
    size_t n[PER_THREAD];
};

static struct handoff ring[LAG + 1][BATCH];
static long n_threads = 10000;
static long max_growth;

static void *alloc_thread(void *arg)
{
    struct handoff *h = arg;
    /* objects for the main thread to free later */
    for (int i = 0; i < PER_THREAD; i++) {
        size_t n = class_sizes[((size_t)i * 7 + ((uintptr_t)h >> 4)) % NCLASS];
        h->p[i] = malloc(n);
        check(h->p[i] != NULL, "thread: malloc(%zu) failed", n);
        h->n[i] = h->p[i] ? n : 0;
        if (h->p[i])
            tu_obj_fill(h->p[i], n);
    }
    /* then touch every size class a few times, so the thread has local state (cached free
     * objects, partly used slabs) in all of them when it exits */
    void *tmp[NCLASS * 3];
    for (int k = 0; k < NCLASS * 3; k++) {
        tmp[k] = malloc(class_sizes[k % NCLASS]);
        if (check(tmp[k] != NULL, "thread: malloc(%zu) failed", class_sizes[k % NCLASS]))
            memset(tmp[k], 0x3c, class_sizes[k % NCLASS]);
    }
    for (int k = NCLASS * 3 - 1; k >= 0; k--)
        free(tmp[k]);
    return NULL;
}

static void release(struct handoff *h, const char *where)
{
    for (int i = 0; i < PER_THREAD; i++) {
        if (!h->p[i])
            continue;
        check(tu_obj_check(h->p[i], h->n[i]), "%s: object %p (%zu bytes) corrupted", where, h->p[i], h->n[i]);
        free(h->p[i]);
        h->p[i] = NULL;
    }
}

static int spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    int r = pthread_create(t, &at, fn, arg);
    pthread_attr_destroy(&at);
    return check(r == 0, "pthread_create failed: %s", strerror(r));
}

static void part_alloc_handoff(void)
{
    long batches = n_threads / BATCH, base = -1, peak = 0;
    for (long b = 0; b < batches; b++) {
        /* objects handed over LAG batches ago (by threads long gone) are freed by main now */
        struct handoff *slot = ring[b % (LAG + 1)];
        for (int i = 0; i < BATCH; i++)
            release(&slot[i], "part 1");
        pthread_t t[BATCH];
        int ok[BATCH];
        for (int i = 0; i < BATCH; i++)
            ok[i] = spawn(&t[i], alloc_thread, &slot[i]);
        for (int i = 0; i < BATCH; i++)
            if (ok[i])
                pthread_join(t[i], NULL);
        if (b == 25)
            base = tu_vmrss();
        if (b > 25 && b % 16 == 0) {
            long r = tu_vmrss();
            if (r > peak)
                peak = r;
        }
    }
    for (int s = 0; s <= LAG; s++)
        for (int i = 0; i < BATCH; i++)
            release(&ring[s][i], "part 1 drain");
    long end = tu_vmrss();
    if (end > peak)
        peak = end;
    printf("part 1: %ld threads allocated and exited; VmRSS after warm-up %ld KiB, peak %ld KiB, end %ld KiB "
           "(growth %ld KiB)\n", batches * BATCH, base >> 10, peak >> 10, end >> 10, (peak - base) >> 10);
    check(base > 0, "could not read VmRSS");
    check(peak - base < max_growth, "part 1: VmRSS grew by %ld KiB over %ld short-lived threads (limit %ld KiB)",
          (peak - base) >> 10, batches * BATCH, max_growth >> 10);
}

static void *free_thread(void *arg)
{
    release(arg, "part 2 (freeing thread)");
    return NULL;
}

static void part_free_only(void)
{
    long batches = n_threads / BATCH, base = -1, peak = 0;
    uint64_t rng = 77;
    static struct handoff h[BATCH];
    for (long b = 0; b < batches; b++) {
        for (int i = 0; i < BATCH; i++)
            for (int k = 0; k < PER_THREAD; k++) {
                size_t n = class_sizes[tu_rand(&rng) % NCLASS];
                h[i].p[k] = malloc(n);
                check(h[i].p[k] != NULL, "main: malloc(%zu) failed", n);
                h[i].n[k] = h[i].p[k] ? n : 0;
                if (h[i].p[k])
                    tu_obj_fill(h[i].p[k], n);
            }
        pthread_t t[BATCH];
        int ok[BATCH];
        for (int i = 0; i < BATCH; i++)
            ok[i] = spawn(&t[i], free_thread, &h[i]);
        for (int i = 0; i < BATCH; i++) {
            if (ok[i])
                pthread_join(t[i], NULL);
            else
                release(&h[i], "part 2 (main)");
        }
        if (b == 25)
            base = tu_vmrss();
        if (b > 25 && b % 16 == 0) {
            long r = tu_vmrss();
            if (r > peak)
                peak = r;
        }
    }
    long end = tu_vmrss();
    if (end > peak)
        peak = end;
    printf("part 2: %ld threads only freed; VmRSS after warm-up %ld KiB, peak %ld KiB (growth %ld KiB)\n",
           batches * BATCH, base >> 10, peak >> 10, (peak - base) >> 10);
    check(base > 0, "could not read VmRSS");
    check(peak - base < max_growth, "part 2: VmRSS grew by %ld KiB over %ld freeing-only threads (limit %ld KiB)",
          (peak - base) >> 10, batches * BATCH, max_growth >> 10);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        n_threads = atol(argv[1]);
    max_growth = (argc > 2 ? atol(argv[2]) : 64) << 20;
    if (n_threads < 800)
        n_threads = 800;
    alarm(240);
    part_alloc_handoff();
    part_free_only();
    return tu_finish("thread_exit");
}
