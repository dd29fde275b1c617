/* kfence_rate: SLUBMALLOC_KFENCE=N samples about one allocation in N, counting blocks that are
 * freed and allocated again.
 * Run with SLUBMALLOC_KFENCE=10000 (run.sh). A sampled block is exactly its size: every size here
 * is 8 more than a multiple of 16, so a size class would give 8 bytes more. Each round waits
 * out KFENCE's spacing (10 ms, on a clock whose tick may be 4 ms), then counts the allocations
 * until one is sampled. A thread counts from its first slow path after the spacing: a refill,
 * a swap or a flush, which these patterns take within a stack's worth of allocations. The
 * countdown is geometric of mean N, so the median round is about 0.7 N plus that wait; the
 * check is that the median is within N/4 and 2N, and at most 3 rounds of 60 have no sample.
 * Without slubmalloc (SLUBMALLOC_EXPECT unset) nothing is sampled, and it only reports. */
#include <malloc.h>
#include <stdlib.h>
#include <time.h>

#include "test_util.h"

#define ROUNDS 60
#define CAP 400000 /* allocations per round at most: 40 times N */
#define SET 4000  /* blocks of the churn */

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static int sampled(char *p, size_t size)
{
    p[0] = 1;
    return malloc_usable_size(p) == size;
}

/* Held blocks: 24 bytes each, until one is sampled; then all are freed. */
static int held(uint64_t *rng)
{
    static void *v[CAP];
    (void)rng;
    int n = 0, found = 0;
    while (n < CAP && !found) {
        char *p = malloc(24);
        if (!p)
            break;
        found = sampled(p, 24);
        v[n++] = p;
    }
    for (int i = 0; i < n; i++)
        free(v[i]);
    return found ? n : CAP;
}

/* Churn: a random block of SET is freed and replaced by one of 24..1016 bytes. */
static char *v[SET];
static size_t sz[SET];

static void churn_init(uint64_t *rng)
{
    for (int i = 0; i < SET; i++) {
        sz[i] = 24 + 16 * (tu_rand(rng) % 62);
        v[i] = malloc(sz[i]);
    }
}

static int churn(uint64_t *rng)
{
    for (int n = 1; n <= CAP; n++) {
        int i = (int)(tu_rand(rng) % SET);
        free(v[i]);
        sz[i] = 24 + 16 * (tu_rand(rng) % 62);
        v[i] = malloc(sz[i]);
        if (!v[i])
            return CAP;
        if (sampled(v[i], sz[i]))
            return n;
    }
    return CAP;
}

int main(void)
{
    const char *e = getenv("SLUBMALLOC_EXPECT"), *k = getenv("SLUBMALLOC_KFENCE");
    int expect = e && e[0] == '1';
    long every = k ? atol(k) : 0;
    if (expect && every != 10000) {
        fprintf(stderr, "kfence_rate: run with SLUBMALLOC_KFENCE=10000\n");
        return 2;
    }
    static const struct { int (*run)(uint64_t *); const char *what; } kinds[] = {
        {held, "held blocks of 24 bytes"},
        {churn, "churn of 4000 blocks of 24..1016 bytes"},
    };
    uint64_t rng = 42;
    churn_init(&rng); /* (before the rounds: each round starts after KFENCE's spacing) */
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int n[ROUNDS], missed = 0;
        for (int r = 0; r < ROUNDS; r++) {
            pause_ms(15);
            n[r] = kinds[i].run(&rng);
            missed += n[r] == CAP;
        }
        for (int r = 1; r < ROUNDS; r++) /* (insertion sort, for the median) */
            for (int q = r; q > 0 && n[q - 1] > n[q]; q--) {
                int t = n[q];
                n[q] = n[q - 1];
                n[q - 1] = t;
            }
        int median = n[ROUNDS / 2];
        printf("kfence_rate: %s: median %d allocations until a sample (N = %ld), "
               "%d rounds of %d with none\n", kinds[i].what, median, every, missed, ROUNDS);
        if (expect)
            check(median > every / 4 && median < every * 2 && missed <= 3,
                  "%s: median %d, not about N = %ld", kinds[i].what, median, every);
    }
    return tu_finish("kfence_rate");
}
