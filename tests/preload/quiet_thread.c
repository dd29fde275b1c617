/* quiet_thread: free objects in a thread's cache keep their slabs. A thread that stays
 * on the fastpaths (a server idling in a timer loop) must still give them back: poked by the
 * background thread, or by malloc_trim in another thread, it drains at its next malloc.
 * A worker allocates 64 MiB of 32-byte objects, frees all but one in every SPREAD, then those
 * (its cache keeps the last of them, each in a slab of its own), then wakes every 10 ms for
 * one malloc and one free of 32 bytes. The main thread watches the RSS (/proc/self/statm).
 * Usage: quiet_thread background|trim|bulk (run.sh: SLUBMALLOC_PURGE_DELAY_MS=200, and
 * SLUBMALLOC_BACKGROUND=1 with background, 0 with the others).
 *   background: within 3 s, RSS must fall by 7/8 of what the frees left resident.
 *   trim: malloc_trim(0), 100 ms, malloc_trim(0): the same.
 *   bulk: as trim, but the worker's quiet loop calls malloc_bulk and free_bulk of BULK_N
 *   objects, nothing else.
 * background and trim failed before 2026-12-03: the cache kept all 64 MiB (its thread took no
 * slow path). bulk failed before 2026-12-07: the bulk calls cleared the pokes without a drain.
 * Without slubmalloc (SLUBMALLOC_EXPECT unset) it only reports. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define SIZE 32
#define NOBJ (2u << 20)
#define SPREAD 2048 /* a slab's worth of objects, or more */
#define BULK_N 8

static tu_malloc_bulk_fn bulk_alloc; /* set in bulk mode (slubmalloc's, found with dlsym) */
static tu_free_bulk_fn bulk_free;

static void *objs[NOBJ];
static atomic_int phase; /* 1: the worker's frees are done; 2: it must stop */

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long rss_kb(void)
{
    return tu_rss_statm() / 1024;
}

static void *worker(void *arg)
{
    (void)arg;
    for (size_t i = 0; i < NOBJ; i++) {
        objs[i] = malloc(SIZE);
        check(objs[i] != NULL, "malloc(%d) failed", SIZE);
        if (objs[i])
            memset(objs[i], 0x5a, SIZE);
    }
    for (size_t i = 0; i < NOBJ; i++)
        if (i % SPREAD)
            free(objs[i]);
    for (size_t i = 0; i < NOBJ; i += SPREAD)
        free(objs[i]);
    atomic_store(&phase, 1);
    while (atomic_load(&phase) == 1) { /* quiet: fastpath calls only */
        if (bulk_alloc) {
            void *v[BULK_N];
            size_t got = bulk_alloc(SIZE, BULK_N, v);
            for (size_t i = 0; i < got; i++)
                *(volatile char *)v[i] = 1;
            bulk_free(got, v);
            nap_ms(10);
            continue;
        }
        char *p = malloc(SIZE);
        if (p)
            *(volatile char *)p = 1;
        free(p);
        nap_ms(10);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "background";
    int expect = getenv("SLUBMALLOC_EXPECT") != NULL;
    int trim = !strcmp(mode, "trim") || !strcmp(mode, "bulk");
    if (!strcmp(mode, "bulk")) {
        if (!tu_find_bulk(&bulk_alloc, &bulk_free, expect))
            printf("quiet_thread bulk: no malloc_bulk here: the quiet loop calls malloc\n");
    }
    const char *d = getenv("SLUBMALLOC_PURGE_DELAY_MS");
    long delay = d ? atol(d) : 1000;
    memset(objs, 1, sizeof objs); /* resident before the start's figure */
    long base = rss_kb();
    pthread_t t;
    if (!check(pthread_create(&t, NULL, worker, NULL) == 0, "pthread_create failed"))
        return tu_finish("quiet_thread");
    while (atomic_load(&phase) != 1)
        nap_ms(10);
    long after = rss_kb(), now = after;
    int waited = 0;
    if (trim) {
        malloc_trim(0);
        nap_ms(100);
        malloc_trim(0);
        now = rss_kb();
    } else {
        /* first the freed slabs' pages go (a delay), then the cache's, a delay after the
         * worker went quiet */
        while (waited < 3000 + 3 * delay && now > base + (after - base) / 8) {
            nap_ms(50);
            waited += 50;
            now = rss_kb();
        }
    }
    atomic_store(&phase, 2);
    pthread_join(t, NULL);
    printf("quiet_thread %s: RSS %ld kB at start, %ld after the frees, %ld after %s\n",
           mode, base, after, now, trim ? "malloc_trim, 100 ms, malloc_trim" : "idle");
    if (!trim)
        printf("quiet_thread %s: waited %d ms\n", mode, waited);
    if (expect) {
        check(after - base >= 32768, "%s: the frees left only %ld kB resident: nothing to "
              "measure", mode, after - base);
        check(now <= base + (after - base) / 8, "%s: RSS still %ld kB (%ld at start, %ld after "
              "the frees): the quiet thread's cache kept its slabs", mode, now, base, after);
    }
    return tu_finish("quiet_thread");
}
