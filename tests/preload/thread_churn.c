/* thread_churn: 10,000 short-lived threads (argv[1]), created in waves of 16..64 (never more
 * than 64 alive). Each thread allocates 64 objects of 15 sizes (32 B..16 KiB, each with a header
 * naming its size, owner and pattern seed, the rest filled with the pattern), frees half of them
 * itself, puts a quarter into a shared mutex-protected pool, takes objects other threads left in
 * the pool (most of them from threads that have exited), verifies header and contents and frees
 * them, frees its last quarter and exits: so every thread exits with objects in its own cache
 * and objects of its own still alive in the pool, to be freed later by other threads.
 * RSS must stay bounded: VmRSS is read (between waves, no thread alive) after the first 1000
 * threads ("early") and then every 1000 threads up to the end; each reading must be at most
 * max(2 x early, early + 64 MiB).
 * Why that bound: a thread allocates ~64 x 1.9 KiB = ~120 KiB and, when it exits, its cache
 * holds the ~90 KiB it freed itself (the stacks keep up to 16 KiB per size class, 15 classes used)
 * plus its per-thread slot block and partly used active slabs. If the caches of exited threads
 * leaked, the 9,000 threads after the early reading would add >= 9,000 x ~90 KiB = ~800 MiB of
 * written (resident) memory: more than 10x the 64 MiB allowed (measured with an engine whose
 * thread-exit teardown was removed: +1.8 GiB, ~200 KiB per thread). The live data at any reading is
 * bounded (the pool holds at most 4096 objects, ~8 MiB), so a correct allocator stays well
 * within it. THREAD_CHURN_LEAK=1 makes each thread leak its last quarter (~30 KiB) instead of
 * freeing it, which simulates a cache leak a third of that size: the test must then fail.
 * Usage: thread_churn [threads (10000)] */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { PER_THREAD = 64, POOL_CAP = 4096, MAX_ALIVE = 64, MIN_WAVE = 16, TAKE = 20 };
#define OBJ_MAGIC 0x6f626a63u

static const size_t obj_sizes[] = { 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 4096, 16384 };
enum { NSIZES = sizeof obj_sizes / sizeof obj_sizes[0] };

struct objhdr {
    uint32_t magic;
    uint32_t size;
    uint64_t owner; /* serial number of the allocating thread */
    uint64_t seed;
    uint64_t check; /* magic ^ size ^ owner ^ seed, mixed */
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct objhdr *pool[POOL_CAP];
static size_t pool_n;

static atomic_long verified, handed_off;
static int leak_mode;

static uint64_t hdr_check(const struct objhdr *h)
{
    uint64_t x = h->magic ^ ((uint64_t)h->size << 32) ^ h->owner * 0x9E3779B97F4A7C15ULL ^ h->seed;
    x ^= x >> 31;
    return x * 0xD6E8FEB86659FD93ULL;
}

static struct objhdr *obj_new(size_t n, uint64_t owner, uint64_t *rng)
{
    struct objhdr *h = malloc(n);
    if (!check(h != NULL, "thread %lu: malloc(%zu) failed: %s", (unsigned long)owner, n, strerror(errno)))
        return NULL;
    h->magic = OBJ_MAGIC;
    h->size = (uint32_t)n;
    h->owner = owner;
    h->seed = tu_rand(rng) | 1;
    h->check = hdr_check(h);
    fu_fill(h, sizeof *h, n, h->seed);
    return h;
}

/* Verifies header and contents, then frees. */
static void obj_free(struct objhdr *h, uint64_t self, const char *where)
{
    if (!h)
        return;
    int ok = check(h->magic == OBJ_MAGIC && h->check == hdr_check(h),
                   "%s (thread %lu): object %p has a corrupted header (magic %#x size %u owner %lu)", where,
                   (unsigned long)self, (void *)h, h->magic, h->size, (unsigned long)h->owner);
    if (ok) {
        size_t bad = fu_verify(h, sizeof *h, h->size, h->seed);
        ok = check(bad == (size_t)-1, "%s (thread %lu): object %p of %u bytes from thread %lu corrupted at byte %zu",
                   where, (unsigned long)self, (void *)h, h->size, (unsigned long)h->owner, bad);
    }
    if (ok)
        atomic_fetch_add(&verified, 1);
    free(h);
}

static void *churn_thread(void *arg)
{
    uint64_t self = (uint64_t)(uintptr_t)arg;
    uint64_t rng = self * 0x2545F4914F6CDD1DULL + 12345;
    struct objhdr *mine[PER_THREAD];
    for (int i = 0; i < PER_THREAD; i++)
        mine[i] = obj_new(obj_sizes[(size_t)(i + (int)self) % NSIZES], self, &rng);
    /* shuffle, so the half freed here and the quarters below mix all sizes */
    for (int i = PER_THREAD - 1; i > 0; i--) {
        int j = (int)(tu_rand(&rng) % (uint64_t)(i + 1));
        struct objhdr *t = mine[i];
        mine[i] = mine[j];
        mine[j] = t;
    }
    /* half: freed by this thread (into its own cache) */
    for (int i = 0; i < PER_THREAD / 2; i++)
        obj_free(mine[i], self, "own free");
    /* take others' objects from the pool, put a quarter of ours in */
    struct objhdr *taken[TAKE];
    int nt = 0;
    pthread_mutex_lock(&pool_lock);
    while (nt < TAKE && pool_n > POOL_CAP / 4)
        taken[nt++] = pool[--pool_n];
    int put = 0;
    for (int i = PER_THREAD / 2; i < PER_THREAD * 3 / 4; i++) {
        if (mine[i] && pool_n < POOL_CAP) {
            pool[pool_n++] = mine[i];
            mine[i] = NULL;
            put++;
        }
    }
    pthread_mutex_unlock(&pool_lock);
    atomic_fetch_add(&handed_off, put);
    for (int i = 0; i < nt; i++)
        obj_free(taken[i], self, "pool receiver");
    for (int i = PER_THREAD / 2; i < PER_THREAD * 3 / 4; i++)
        obj_free(mine[i], self, "pool full, own free"); /* NULL when handed off */
    /* the last quarter: freed just before exit (they stay in this thread's cache) */
    for (int i = PER_THREAD * 3 / 4; i < PER_THREAD; i++) {
        if (leak_mode && mine[i])
            atomic_fetch_add(&verified, 1); /* deliberately leaked (THREAD_CHURN_LEAK=1) */
        else
            obj_free(mine[i], self, "own free before exit");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long nthreads = argc > 1 ? atol(argv[1]) : 10000;
    if (nthreads < 2000)
        nthreads = 2000;
    const char *lm = getenv("THREAD_CHURN_LEAK");
    leak_mode = lm && strcmp(lm, "1") == 0;
    fu_watchdog("thread_churn", 60);
    fu_expect_slub("thread_churn");
    if (leak_mode)
        printf("thread_churn: THREAD_CHURN_LEAK=1: every thread leaks a quarter of its objects (this must fail)\n");

    uint64_t rng = 42;
    long created = 0, next_mark = 1000, early = -1, worst = 0, limit = 0;
    double t0 = fu_now();
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    printf("thread_churn: VmRSS at start %ld KiB\n", tu_vmrss() >> 10);
    while (created < nthreads) {
        long wave = MIN_WAVE + (long)(tu_rand(&rng) % (MAX_ALIVE - MIN_WAVE + 1));
        if (wave > nthreads - created)
            wave = nthreads - created;
        pthread_t t[MAX_ALIVE];
        int ok[MAX_ALIVE];
        for (long i = 0; i < wave; i++) {
            int rc = pthread_create(&t[i], &at, churn_thread, (void *)(uintptr_t)(created + i + 1));
            ok[i] = check(rc == 0, "pthread_create #%ld failed: %s", created + i + 1, strerror(rc));
        }
        for (long i = 0; i < wave; i++)
            if (ok[i])
                pthread_join(t[i], NULL);
        created += wave;
        if (created >= next_mark || created == nthreads) {
            long rss = tu_vmrss();
            if (early < 0) {
                early = rss;
                limit = early * 2 > early + (64L << 20) ? early * 2 : early + (64L << 20);
                printf("thread_churn: after %ld threads: VmRSS %ld KiB (early figure); limit %ld KiB\n", created,
                       early >> 10, limit >> 10);
            } else {
                printf("thread_churn: after %ld threads: VmRSS %ld KiB (%+ld KiB)\n", created, rss >> 10,
                       (rss - early) >> 10);
                if (rss > worst)
                    worst = rss;
                check(rss <= limit, "after %ld threads VmRSS is %ld KiB, more than max(2 x %ld, %ld + 64 MiB) = %ld "
                                    "KiB: memory of exited threads is not reused",
                      created, rss >> 10, early >> 10, early >> 10, limit >> 10);
            }
            fflush(stdout);
            while (next_mark <= created)
                next_mark += 1000;
        }
    }
    pthread_attr_destroy(&at);
    long end = tu_vmrss();
    check(early > 0 && end > 0, "cannot read VmRSS");
    /* drain the pool: the objects of long-gone threads, freed by main */
    pthread_mutex_lock(&pool_lock);
    size_t left = pool_n;
    for (size_t i = 0; i < pool_n; i++)
        obj_free(pool[i], 0, "main, draining the pool");
    pool_n = 0;
    pthread_mutex_unlock(&pool_lock);
    long expect = (long)created * PER_THREAD;
    printf("thread_churn: %ld threads in %.1f s; %ld objects verified, %ld handed to other threads (%zu freed by main "
           "at the end); VmRSS early %ld KiB, worst %ld KiB, end %ld KiB (limit %ld KiB)\n",
           created, fu_now() - t0, atomic_load(&verified), atomic_load(&handed_off), left, early >> 10, worst >> 10,
           end >> 10, limit >> 10);
    check(atomic_load(&verified) == expect, "%ld objects verified, %ld allocated", atomic_load(&verified), expect);
    check(atomic_load(&handed_off) > created, "too few objects handed off between threads (%ld)",
          atomic_load(&handed_off));
    return tu_finish("thread_churn");
}
