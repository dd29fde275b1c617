/* dirty_waves: a program that frees and allocates in waves larger than the allocator's dirty
 * cap must not pay a page fault for every page of every wave. Each wave is a thread that
 * mallocs about 192 MiB of small blocks, writes them, frees them all in random order and
 * exits; the next wave follows at once. Minor faults are counted per wave (getrusage). The
 * first wave faults its pages in; by the fourth, fewer than a quarter of that may fault again.
 * slubmalloc purged all but 16 MiB of each wave's pages at its fixed 32 MiB cap, and each
 * wave faulted them in again; its cap now grows when purged pages come back within the purge
 * delay. tests/preload/rss checks the other side: a program that frees and stops allocating
 * gets its memory returned at once. Also passes under plain glibc. */
#include <pthread.h>
#include <sys/resource.h>

#include "test_util.h"

#define WAVES 4
#define WAVE_BYTES (192u << 20)

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

struct wave {
    void **objs;
    size_t cap, n, total;
    uint64_t rng;
    int w;
    int failed;
};

/* One wave, in a thread of its own: malloc and write, then free all in random order. */
static void *wave(void *arg)
{
    struct wave *v = arg;
    v->n = v->total = 0;
    while (v->total < WAVE_BYTES && v->n < v->cap) {
        size_t size = 16 + (size_t)(tu_rand(&v->rng) % 241);
        void *p = malloc(size);
        if (!check(p != NULL, "wave %d: malloc(%zu) failed", v->w, size)) {
            v->failed = 1;
            break;
        }
        memset(p, v->w + 1, size);
        v->objs[v->n++] = p;
        v->total += size;
    }
    for (size_t i = v->n; i > 1; i--) {
        size_t j = (size_t)(tu_rand(&v->rng) % i);
        void *t = v->objs[i - 1];
        v->objs[i - 1] = v->objs[j];
        v->objs[j] = t;
    }
    for (size_t i = 0; i < v->n; i++)
        free(v->objs[i]);
    return NULL;
}

int main(void)
{
    struct wave v = {.cap = WAVE_BYTES / 16 + 16, .rng = 0x5eed};
    v.objs = calloc(v.cap, sizeof *v.objs);
    if (!check(v.objs != NULL, "calloc of the pointer table"))
        return tu_finish("dirty_waves");
    long faults[WAVES];
    for (int w = 0; w < WAVES; w++) {
        v.w = w;
        long f0 = minor_faults();
        pthread_t t;
        if (!check(pthread_create(&t, NULL, wave, &v) == 0, "pthread_create"))
            return tu_finish("dirty_waves");
        pthread_join(t, NULL);
        if (v.failed)
            return tu_finish("dirty_waves");
        faults[w] = minor_faults() - f0;
        printf("wave %d: %zu blocks, %zu MiB: %ld minor faults\n", w + 1, v.n, v.total >> 20, faults[w]);
    }
    check(faults[0] > (long)(WAVE_BYTES / 4096 / 2),
          "the first wave faulted only %ld pages in for %u MiB written", faults[0], WAVE_BYTES >> 20);
    check(faults[WAVES - 1] < faults[0] / 4,
          "wave %d faulted %ld pages in again, the first %ld: freed pages were purged and faulted "
          "back at every wave", WAVES, faults[WAVES - 1], faults[0]);
    free(v.objs);
    return tu_finish("dirty_waves");
}
