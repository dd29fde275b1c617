/* stress_mt: multithreaded allocator stress. Every object is filled with a pattern derived from
 * its address and size and verified when it is freed; total allocation/free counts are checked.
 *   (a) producer/consumer: producers allocate random sizes (8 B..8 KiB mostly, some up to
 *       256 KiB) and pass them through a bounded mutex-protected queue to consumers that free them;
 *   (b) shared array: ~25% of objects are swapped into a shared array (freed by whichever thread
 *       swaps them out), the rest are freed locally;
 *   (c) thread churn: rounds of short-lived threads allocate, leave objects in a global array and
 *       exit; threads of later rounds (and finally main) free them;
 *   (d) realloc growth/shrink chains with the content verified after every step.
 * Usage: stress_mt [scale] [threads]  (defaults 1 and 4; scale multiplies the work). */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

static double scale = 1.0;
static int nthreads = 4;

static atomic_long n_alloc, n_free;
static atomic_llong bytes_alloc, bytes_free;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 8 B..8 KiB mostly (skewed to small), ~2% up to 256 KiB. */
static size_t rand_size(uint64_t *rng)
{
    uint64_t r = tu_rand(rng);
    if (r % 100 < 2)
        return 8192 + (size_t)(tu_rand(rng) % (256 * 1024 - 8192));
    unsigned bits = 3 + (unsigned)(tu_rand(rng) % 11); /* 8 .. 8192 */
    size_t lo = (size_t)1 << bits;
    size_t n = lo + (size_t)(tu_rand(rng) % lo);
    return n > 8192 ? 8192 : n;
}

static void *alloc_obj(size_t n)
{
    void *p = malloc(n);
    if (!check(p != NULL, "malloc(%zu) returned NULL", n))
        return NULL;
    tu_obj_fill(p, n);
    atomic_fetch_add(&n_alloc, 1);
    atomic_fetch_add(&bytes_alloc, (long long)n);
    return p;
}

static void free_obj(void *p, size_t n, const char *where)
{
    check(tu_obj_check(p, n), "%s: object %p (%zu bytes) corrupted", where, p, n);
    atomic_fetch_add(&n_free, 1);
    atomic_fetch_add(&bytes_free, (long long)n);
    free(p);
}

/* Objects carrying their own size in the first word (for hand-off through a single pointer). */
#define SELF_MAX (256 * 1024)
static void *alloc_self(size_t n)
{
    if (n < 16)
        n = 16;
    unsigned char *p = malloc(n);
    if (!check(p != NULL, "malloc(%zu) returned NULL", n))
        return NULL;
    memcpy(p, &n, sizeof n);
    tu_obj_fill(p + 8, n - 8);
    atomic_fetch_add(&n_alloc, 1);
    return p;
}

static void free_self(void *vp, const char *where)
{
    unsigned char *p = vp;
    size_t n;
    memcpy(&n, p, sizeof n);
    if (check(n >= 16 && n <= SELF_MAX, "%s: object %p has a corrupted size word %zu", where, vp, n))
        check(tu_obj_check(p + 8, n - 8), "%s: object %p (%zu bytes) corrupted", where, vp, n);
    atomic_fetch_add(&n_free, 1);
    free(p);
}

/* ---------------- (a) producer / consumer ---------------- */

#define QCAP 256
struct item { void *p; size_t n; };
static struct {
    pthread_mutex_t mu;
    pthread_cond_t not_full, not_empty;
    struct item buf[QCAP];
    unsigned head, tail, count;
} q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, { { 0, 0 } }, 0, 0, 0 };

static long pc_per_producer;
static atomic_long pc_consumed;

static void q_push(struct item it)
{
    pthread_mutex_lock(&q.mu);
    while (q.count == QCAP)
        pthread_cond_wait(&q.not_full, &q.mu);
    q.buf[q.tail] = it;
    q.tail = (q.tail + 1) % QCAP;
    q.count++;
    pthread_cond_signal(&q.not_empty);
    pthread_mutex_unlock(&q.mu);
}

static struct item q_pop(void)
{
    pthread_mutex_lock(&q.mu);
    while (q.count == 0)
        pthread_cond_wait(&q.not_empty, &q.mu);
    struct item it = q.buf[q.head];
    q.head = (q.head + 1) % QCAP;
    q.count--;
    pthread_cond_signal(&q.not_full);
    pthread_mutex_unlock(&q.mu);
    return it;
}

static void *producer(void *arg)
{
    uint64_t rng = 0x1234567ULL + (uintptr_t)arg * 7919;
    for (long i = 0; i < pc_per_producer; i++) {
        size_t n = rand_size(&rng);
        void *p = alloc_obj(n);
        if (p)
            q_push((struct item){ p, n });
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (;;) {
        struct item it = q_pop();
        if (!it.p)
            break; /* sentinel */
        free_obj(it.p, it.n, "producer/consumer");
        atomic_fetch_add(&pc_consumed, 1);
    }
    return NULL;
}

static void phase_producer_consumer(void)
{
    int np = nthreads / 2 > 0 ? nthreads / 2 : 1, nc = nthreads - np > 0 ? nthreads - np : 1;
    pc_per_producer = (long)(1000000 * scale);
    pthread_t tp[64], tc[64];
    for (int i = 0; i < np; i++)
        pthread_create(&tp[i], NULL, producer, (void *)(uintptr_t)i);
    for (int i = 0; i < nc; i++)
        pthread_create(&tc[i], NULL, consumer, NULL);
    for (int i = 0; i < np; i++)
        pthread_join(tp[i], NULL);
    for (int i = 0; i < nc; i++)
        q_push((struct item){ NULL, 0 });
    for (int i = 0; i < nc; i++)
        pthread_join(tc[i], NULL);
    long want = pc_per_producer * np;
    check(atomic_load(&pc_consumed) == want, "producer/consumer: consumed %ld objects, expected %ld",
          atomic_load(&pc_consumed), want);
}

/* ---------------- (b) shared array hand-off ---------------- */

#define SHARED_SLOTS 1024
static atomic_uintptr_t shared_slots[SHARED_SLOTS];
static long sh_iters;

static void *shared_worker(void *arg)
{
    uint64_t rng = 0xABCDEF01ULL + (uintptr_t)arg * 104729;
    enum { WIN = 64 };
    void *win[WIN] = { 0 };
    size_t winn[WIN] = { 0 };
    for (long i = 0; i < sh_iters; i++) {
        if (tu_rand(&rng) % 4 == 0) {
            void *p = alloc_self(rand_size(&rng));
            if (!p)
                continue;
            unsigned s = (unsigned)(tu_rand(&rng) % SHARED_SLOTS);
            void *old = (void *)atomic_exchange(&shared_slots[s], (uintptr_t)p);
            if (old)
                free_self(old, "shared array");
        } else {
            size_t n = rand_size(&rng);
            void *p = alloc_obj(n);
            unsigned w = (unsigned)(tu_rand(&rng) % WIN);
            if (win[w])
                free_obj(win[w], winn[w], "local window");
            win[w] = p;
            winn[w] = p ? n : 0;
        }
    }
    for (int w = 0; w < WIN; w++)
        if (win[w])
            free_obj(win[w], winn[w], "local window");
    return NULL;
}

static void phase_shared(void)
{
    sh_iters = (long)(1000000 * scale);
    pthread_t t[64];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, shared_worker, (void *)(uintptr_t)i);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    for (int s = 0; s < SHARED_SLOTS; s++) {
        void *p = (void *)atomic_exchange(&shared_slots[s], (uintptr_t)0);
        if (p)
            free_self(p, "shared array drain");
    }
}

/* ---------------- (c) thread churn ---------------- */

#define CHURN_PER_THREAD 400
static struct item *churn_slots; /* nthreads * CHURN_PER_THREAD */
static int churn_round;

static void *churn_worker(void *arg)
{
    int idx = (int)(uintptr_t)arg;
    uint64_t rng = 0x5555ULL + (uint64_t)idx * 31 + (uint64_t)churn_round * 1000003;
    /* take over the region another (already exited) thread filled in the previous round */
    int region = (idx + churn_round) % nthreads;
    struct item *slots = churn_slots + (size_t)region * CHURN_PER_THREAD;
    for (int i = 0; i < CHURN_PER_THREAD; i++) {
        if (slots[i].p)
            free_obj(slots[i].p, slots[i].n, "thread churn");
        size_t n = rand_size(&rng);
        if (n > 16384)
            n = 16384;
        slots[i].p = alloc_obj(n);
        slots[i].n = slots[i].p ? n : 0;
        /* some purely thread-local traffic too */
        size_t tn = 8 + (size_t)(tu_rand(&rng) % 512);
        void *tmp = alloc_obj(tn);
        if (tmp)
            free_obj(tmp, tn, "churn local");
    }
    return NULL;
}

static void phase_churn(void)
{
    int rounds = (int)(400 * scale);
    churn_slots = calloc((size_t)nthreads * CHURN_PER_THREAD, sizeof *churn_slots);
    if (!check(churn_slots != NULL, "calloc churn slots"))
        return;
    for (churn_round = 0; churn_round < rounds; churn_round++) {
        pthread_t t[64];
        for (int i = 0; i < nthreads; i++)
            pthread_create(&t[i], NULL, churn_worker, (void *)(uintptr_t)i);
        for (int i = 0; i < nthreads; i++)
            pthread_join(t[i], NULL);
    }
    for (size_t i = 0; i < (size_t)nthreads * CHURN_PER_THREAD; i++)
        if (churn_slots[i].p)
            free_obj(churn_slots[i].p, churn_slots[i].n, "thread churn drain");
    free(churn_slots);
}

/* ---------------- (d) realloc chains ---------------- */

static long chains_per_thread;

static void *realloc_worker(void *arg)
{
    uint64_t rng = 0x777ULL + (uintptr_t)arg * 65537;
    for (long c = 0; c < chains_per_thread; c++) {
        uint64_t seed = tu_rand(&rng);
        size_t max = tu_rand(&rng) % 10 == 0 ? (size_t)2 << 20 : (size_t)64 << 10;
        size_t n = 1 + (size_t)(tu_rand(&rng) % 64);
        unsigned char *p = malloc(n);
        if (!check(p != NULL, "realloc chain: malloc(%zu) failed", n))
            continue;
        tu_fill(p, 0, n, seed);
        atomic_fetch_add(&n_alloc, 1); /* one chain = one object */
        void *noise = NULL;
        while (n < max) {
            size_t nn;
            if (tu_rand(&rng) % 5 == 0)
                nn = n / 2 + 1;
            else
                nn = n + 1 + (size_t)(tu_rand(&rng) % (n + 16));
            unsigned char *np = realloc(p, nn);
            if (!check(np != NULL, "realloc(%zu -> %zu) returned NULL", n, nn))
                break;
            size_t keep = n < nn ? n : nn;
            size_t bad = tu_verify(np, 0, keep, seed);
            if (!check(bad == (size_t)-1, "realloc chain %zu -> %zu: byte %zu lost", n, nn, bad)) {
                p = np;
                break;
            }
            if (nn > n)
                tu_fill(np, n, nn, seed);
            p = np;
            n = nn;
            /* interleave unrelated allocations so in-place growth is not always possible */
            free(noise);
            noise = malloc(1 + (size_t)(tu_rand(&rng) % 2048));
            if (noise)
                memset(noise, 0xFF, 1);
        }
        size_t bad = tu_verify(p, 0, n, seed);
        check(bad == (size_t)-1, "realloc chain final check: byte %zu of %zu lost", bad, n);
        free(noise);
        free(p);
        atomic_fetch_add(&n_free, 1);
    }
    return NULL;
}

static void phase_realloc(void)
{
    chains_per_thread = (long)(1000 * scale);
    pthread_t t[64];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, realloc_worker, (void *)(uintptr_t)i);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = atof(argv[1]);
    if (argc > 2)
        nthreads = atoi(argv[2]);
    if (scale <= 0)
        scale = 1;
    if (nthreads < 2)
        nthreads = 2;
    if (nthreads > 64)
        nthreads = 64;
    alarm(240); /* a hang (deadlock) becomes a failure, not a stuck run */

    static const struct { const char *name; void (*fn)(void); } phases[] = {
        { "producer/consumer", phase_producer_consumer },
        { "shared array", phase_shared },
        { "thread churn", phase_churn },
        { "realloc chains", phase_realloc },
    };
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        long a0 = atomic_load(&n_alloc), f0 = atomic_load(&n_free);
        double t0 = now();
        phases[i].fn();
        long a = atomic_load(&n_alloc) - a0, f = atomic_load(&n_free) - f0;
        printf("%-18s %9ld objects allocated, %9ld freed, %.2f s\n", phases[i].name, a, f, now() - t0);
        fflush(stdout);
        check(a == f && a > 0, "%s: %ld objects allocated but %ld freed", phases[i].name, a, f);
    }
    check(atomic_load(&bytes_alloc) == atomic_load(&bytes_free), "bytes allocated %lld != bytes freed %lld",
          (long long)atomic_load(&bytes_alloc), (long long)atomic_load(&bytes_free));
    return tu_finish("stress_mt");
}
