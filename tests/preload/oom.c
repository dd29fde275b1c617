/* oom: behaviour at out-of-memory, in-process. The program sets RLIMIT_AS to its address
 * space in use + 200 MiB (argv[1] MiB), then 4 threads allocate with every API until everything
 * fails: malloc of small (<= 1 KiB), medium (<= 128 KiB) and large (<= 16 MiB) sizes, calloc,
 * realloc growth, posix_memalign, aligned_alloc, memalign, valloc, pvalloc with alignments from
 * 16 B to 2 MiB and, when dlsym finds them (required under SLUBMALLOC_EXPECT=1), malloc_bulk /
 * free_bulk. Checked:
 *   - every failure returns NULL with errno ENOMEM (posix_memalign: returns ENOMEM and leaves
 *     *memptr untouched); malloc_bulk returns exactly 0 or n, and 0 only with errno ENOMEM;
 *   - every success is aligned (16 B, or the alignment asked for, or a page) and writable over
 *     its whole size (pvalloc: the size rounded up to a page); calloc memory reads as zero; every
 *     block keeps its own pattern until it is freed (no two blocks overlap);
 *   - a failed realloc leaves the old block intact (contents verified); a successful one keeps
 *     the prefix;
 *   - malloc_bulk is all or nothing: at exhaustion the main thread frees an 8 MiB pool of 512 B
 *     objects, then 20 malloc_bulk calls that each want 24 MiB of them must fail, and afterwards
 *     4 MiB of them must still be obtainable: a failed call that kept what it had taken would
 *     have swallowed the pool (without malloc_bulk: only the malloc half of this);
 *   - every API failed at least once per cycle (else the limit was not reached: the test itself
 *     would be meaningless);
 *   - a thread born at OOM (its first malloc made while the soft limit is lowered to the address
 *     space in use, so no mapping at all can be made; its stack is mapped at start-up) gets NULL
 *     with ENOMEM or a valid block then, and once memory is back (limit restored, everything
 *     freed) small, medium and large malloc/calloc from that thread must all succeed;
 *   - after everything is freed, allocation works again: the 4 threads allocate 25 MiB each in
 *     mixed sizes, all of which must succeed.
 * The fill/free cycle runs 3 times. A watchdog (alarm) turns a hang into a failure. Only the soft
 * limit is changed (so it can be lowered and raised again without privileges).
 * OOM_TEST_BREAK=probe makes the test itself hold on to the memory a failed malloc_bulk would
 * have taken: the all-or-nothing check must then fail (proof that it can).
 * Usage: oom [headroom_MiB (200)] */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { NTHREADS = 4, CYCLES = 3 };
enum { REC_CAP = 1 << 20 };            /* records per thread (mmap'd before the limit is set) */
enum { STOP_AFTER_FAILS = 600 };       /* consecutive failures that end a thread's fill */
enum { POOL_OBJ = 512, POOL_N = 16384 }; /* the main thread's 8 MiB probe pool */

enum op {
    OP_MALLOC_S, OP_MALLOC_M, OP_MALLOC_L, OP_CALLOC, OP_REALLOC, OP_POSIX_MEMALIGN,
    OP_ALIGNED_ALLOC, OP_MEMALIGN, OP_VALLOC, OP_PVALLOC, OP_BULK, NOP
};
static const char *const op_name[NOP] = {
    "malloc(small)", "malloc(medium)", "malloc(large)", "calloc", "realloc(grow)", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_bulk",
};

static tu_malloc_bulk_fn bulk_alloc;
static tu_free_bulk_fn bulk_free;

struct rec {
    void *p;
    size_t n;      /* bytes filled with the pattern */
    uint64_t seed;
};

struct worker {
    int id;
    uint64_t rng;
    struct rec *recs;
    size_t nrec;
    long ok[NOP], fail[NOP];
    long attempts;
    size_t filled;     /* bytes held when the fill ended */
    double fill_secs;
    pthread_t thr;
};

static struct worker workers[NTHREADS];
static pthread_barrier_t bar;
static size_t page;
static double fill_time_cap = 15.0; /* seconds a thread may spend filling, per cycle */
static volatile size_t v_bad_align = 24; /* not a power of two: posix_memalign must say EINVAL */

static int aligned_to(const void *p, size_t a)
{
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* Uniform in bits: a size in [lo, hi) whose log2 is uniformly distributed. */
static size_t rand_size(uint64_t *rng, size_t lo, size_t hi)
{
    unsigned blo = 63 - (unsigned)__builtin_clzll(lo), bhi = 64 - (unsigned)__builtin_clzll(hi - 1);
    for (;;) {
        unsigned b = blo + (unsigned)(tu_rand(rng) % (bhi - blo));
        size_t base = (size_t)1 << b;
        size_t n = base + (size_t)(tu_rand(rng) % base);
        if (n >= lo && n < hi)
            return n;
    }
}

static size_t any_size(uint64_t *rng)
{
    switch (tu_rand(rng) % 3) {
    case 0: return rand_size(rng, 1, 1025);
    case 1: return rand_size(rng, 1025, 131073);
    default: return rand_size(rng, 131073, 16 << 20);
    }
}

static void add_rec(struct worker *w, void *p, size_t n)
{
    uint64_t seed = tu_rand(&w->rng) | 1;
    fu_fill(p, 0, n, seed);
    w->recs[w->nrec++] = (struct rec){ p, n, seed };
}

/* Records a success: alignment, calloc zeroing, then the block gets its pattern. */
static void success(struct worker *w, enum op op, void *p, size_t n, size_t align, int zeroed)
{
    w->ok[op]++;
    check(aligned_to(p, align), "%s(%zu): %p is not aligned to %zu", op_name[op], n, p, align);
    if (zeroed) {
        const unsigned char *c = p;
        for (size_t i = 0; i < n; i++)
            if (c[i]) {
                check(0, "calloc(%zu) = %p: byte %zu is %#x, not zero", n, p, i, c[i]);
                break;
            }
    }
    add_rec(w, p, n);
}

/* Records a failure: NULL with errno ENOMEM. */
static void failure(struct worker *w, enum op op, size_t n, size_t align, void *p, int err)
{
    w->fail[op]++;
    check(p == NULL, "%s(%zu, align %zu) failed but returned %p", op_name[op], n, align, p);
    check(err == ENOMEM, "%s(%zu, align %zu) returned NULL with errno %d (%s), expected ENOMEM", op_name[op], n,
          align, err, strerror(err));
}

static const size_t aligns[] = { 16, 32, 64, 128, 256, 512, 1024, 4096, 8192, 65536, 1 << 20, 2 << 20 };
enum { NALIGN = sizeof aligns / sizeof aligns[0] };

/* One attempt of op; returns 1 on success. */
static int attempt(struct worker *w, enum op op)
{
    uint64_t *rng = &w->rng;
    size_t n = 0, align = 16;
    void *p = NULL;
    int err;
    switch (op) {
    case OP_MALLOC_S:
    case OP_MALLOC_M:
    case OP_MALLOC_L:
        n = op == OP_MALLOC_S ? rand_size(rng, 1, 1025)
            : op == OP_MALLOC_M ? rand_size(rng, 1025, 131073) : rand_size(rng, 131073, 16 << 20);
        errno = 0;
        p = malloc(n);
        err = errno;
        break;
    case OP_CALLOC: {
        n = any_size(rng);
        size_t k = 1 + tu_rand(rng) % 8;
        n = (n + k - 1) / k * k;
        errno = 0;
        p = calloc(n / k, k);
        err = errno;
        if (p) {
            success(w, op, p, n, 16, 1);
            return 1;
        }
        break;
    }
    case OP_REALLOC: {
        if (!w->nrec)
            return attempt(w, OP_MALLOC_M);
        struct rec *r = &w->recs[tu_rand(rng) % w->nrec];
        size_t old = r->n;
        n = old + old / 2 + 1 + (size_t)(tu_rand(rng) % 65536);
        if (n > (24u << 20))
            n = old + 1 + (size_t)(tu_rand(rng) % 4096);
        errno = 0;
        void *q = realloc(r->p, n);
        err = errno;
        if (q) {
            w->ok[op]++;
            check(aligned_to(q, 16), "realloc(%p, %zu) = %p is not 16-byte aligned", r->p, n, q);
            size_t bad = fu_verify(q, 0, old, r->seed);
            check(bad == (size_t)-1, "realloc(%p, %zu -> %zu) = %p: byte %zu of the kept prefix changed", r->p,
                  old, n, q, bad);
            fu_fill(q, old, n, r->seed);
            r->p = q;
            r->n = n;
            return 1;
        }
        failure(w, op, n, 16, q, err);
        size_t bad = fu_verify(r->p, 0, old, r->seed);
        check(bad == (size_t)-1, "failed realloc(%p, %zu -> %zu) damaged the old block at byte %zu", r->p, old, n,
              bad);
        return 0;
    }
    case OP_POSIX_MEMALIGN: {
        align = aligns[tu_rand(rng) % NALIGN];
        n = any_size(rng);
        void *sentinel = (void *)(uintptr_t)0x5a5a5a50, *q = sentinel;
        int rc = posix_memalign(&q, align, n);
        if (rc == 0) {
            success(w, op, q, n, align, 0);
            return 1;
        }
        w->fail[op]++;
        check(rc == ENOMEM, "posix_memalign(%zu, %zu) returned %d, expected 0 or ENOMEM", align, n, rc);
        check(q == sentinel, "failed posix_memalign(%zu, %zu) changed *memptr to %p", align, n, q);
        /* a bad alignment is EINVAL, whatever the memory state */
        q = sentinel;
        rc = posix_memalign(&q, v_bad_align, 64);
        check(rc == EINVAL && q == sentinel, "posix_memalign(24, 64) at OOM returned %d (*memptr %p), expected EINVAL",
              rc, q);
        return 0;
    }
    case OP_ALIGNED_ALLOC:
        align = aligns[tu_rand(rng) % NALIGN];
        n = any_size(rng);
        errno = 0;
        p = aligned_alloc(align, n);
        err = errno;
        break;
    case OP_MEMALIGN:
        align = aligns[tu_rand(rng) % NALIGN];
        n = any_size(rng);
        errno = 0;
        p = memalign(align, n);
        err = errno;
        break;
    case OP_VALLOC:
        align = page;
        n = any_size(rng);
        errno = 0;
        p = valloc(n);
        err = errno;
        break;
    case OP_PVALLOC:
        align = page;
        n = any_size(rng);
        errno = 0;
        p = pvalloc(n);
        err = errno;
        n = (n + page - 1) / page * page; /* pvalloc's block is the size rounded up to a page */
        break;
    case OP_BULK: {
        if (!bulk_alloc)
            return attempt(w, OP_MALLOC_S);
        size_t cnt = 2 + tu_rand(rng) % 31;
        n = tu_rand(rng) % 8 == 0 ? rand_size(rng, 131073, 4 << 20)
            : tu_rand(rng) % 2 ? rand_size(rng, 1, 1025) : rand_size(rng, 1025, 131073);
        void *arr[32];
        errno = 0;
        size_t got = bulk_alloc(n, cnt, arr);
        err = errno;
        if (got == cnt) {
            for (size_t i = 0; i < cnt; i++)
                success(w, op, arr[i], n, 16, 0);
            w->ok[op] -= (long)cnt - 1;
            return 1;
        }
        w->fail[op]++;
        check(got == 0, "malloc_bulk(%zu, %zu) returned %zu: a partial allocation", n, cnt, got);
        check(err == ENOMEM, "malloc_bulk(%zu, %zu) returned %zu with errno %d (%s), expected ENOMEM", n, cnt, got,
              err, strerror(err));
        return 0;
    }
    default:
        return 0;
    }
    if (p) {
        success(w, op, p, n, align, 0);
        return 1;
    }
    failure(w, op, n, align, p, err);
    return 0;
}

static void fill(struct worker *w)
{
    double t0 = fu_now();
    long consecutive = 0;
    unsigned k = (unsigned)w->id;
    while (consecutive < STOP_AFTER_FAILS && w->nrec + 64 < REC_CAP) {
        enum op op = (enum op)(k++ % NOP);
        w->attempts++;
        if (attempt(w, op))
            consecutive = 0;
        else
            consecutive++;
        if ((w->attempts & 255) == 0 && fu_now() - t0 > fill_time_cap)
            break;
    }
    w->fill_secs = fu_now() - t0;
    w->filled = 0;
    for (size_t i = 0; i < w->nrec; i++)
        w->filled += w->recs[i].n;
}

static void free_all(struct worker *w)
{
    void *batch[64];
    size_t nb = 0;
    for (size_t i = 0; i < w->nrec; i++) {
        struct rec *r = &w->recs[i];
        size_t bad = fu_verify(r->p, 0, r->n, r->seed);
        check(bad == (size_t)-1, "thread %d: block %p (%zu bytes) corrupted at byte %zu", w->id, r->p, r->n, bad);
        if (bulk_free && (i & 1)) {
            batch[nb++] = r->p;
            if (nb == 64) {
                bulk_free(nb, batch);
                nb = 0;
            }
        } else {
            free(r->p);
        }
    }
    if (nb)
        bulk_free(nb, batch);
    w->nrec = 0;
}

/* After the free: 25 MiB in mixed sizes must be allocatable again, and be intact. */
static void realloc_after_free(struct worker *w)
{
    size_t total = 0, target = (size_t)25 << 20;
    while (total < target) {
        size_t n;
        uint64_t r = tu_rand(&w->rng) % 100;
        n = r < 60 ? rand_size(&w->rng, 1, 1025) : r < 90 ? rand_size(&w->rng, 1025, 131073)
                                                           : rand_size(&w->rng, 131073, 4 << 20);
        errno = 0;
        void *p = malloc(n);
        if (!check(p != NULL, "thread %d: after freeing everything, malloc(%zu) failed (errno %d) with %zu of %zu "
                              "bytes allocated",
                   w->id, n, errno, total, target))
            break;
        add_rec(w, p, n);
        total += n;
        if (w->nrec + 1 >= REC_CAP)
            break;
    }
    free_all(w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    /* warm-up: set up this thread's allocator state (thread cache, arena) before the limit */
    for (int op = 0; op < NOP; op++)
        attempt(w, (enum op)op);
    free_all(w);
    memset(w->ok, 0, sizeof w->ok);
    memset(w->fail, 0, sizeof w->fail);
    pthread_barrier_wait(&bar); /* warm-up done */
    for (int c = 0; c < CYCLES; c++) {
        pthread_barrier_wait(&bar); /* fill */
        fill(w);
        pthread_barrier_wait(&bar); /* fill done; main probes */
        pthread_barrier_wait(&bar); /* probe done */
        free_all(w);
        pthread_barrier_wait(&bar); /* everything freed */
        realloc_after_free(w);
        pthread_barrier_wait(&bar); /* cycle done */
    }
    return NULL;
}

/* A thread born at OOM: started while no new mapping is possible (soft RLIMIT_AS lowered to
 * the address space in use; its stack was mapped at start-up), it tries one malloc then, and
 * more once memory is back (limit restored, everything freed): those must all succeed. */
static sem_t born_go, born_done;
static void *born_stack;
enum { BORN_STACK = 1 << 20 };
static int born_at_oom_ok;

static void *born_main(void *arg)
{
    int cycle = (int)(intptr_t)arg;
    errno = 0;
    void *p = malloc(64);
    int err = errno;
    born_at_oom_ok = p != NULL;
    if (p) {
        memset(p, 0x3c, 64);
        free(p);
    } else {
        check(err == ENOMEM, "cycle %d: thread born at OOM: malloc(64) returned NULL with errno %d (%s), expected "
                             "ENOMEM", cycle, err, strerror(err));
    }
    sem_post(&born_done);
    while (sem_wait(&born_go) != 0)
        ;
    /* memory is back: this thread must be able to allocate like any other */
    static const size_t sizes[] = { 16, 64, 1000, 5000, 40000, 200000, 1 << 20 };
    enum { NS = sizeof sizes / sizeof sizes[0] };
    void *q[NS * 4];
    for (int k = 0; k < NS * 4; k++) {
        size_t n = sizes[k % NS];
        errno = 0;
        q[k] = k & 1 ? calloc(1, n) : malloc(n);
        err = errno;
        if (check(q[k] != NULL, "cycle %d: thread born at OOM, after memory came back: %s(%zu) returned NULL, "
                                "errno %d (%s)", cycle, k & 1 ? "calloc" : "malloc", n, err, strerror(err)))
            fu_fill(q[k], 0, n, (uint64_t)k + 5);
    }
    for (int k = 0; k < NS * 4; k++) {
        if (!q[k])
            continue;
        size_t bad = fu_verify(q[k], 0, sizes[k % NS], (uint64_t)k + 5);
        check(bad == (size_t)-1, "thread born at OOM: block %d corrupted at byte %zu", k, bad);
        free(q[k]);
    }
    sem_post(&born_done);
    return NULL;
}

/* Lowers the soft RLIMIT_AS to what is in use and starts the thread; 1 if it started. */
static int born_start(pthread_t *t, int cycle)
{
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    long vm = fu_vmsize();
    struct rlimit low = { (rlim_t)vm, rl.rlim_max };
    check(vm > 0 && setrlimit(RLIMIT_AS, &low) == 0, "lowering RLIMIT_AS to VmSize failed");
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstack(&at, born_stack, BORN_STACK);
    int rc = pthread_create(t, &at, born_main, (void *)(intptr_t)cycle);
    pthread_attr_destroy(&at);
    if (rc == 0)
        while (sem_wait(&born_done) != 0)
            ;
    setrlimit(RLIMIT_AS, &rl);
    if (rc != 0) {
        printf("cycle %d: note: pthread_create at OOM failed (%s): the thread-born-at-OOM check is skipped\n", cycle,
               strerror(rc));
        return 0;
    }
    return 1;
}

static void free_pool(void **pool)
{
    for (size_t i = 0; i < POOL_N; i++) {
        size_t bad = fu_verify(pool[i], 0, POOL_OBJ, 0x77 + i);
        check(bad == (size_t)-1, "pool object %zu corrupted at byte %zu", i, bad);
        free(pool[i]);
        pool[i] = NULL;
    }
}

/* At exhaustion (workers idle, the pool just freed): make malloc_bulk fail repeatedly wanting
 * 3x the pool, then half the pool must still be obtainable. */
static void probe(void **pool, int cycle, int break_probe)
{
    size_t want = 3 * POOL_N, half = POOL_N / 2;
    void **arr = pool; /* POOL_N entries: big enough for `half`, not for `want`: see below */
    static void *big[3 * POOL_N];
    int failed_ok = 0;
    if (bulk_alloc) {
        for (int k = 0; k < 20; k++) {
            errno = 0;
            size_t got = bulk_alloc(POOL_OBJ, want, big);
            int err = errno;
            if (got) {
                check(0, "cycle %d: malloc_bulk(%d, %zu) (24 MiB) succeeded at exhaustion: the limit was not "
                         "reached, the probe is void", cycle, POOL_OBJ, want);
                bulk_free(got, big);
                break;
            }
            check(err == ENOMEM, "cycle %d: failed malloc_bulk(%d, %zu): errno %d, expected ENOMEM", cycle, POOL_OBJ,
                  want, err);
            failed_ok++;
            if (break_probe) /* deliberate test breakage: keep what a partial allocation would hold */
                for (size_t i = 0; i < POOL_N; i++)
                    if (!malloc(POOL_OBJ))
                        break;
        }
    } else if (break_probe) {
        for (size_t i = 0; i < 2 * POOL_N; i++)
            if (!malloc(POOL_OBJ))
                break;
    }
    size_t got = 0;
    if (bulk_alloc) {
        errno = 0;
        got = bulk_alloc(POOL_OBJ, half, arr);
        check(got == half, "cycle %d: after %d failed malloc_bulk calls, malloc_bulk(%d, %zu) (4 MiB of the 8 MiB "
                           "just freed) returned %zu, errno %d: the failed calls kept memory",
              cycle, failed_ok, POOL_OBJ, half, got, errno);
        if (got != half)
            got = 0;
    } else {
        for (got = 0; got < half; got++) {
            arr[got] = malloc(POOL_OBJ);
            if (!arr[got])
                break;
        }
        check(got == half, "cycle %d: malloc(%d) failed after %zu of %zu objects of the 8 MiB just freed", cycle,
              POOL_OBJ, got, half);
    }
    for (size_t i = 0; i < got; i++) {
        check(aligned_to(arr[i], 16), "probe object %p misaligned", arr[i]);
        memset(arr[i], 0xa5, POOL_OBJ);
    }
    if (bulk_free)
        bulk_free(got, arr);
    else
        for (size_t i = 0; i < got; i++)
            free(arr[i]);
    for (size_t i = 0; i < POOL_N; i++)
        pool[i] = NULL;
}

int main(int argc, char **argv)
{
    long headroom_mib = argc > 1 ? atol(argv[1]) : 200;
    const char *brk = getenv("OOM_TEST_BREAK"); /* "probe": deliberately break the bulk probe */
    int break_probe = brk && strcmp(brk, "probe") == 0;
    fu_watchdog("oom", 60);
    page = (size_t)getpagesize();
    int expect = fu_expect_slub("oom");
    if (!tu_find_bulk(&bulk_alloc, &bulk_free, expect))
        printf("oom: malloc_bulk/free_bulk not available: their checks are skipped\n");
    fflush(stdout);

    static void *pool[POOL_N];
    sem_init(&born_go, 0, 0);
    sem_init(&born_done, 0, 0);
    born_stack = mmap(NULL, BORN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!check(born_stack != MAP_FAILED, "mmap of a thread stack failed"))
        return 1;
    pthread_barrier_init(&bar, NULL, NTHREADS + 1);
    for (int i = 0; i < NTHREADS; i++) {
        struct worker *w = &workers[i];
        w->id = i;
        w->rng = 0x1234567ULL * (uint64_t)(i + 1) ^ (uint64_t)getpid();
        w->recs = mmap(NULL, REC_CAP * sizeof(struct rec), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (!check(w->recs != MAP_FAILED, "mmap of the record array failed"))
            return 1;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, 1 << 20);
        int rc = pthread_create(&w->thr, &at, worker_main, w);
        pthread_attr_destroy(&at);
        if (!check(rc == 0, "pthread_create: %s", strerror(rc)))
            return 1;
    }
    pthread_barrier_wait(&bar); /* workers warmed up */

    long vm = fu_vmsize();
    if (!check(vm > 0, "cannot read VmSize"))
        return 1;
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl); /* only the soft limit changes: it can go down and up again */
    rl.rlim_cur = (rlim_t)vm + ((rlim_t)headroom_mib << 20);
    if (!check(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit(RLIMIT_AS): %s", strerror(errno)))
        return 1;
    printf("oom: VmSize %ld MiB, RLIMIT_AS set to %ld MiB (+%ld MiB), %d threads, %d cycles\n", vm >> 20,
           (long)(rl.rlim_cur >> 20), headroom_mib, NTHREADS, CYCLES);
    fflush(stdout);

    for (int c = 0; c < CYCLES; c++) {
        double t0 = fu_now();
        size_t have = 0;
        for (; have < POOL_N; have++) {
            pool[have] = malloc(POOL_OBJ);
            if (!pool[have])
                break;
            fu_fill(pool[have], 0, POOL_OBJ, 0x77 + have);
        }
        if (!check(have == POOL_N, "cycle %d: the 8 MiB probe pool could not be allocated (%zu objects)", c, have)) {
            for (size_t i = 0; i < have; i++)
                free(pool[i]);
            break; /* the workers are waiting at a barrier: end the process from here */
        }
        pthread_barrier_wait(&bar); /* fill */
        pthread_barrier_wait(&bar); /* fill done */
        free_pool(pool);
        pthread_t born;
        int born_ok = born_start(&born, c);
        probe(pool, c, break_probe);
        pthread_barrier_wait(&bar); /* probe done */
        pthread_barrier_wait(&bar); /* everything freed */
        if (born_ok) {
            sem_post(&born_go);
            while (sem_wait(&born_done) != 0)
                ;
            pthread_join(born, NULL);
            printf("cycle %d: thread born at OOM: malloc(64) %s at OOM, allocations after the free checked\n", c,
                   born_at_oom_ok ? "succeeded" : "failed (ENOMEM)");
        }
        pthread_barrier_wait(&bar); /* cycle done */

        long ok[NOP] = { 0 }, fail[NOP] = { 0 }, attempts = 0;
        size_t filled = 0;
        double fill_max = 0;
        for (int i = 0; i < NTHREADS; i++) {
            for (int o = 0; o < NOP; o++) {
                ok[o] += workers[i].ok[o];
                fail[o] += workers[i].fail[o];
                workers[i].ok[o] = workers[i].fail[o] = 0;
            }
            attempts += workers[i].attempts;
            filled += workers[i].filled;
            workers[i].attempts = 0;
            if (workers[i].fill_secs > fill_max)
                fill_max = workers[i].fill_secs;
        }
        printf("cycle %d: %ld attempts, %zu MiB held at exhaustion, fill %.2f s, cycle %.2f s; ok/failed:", c,
               attempts, filled >> 20, fill_max, fu_now() - t0);
        for (int o = 0; o < NOP; o++) {
            if (o == OP_BULK && !bulk_alloc)
                continue;
            printf(" %s %ld/%ld", op_name[o], ok[o], fail[o]);
            check(fail[o] > 0, "cycle %d: %s never failed: memory was not exhausted", c, op_name[o]);
        }
        printf("\n");
        fflush(stdout);
    }
    if (atomic_load(&tu_failures)) {
        /* a failed check may have left the workers at a barrier: do not join them */
        fprintf(stderr, "oom: %ld check(s) FAILED\n", (long)atomic_load(&tu_failures));
        _exit(1);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(workers[i].thr, NULL);
    return tu_finish("oom");
}
