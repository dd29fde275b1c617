/* xstress_long: a long cross-thread stress with content verification. 4 threads form a ring:
 * thread i sends objects to thread i+1 through a mutex-protected inbox. Every object (16 B ..
 * 256 KiB, most of them small) starts with a 16-byte header (size, allocating thread, hop count,
 * serial number, a check word over them) and the rest of it holds a pattern derived from
 * (allocating thread, serial). Each receiver verifies header and pattern, then frees the object,
 * or reallocs it to a random new size (the kept prefix is verified, the header updated, a grown
 * tail filled) and forwards it, or forwards it as is (hop count + 1, so every forward also
 * writes the object). Threads also allocate new objects (malloc, or calloc whose zeroing is
 * checked) and keep some in a local window for a while (replacing one verifies and frees it).
 * At the end every object still in an inbox or window is verified and freed by main, and the
 * number of frees must equal the number of allocations. Any mismatch fails the test.
 * A watchdog (duration + 30 s) turns a hang into a failure.
 * Usage: xstress_long [seconds (15)] */
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

enum { NTHREADS = 4, INBOX_CAP = 512, WINDOW = 256, BATCH = 64, NEW_PER_ROUND = 8 };
enum { MIN_SIZE = 16, MAX_SIZE = 256 * 1024 };

struct hdr {
    uint32_t size;
    uint16_t owner;
    uint16_t hops;
    uint32_t serial;
    uint32_t check;
};

struct inbox {
    pthread_mutex_t lock;
    struct hdr *slot[INBOX_CAP];
    unsigned head, count;
};

struct thr {
    int id;
    pthread_t t;
    uint64_t rng;
    uint32_t serial;
    struct hdr *window[WINDOW];
    long allocs, frees, verified, reallocs, forwards, received;
};

static struct inbox inboxes[NTHREADS];
static struct thr thrs[NTHREADS];
static atomic_int stop;
static atomic_long progress; /* objects allocated so far, for the progress lines */

static uint32_t hdr_check(const struct hdr *h)
{
    uint64_t x = ((uint64_t)h->size << 32 | h->serial) ^ ((uint64_t)h->owner << 48 | (uint64_t)h->hops << 16);
    x *= 0x9E3779B97F4A7C15ULL;
    x ^= x >> 32;
    return (uint32_t)x ^ 0xa5a5f00du;
}

static uint64_t body_seed(const struct hdr *h)
{
    return ((uint64_t)h->owner << 32 | h->serial) * 0xC2B2AE3D27D4EB4FULL + 1;
}

static size_t rand_size(uint64_t *rng)
{
    uint64_t r = tu_rand(rng), pct = r % 100;
    size_t lo, hi;
    if (pct < 70)
        lo = MIN_SIZE, hi = 512;
    else if (pct < 95)
        lo = 512, hi = 16384;
    else
        lo = 16384, hi = MAX_SIZE;
    /* log-uniform within [lo, hi] */
    unsigned blo = 63 - (unsigned)__builtin_clzll(lo), bhi = 63 - (unsigned)__builtin_clzll(hi);
    unsigned b = blo + (unsigned)(tu_rand(rng) % (bhi - blo));
    size_t n = ((size_t)1 << b) + (size_t)(tu_rand(rng) % ((size_t)1 << b));
    return n < lo ? lo : n > hi ? hi : n;
}

/* Verifies an object; returns 1 if intact. `who` names the verifying step. */
static int verify(struct thr *me, const struct hdr *h, const char *who)
{
    if (!check(h->check == hdr_check(h) && h->size >= MIN_SIZE && h->size <= MAX_SIZE && h->owner < NTHREADS,
               "thread %d (%s): object %p has a corrupted header (size %u owner %u hops %u serial %u)", me->id, who,
               (const void *)h, h->size, h->owner, h->hops, h->serial))
        return 0;
    size_t bad = fu_verify(h, sizeof *h, h->size, body_seed(h));
    if (!check(bad == (size_t)-1,
               "thread %d (%s): object %p (%u bytes, from thread %u, serial %u, %u hops) corrupted at byte %zu",
               me->id, who, (const void *)h, h->size, h->owner, h->serial, h->hops, bad))
        return 0;
    me->verified++;
    return 1;
}

static void release(struct thr *me, struct hdr *h, const char *who)
{
    verify(me, h, who);
    free(h);
    me->frees++;
}

static struct hdr *make(struct thr *me)
{
    size_t n = rand_size(&me->rng);
    int zeroed = tu_rand(&me->rng) % 8 == 0;
    struct hdr *h = zeroed ? calloc(1, n) : malloc(n);
    if (!check(h != NULL, "thread %d: %s(%zu) failed: %s", me->id, zeroed ? "calloc" : "malloc", n, strerror(errno)))
        return NULL;
    me->allocs++;
    if (zeroed) {
        const unsigned char *c = (const unsigned char *)h;
        for (size_t i = 0; i < n; i++)
            if (c[i]) {
                check(0, "thread %d: calloc(%zu) = %p: byte %zu is not zero", me->id, n, (void *)h, i);
                break;
            }
    }
    h->size = (uint32_t)n;
    h->owner = (uint16_t)me->id;
    h->hops = 0;
    h->serial = me->serial++;
    h->check = hdr_check(h);
    fu_fill(h, sizeof *h, n, body_seed(h));
    return h;
}

static int inbox_push(int to, struct hdr *h)
{
    struct inbox *b = &inboxes[to];
    pthread_mutex_lock(&b->lock);
    int ok = b->count < INBOX_CAP;
    if (ok) {
        b->slot[(b->head + b->count) % INBOX_CAP] = h;
        b->count++;
    }
    pthread_mutex_unlock(&b->lock);
    return ok;
}

static unsigned inbox_take(int id, struct hdr **out, unsigned max)
{
    struct inbox *b = &inboxes[id];
    unsigned n = 0;
    pthread_mutex_lock(&b->lock);
    while (n < max && b->count) {
        out[n++] = b->slot[b->head];
        b->head = (b->head + 1) % INBOX_CAP;
        b->count--;
    }
    pthread_mutex_unlock(&b->lock);
    return n;
}

/* Keep h in the window for a while; the object it replaces is verified and freed. */
static void keep(struct thr *me, struct hdr *h)
{
    unsigned w = (unsigned)(tu_rand(&me->rng) % WINDOW);
    if (me->window[w])
        release(me, me->window[w], "window replacement");
    me->window[w] = h;
}

/* Send h to the next thread (hop count + 1), or keep it when that inbox is full. */
static void forward(struct thr *me, struct hdr *h)
{
    h->hops++;
    h->check = hdr_check(h);
    if (inbox_push((me->id + 1) % NTHREADS, h))
        me->forwards++;
    else
        keep(me, h);
}

/* realloc to a random size: the prefix must survive, the header and a grown tail are rewritten. */
static struct hdr *resize(struct thr *me, struct hdr *h)
{
    size_t old = h->size, n = rand_size(&me->rng);
    uint64_t seed = body_seed(h);
    struct hdr *q = realloc(h, n);
    if (!check(q != NULL, "thread %d: realloc(%zu -> %zu) failed: %s", me->id, old, n, strerror(errno)))
        return h;
    me->reallocs++;
    size_t keep_n = old < n ? old : n;
    int hdr_ok = q->size == old && q->check == hdr_check(q);
    size_t bad = fu_verify(q, sizeof *q, keep_n, seed);
    check(hdr_ok && bad == (size_t)-1, "thread %d: realloc(%zu -> %zu) = %p did not keep the contents (header %s, "
                                       "first bad byte %zu)",
          me->id, old, n, (void *)q, hdr_ok ? "ok" : "changed", bad);
    q->size = (uint32_t)n;
    q->check = hdr_check(q);
    if (n > old)
        fu_fill(q, old, n, seed);
    return q;
}

static void *ring_thread(void *arg)
{
    struct thr *me = arg;
    struct hdr *in[BATCH];
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        unsigned n = inbox_take(me->id, in, BATCH);
        me->received += n;
        for (unsigned i = 0; i < n; i++) {
            struct hdr *h = in[i];
            unsigned act = (unsigned)(tu_rand(&me->rng) % 10);
            if (act < 3) {
                release(me, h, "receiver free");
            } else if (act < 5) {
                if (verify(me, h, "receiver before realloc"))
                    h = resize(me, h);
                forward(me, h);
            } else if (act < 6) {
                if (verify(me, h, "receiver keeping it"))
                    keep(me, h);
                else
                    forward(me, h);
            } else {
                verify(me, h, "receiver forwarding");
                forward(me, h);
            }
        }
        atomic_fetch_add_explicit(&progress, NEW_PER_ROUND, memory_order_relaxed);
        for (int k = 0; k < NEW_PER_ROUND; k++) {
            struct hdr *h = make(me);
            if (!h)
                continue;
            if (k & 1)
                forward(me, h);
            else
                keep(me, h);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 15.0;
    if (seconds <= 0)
        seconds = 15.0;
    fu_watchdog("xstress_long", (unsigned)seconds + 30);
    fu_expect_slub("xstress_long");
    for (int i = 0; i < NTHREADS; i++) {
        pthread_mutex_init(&inboxes[i].lock, NULL);
        thrs[i].id = i;
        thrs[i].rng = 0xfeedULL + (uint64_t)i * 0x1000193ULL;
    }
    double t0 = fu_now();
    for (int i = 0; i < NTHREADS; i++) {
        int rc = pthread_create(&thrs[i].t, NULL, ring_thread, &thrs[i]);
        if (!check(rc == 0, "pthread_create: %s", strerror(rc)))
            return 1;
    }
    long last = 0;
    while (fu_now() - t0 < seconds) {
        usleep(100000);
        long v = atomic_load_explicit(&progress, memory_order_relaxed);
        if (fu_now() - t0 >= 5.0 * (double)(last + 1)) {
            last++;
            printf("xstress_long: %.0f s, ~%ld objects allocated so far\n", fu_now() - t0, v);
            fflush(stdout);
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(thrs[i].t, NULL);
    double el = fu_now() - t0;

    /* main verifies and frees what is left in the inboxes and windows */
    struct thr *mainthr = &thrs[0]; /* counts go to thread 0's totals */
    long left = 0;
    for (int i = 0; i < NTHREADS; i++) {
        struct hdr *h;
        while (inbox_take(i, &h, 1)) {
            release(mainthr, h, "main draining an inbox");
            left++;
        }
        for (int w = 0; w < WINDOW; w++)
            if (thrs[i].window[w]) {
                release(mainthr, thrs[i].window[w], "main draining a window");
                thrs[i].window[w] = NULL;
                left++;
            }
    }
    long allocs = 0, frees = 0, verified = 0, reallocs = 0, forwards = 0;
    for (int i = 0; i < NTHREADS; i++) {
        allocs += thrs[i].allocs;
        frees += thrs[i].frees;
        verified += thrs[i].verified;
        reallocs += thrs[i].reallocs;
        forwards += thrs[i].forwards;
        check(thrs[i].allocs > 0 && thrs[i].received > 0, "thread %d made no progress (allocs %ld, received %ld)", i,
              thrs[i].allocs, thrs[i].received);
    }
    printf("xstress_long: %.1f s, %d threads: %ld objects allocated, %ld freed (%ld left at the end), %ld verifications, "
           "%ld reallocs, %ld forwards around the ring\n",
           el, NTHREADS, allocs, frees, left, verified, reallocs, forwards);
    check(allocs == frees, "%ld allocations but %ld frees: objects were lost", allocs, frees);
    check(verified > 0, "nothing was verified");
    return tu_finish("xstress_long");
}
