/* calloc_fresh: calloc's blocks are all zero along every way an object can take before it is
 * handed out. slubmalloc skips calloc's memset for an object carved from pages that read as
 * zero and never handed out; these cases check that it never skips it for another:
 *   drained: a thread's allocation stack of carved objects goes back to the slabs (malloc_trim,
 *            thread exit), where links and keys are written into them, and comes back;
 *   restart: every object of a slab used, dirtied and freed, so that the slab starts over;
 *   dirty:   pages of freed slabs, dirty, taken by slabs of other sizes;
 *   mixed:   callocs among mallocs and frees of dirtied blocks, in one class.
 * Each case runs over sizes of many classes. Also passes under plain glibc. */
#include <malloc.h>
#include <pthread.h>

#include "test_util.h"

static const size_t sizes[] = {16, 24, 32, 48, 64, 80, 128, 160, 256, 384, 640, 1024, 2048, 4096,
                               6000, 16000, 40000, 100000, 131072};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void expect_zero(const void *p, size_t n, const char *what, size_t size, size_t i)
{
    const unsigned char *c = p;
    for (size_t k = 0; k < n; k++)
        if (c[k]) {
            check(0, "%s: calloc(1, %zu) block %zu: byte %zu is 0x%02x", what, size, i, k, c[k]);
            return;
        }
}

/* How many blocks of size cover some 256 KiB: several slabs' worth of small ones. */
static size_t count_for(size_t size)
{
    size_t n = (256u << 10) / size;
    return n < 8 ? 8 : n;
}

/* One malloc carves a batch onto the allocation stack; malloc_trim sends it back to the slabs
 * (links and keys written into the objects); then callocs take them again. */
static void drained(void)
{
    for (size_t s = 0; s < NSIZES; s++) {
        size_t n = count_for(sizes[s]);
        void **v = calloc(n, sizeof *v);
        for (int r = 0; r < 3; r++) {
            void *one = malloc(sizes[s]);
            tu_fill(one, 0, sizes[s], r);
            free(one);
            malloc_trim(0);
            for (size_t i = 0; i < n; i++) {
                v[i] = calloc(1, sizes[s]);
                if (!check(v[i] != NULL, "calloc(1, %zu) returned NULL", sizes[s]))
                    return;
                expect_zero(v[i], sizes[s], "drained", sizes[s], i);
            }
            for (size_t i = 0; i < n; i++) {
                tu_fill(v[i], 0, sizes[s], i);
                free(v[i]);
            }
        }
        free(v);
    }
}

/* A thread carves a batch and exits: its allocation stack goes back to the slabs. */
static void *carve_and_exit(void *arg)
{
    size_t size = *(size_t *)arg;
    void *p = malloc(size);
    tu_fill(p, 0, size, 7);
    free(p);
    return NULL;
}

static void drained_by_exit(void)
{
    for (size_t s = 0; s < NSIZES; s++) {
        size_t size = sizes[s], n = count_for(size);
        pthread_t t;
        if (!check(pthread_create(&t, NULL, carve_and_exit, &size) == 0, "pthread_create failed"))
            return;
        pthread_join(t, NULL);
        void **v = calloc(n, sizeof *v);
        for (size_t i = 0; i < n; i++) {
            v[i] = calloc(1, size);
            if (!check(v[i] != NULL, "calloc(1, %zu) returned NULL", size))
                return;
            expect_zero(v[i], size, "drained by thread exit", size, i);
        }
        for (size_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
    }
}

/* Every object dirtied and freed, again and again: slabs start over, and are carved again. */
static void restart(void)
{
    for (size_t s = 0; s < NSIZES; s++) {
        size_t size = sizes[s], n = count_for(size);
        void **v = calloc(n, sizeof *v);
        for (int r = 0; r < 4; r++) {
            for (size_t i = 0; i < n; i++) {
                v[i] = r & 1 ? calloc(1, size) : malloc(size);
                if (!check(v[i] != NULL, "allocation of %zu returned NULL", size))
                    return;
                if (r & 1)
                    expect_zero(v[i], size, "restart", size, i);
                tu_fill(v[i], 0, size, i + r);
            }
            for (size_t i = 0; i < n; i++)
                free(v[i]);
        }
        free(v);
    }
}

/* Pages of freed slabs of one size, dirty, then callocs of every other size. */
static void dirty(void)
{
    for (size_t s = 0; s < NSIZES; s++) {
        size_t size = sizes[s], n = count_for(size) * 4;
        void **v = calloc(n, sizeof *v);
        for (size_t i = 0; i < n; i++) {
            v[i] = malloc(size);
            if (!check(v[i] != NULL, "malloc(%zu) returned NULL", size))
                return;
            tu_fill(v[i], 0, size, i);
        }
        for (size_t i = 0; i < n; i++)
            free(v[i]);
        malloc_trim(0); /* the stacks drain, the empty slabs go: dirty pages */
        size_t other = sizes[(s + 3) % NSIZES], m = count_for(other);
        void **w = calloc(m, sizeof *w);
        for (size_t i = 0; i < m; i++) {
            w[i] = calloc(1, other);
            if (!check(w[i] != NULL, "calloc(1, %zu) returned NULL", other))
                return;
            expect_zero(w[i], other, "dirty pages", other, i);
        }
        for (size_t i = 0; i < m; i++)
            free(w[i]);
        free(w);
        free(v);
    }
}

/* callocs among mallocs and frees of dirtied blocks of the same size, in a random order. */
static void mixed(void)
{
    uint64_t seed = 42;
    enum { SLOTS = 2048 };
    void *slot[SLOTS] = {0};
    for (size_t s = 0; s < NSIZES; s++) {
        size_t size = sizes[s];
        for (int op = 0; op < 20000; op++) {
            size_t i = tu_rand(&seed) % SLOTS;
            if (slot[i]) {
                free(slot[i]);
                slot[i] = NULL;
            } else if (tu_rand(&seed) & 1) {
                slot[i] = calloc(1, size);
                if (!check(slot[i] != NULL, "calloc(1, %zu) returned NULL", size))
                    return;
                expect_zero(slot[i], size, "mixed", size, i);
                tu_fill(slot[i], 0, size, op);
            } else {
                slot[i] = malloc(size);
                if (!check(slot[i] != NULL, "malloc(%zu) returned NULL", size))
                    return;
                tu_fill(slot[i], 0, size, op);
            }
        }
        for (size_t i = 0; i < SLOTS; i++) {
            free(slot[i]);
            slot[i] = NULL;
        }
        if (s % 4 == 3)
            malloc_trim(0);
    }
}

int main(void)
{
    drained();
    drained_by_exit();
    restart();
    dirty();
    mixed();
    return tu_finish("calloc_fresh");
}
