/* fork_load: fork() under allocation load. 2 threads fork in a loop while 3 others allocate and
 * free (mixed sizes 8 B..2 MiB, realloc, calloc) and use stdio (snprintf into heap buffers,
 * fprintf to a shared FILE* on /dev/null, fopen/fprintf/fclose of their own). Each child
 * allocates in several sizes (small, medium, large, calloc zeroing, realloc, malloc_bulk when
 * available), verifies and frees everything, uses stdio, every 16th child also starts and joins
 * a thread that allocates, and the child _exit(0)s; the parent waitpid()s and checks that every
 * child exited with status 0. Runs until max_forks forks or `seconds` have passed; at least
 * min_forks (2000 by default) must be done (on a busy machine the run is extended by up to 90 s
 * to reach them: the count is how much the test covers, not a speed; a fork's cost is measured
 * by benchmarks). Children carry their own alarm(10) and the
 * whole test a watchdog, so a deadlock (an allocator or stdio lock held across fork) is a
 * failure, never a hang. Worker objects are verified when freed.
 * Usage: fork_load [seconds (20)] [max_forks (5000)] [min_forks (2000)] */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { NWORKERS = 3, NFORKERS = 2 };

static tu_malloc_bulk_fn bulk_alloc;
static tu_free_bulk_fn bulk_free;

static atomic_int stop;
static atomic_long nforks, worker_ops;
static FILE *devnull;
static double seconds = 20, t_start;
static long max_forks = 5000, min_forks = 2000;

static size_t worker_size(uint64_t *rng)
{
    uint64_t r = tu_rand(rng), pct = r % 100;
    if (pct < 75)
        return 8 + (size_t)(r >> 8) % 1017;
    if (pct < 99)
        return 1025 + (size_t)(r >> 8) % 64512;
    return 131072 + (size_t)(r >> 8) % (1 << 20);
}

static void *worker(void *arg)
{
    uint64_t rng = 0xabcdefULL + (uintptr_t)arg * 7919;
    enum { WIN = 256 };
    void *win[WIN] = { 0 };
    size_t winn[WIN] = { 0 };
    long ops = 0;
    while (!atomic_load(&stop)) {
        unsigned w = (unsigned)(tu_rand(&rng) % WIN);
        if (win[w]) {
            check(tu_obj_check(win[w], winn[w]), "worker: object %p (%zu bytes) corrupted", win[w], winn[w]);
            if (ops % 8 == 0) { /* grow or shrink it instead of freeing it */
                size_t n = worker_size(&rng);
                void *q = realloc(win[w], n);
                if (check(q != NULL, "worker: realloc(%zu) failed", n)) {
                    win[w] = q;
                    winn[w] = n;
                    tu_obj_fill(q, n);
                }
                ops++;
                continue;
            }
            free(win[w]);
            win[w] = NULL;
        }
        size_t n = worker_size(&rng);
        win[w] = ops % 5 == 0 ? calloc(1, n) : malloc(n);
        winn[w] = n;
        if (check(win[w] != NULL, "worker: allocation of %zu failed", n))
            tu_obj_fill(win[w], n);
        char *buf = malloc(200);
        if (check(buf != NULL, "worker: malloc(200) failed")) {
            int len = snprintf(buf, 200, "worker %lu op %ld size %zu at %p %g", (unsigned long)(uintptr_t)arg, ops,
                               n, win[w], ops / 3.0);
            check(len > 0 && len < 200 && strncmp(buf, "worker ", 7) == 0, "worker: snprintf result");
            if (ops % 32 == 0)
                fprintf(devnull, "%s\n", buf);
            free(buf);
        }
        if (ops % 256 == 0) {
            FILE *f = fopen("/dev/null", "w");
            if (check(f != NULL, "worker: fopen(/dev/null): %s", strerror(errno))) {
                fprintf(f, "worker %lu: %ld ops\n", (unsigned long)(uintptr_t)arg, ops);
                check(fclose(f) == 0, "worker: fclose failed");
            }
        }
        ops++;
    }
    for (int w = 0; w < WIN; w++) {
        if (win[w])
            check(tu_obj_check(win[w], winn[w]), "worker: object %p (%zu bytes) corrupted", win[w], winn[w]);
        free(win[w]);
    }
    atomic_fetch_add(&worker_ops, ops);
    return NULL;
}

/* ---- in the child ---- */

static void *child_thread(void *arg)
{
    void *p[64];
    for (int i = 0; i < 64; i++) {
        size_t n = 16 + (size_t)i * 97;
        p[i] = malloc(n);
        if (!p[i])
            return (void *)2;
        fu_fill(p[i], 0, n, (uint64_t)i);
    }
    for (int i = 0; i < 64; i++) {
        if (fu_verify(p[i], 0, 16 + (size_t)i * 97, (uint64_t)i) != (size_t)-1)
            return (void *)3;
        free(p[i]);
    }
    return arg;
}

/* Returns the child's exit status: 0 ok, 2 allocation failed, 3 corrupted data, 4 stdio, 5 thread. */
static int child_work(long iter)
{
    static const size_t sizes[] = { 1, 8, 24, 100, 500, 2000, 10000, 60000, 200000 };
    enum { NS = sizeof sizes / sizeof sizes[0], PER = 2 };
    void *p[NS * PER];
    for (int k = 0; k < NS * PER; k++) {
        size_t n = sizes[k % NS];
        p[k] = malloc(n);
        if (!p[k])
            return 2;
        fu_fill(p[k], 0, n, (uint64_t)k * 31 + 1);
    }
    for (int k = 1; k < NS * PER; k += 2) { /* free half, then calloc in their place */
        size_t n = sizes[k % NS];
        if (fu_verify(p[k], 0, n, (uint64_t)k * 31 + 1) != (size_t)-1)
            return 3;
        free(p[k]);
        unsigned char *c = calloc(n, 1);
        if (!c)
            return 2;
        for (size_t i = 0; i < n; i++)
            if (c[i])
                return 3;
        fu_fill(c, 0, n, (uint64_t)k * 31 + 1);
        p[k] = c;
    }
    /* realloc growth keeps the prefix */
    size_t rn = 100;
    char *r = malloc(rn);
    if (!r)
        return 2;
    fu_fill(r, 0, rn, 99);
    while (rn < 200000) {
        size_t nn = rn * 3;
        char *q = realloc(r, nn);
        if (!q)
            return 2;
        if (fu_verify(q, 0, rn, 99) != (size_t)-1)
            return 3;
        fu_fill(q, rn, nn, 99);
        r = q;
        rn = nn;
    }
    free(r);
    /* a large block, written once per page (the child's time is kept short: see main) */
    unsigned char *big = malloc(1 << 20);
    if (!big)
        return 2;
    for (size_t i = 0; i < (1 << 20); i += 4096)
        big[i + (i >> 12) % 4000] = (unsigned char)(i >> 12);
    for (size_t i = 0; i < (1 << 20); i += 4096)
        if (big[i + (i >> 12) % 4000] != (unsigned char)(i >> 12))
            return 3;
    free(big);
    if (bulk_alloc) {
        void *b[32];
        if (bulk_alloc(48, 32, b) != 32)
            return 2;
        for (int i = 0; i < 32; i++)
            fu_fill(b[i], 0, 48, (uint64_t)i);
        for (int i = 0; i < 32; i++)
            if (fu_verify(b[i], 0, 48, (uint64_t)i) != (size_t)-1)
                return 3;
        bulk_free(32, b);
    }
    for (int k = 0; k < NS * PER; k++) {
        if (fu_verify(p[k], 0, sizes[k % NS], (uint64_t)k * 31 + 1) != (size_t)-1)
            return 3;
        free(p[k]);
    }
    /* stdio */
    char *s = malloc(128);
    if (!s)
        return 2;
    int len = snprintf(s, 128, "child %ld pid %ld %.2f", iter, (long)getpid(), iter / 7.0);
    if (len <= 0 || len >= 128)
        return 4;
    if (fprintf(devnull, "%s\n", s) < 0 || fflush(devnull) != 0)
        return 4;
    free(s);
    FILE *f = fopen("/dev/null", "w");
    if (!f)
        return 4;
    if (fprintf(f, "child %ld\n", iter) < 0 || fclose(f) != 0)
        return 4;
    if (iter % 16 == 0) {
        pthread_t t;
        void *res = NULL;
        if (pthread_create(&t, NULL, child_thread, (void *)0) != 0)
            return 5;
        pthread_join(t, &res);
        if (res)
            return (int)(intptr_t)res;
    }
    return 0;
}

static void *forker(void *arg)
{
    uint64_t rng = 0x5eed + (uintptr_t)arg;
    int bad_children = 0;
    while (!atomic_load(&stop)) {
        long i = atomic_fetch_add(&nforks, 1);
        double el = fu_now() - t_start;
        /* stop at max_forks, or after `seconds` once min_forks are done (a slow, busy machine
         * gets up to `seconds` + 90 s to reach min_forks) */
        if (i >= max_forks || (el > seconds && i >= min_forks) || el > seconds + 90) {
            atomic_fetch_sub(&nforks, 1);
            break;
        }
        if (bad_children >= 5) {
            check(0, "stopping after %d failed children", bad_children);
            atomic_fetch_sub(&nforks, 1);
            break;
        }
        /* the forking thread holds a few blocks across the fork */
        size_t n = 16 + (size_t)(tu_rand(&rng) % 4000);
        void *held = malloc(n);
        if (held)
            tu_obj_fill(held, n);
        pid_t pid = fork();
        if (pid < 0) {
            check(0, "fork #%ld failed: %s", i, strerror(errno));
            atomic_fetch_sub(&nforks, 1);
            free(held);
            break;
        }
        if (pid == 0) {
            signal(SIGALRM, SIG_DFL);
            alarm(10); /* a deadlocked child dies with SIGALRM */
            int rc = child_work(i);
            if (rc == 0 && held && !tu_obj_check(held, n))
                rc = 3;
            free(held);
            _exit(rc);
        }
        int status = 0;
        pid_t w;
        do
            w = waitpid(pid, &status, 0);
        while (w < 0 && errno == EINTR);
        if (held)
            check(tu_obj_check(held, n), "forker: block held across fork corrupted");
        free(held);
        if (!check(w == pid, "waitpid(%ld) returned %ld: %s", (long)pid, (long)w, strerror(errno)))
            continue;
        if (WIFSIGNALED(status)) {
            bad_children++;
            check(0, "child #%ld killed by signal %d (%s)%s", i, WTERMSIG(status), strsignal(WTERMSIG(status)),
                  WTERMSIG(status) == SIGALRM ? ": deadlock in the child after fork?" : "");
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            bad_children++;
            int st = WEXITSTATUS(status);
            check(0, "child #%ld exited with status %d%s", i, st,
                  st == 2 ? " (allocation failed)" : st == 3 ? " (corrupted data or non-zero calloc)"
                  : st == 4 ? " (stdio failed)" : st == 5 ? " (pthread_create failed)" : "");
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds = atof(argv[1]);
    if (argc > 2)
        max_forks = atol(argv[2]);
    if (argc > 3)
        min_forks = atol(argv[3]);
    if (min_forks > max_forks)
        min_forks = max_forks;
    fu_watchdog("fork_load", (unsigned)seconds + 105);
    int expect = fu_expect_slub("fork_load");
    if (!tu_find_bulk(&bulk_alloc, &bulk_free, expect))
        printf("fork_load: malloc_bulk not available: children do not use it\n");
    devnull = fopen("/dev/null", "w");
    if (!check(devnull != NULL, "fopen /dev/null"))
        return 1;
    fflush(stdout);
    t_start = fu_now();
    pthread_t w[NWORKERS], f[NFORKERS];
    for (int i = 0; i < NWORKERS; i++)
        pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)i);
    for (int i = 0; i < NFORKERS; i++)
        pthread_create(&f[i], NULL, forker, (void *)(uintptr_t)i);
    for (int i = 0; i < NFORKERS; i++)
        pthread_join(f[i], NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(w[i], NULL);
    fclose(devnull);
    double el = fu_now() - t_start;
    long nf = atomic_load(&nforks);
    printf("fork_load: %ld forks in %.1f s (%.0f/s) by %d threads, %ld allocation rounds in %d worker threads\n", nf,
           el, nf / el, NFORKERS, atomic_load(&worker_ops), NWORKERS);
    check(nf >= min_forks, "only %ld forks in %.1f s, at least %ld expected", nf, el, min_forks);
    check(atomic_load(&worker_ops) > 0, "worker threads made no progress");
    return tu_finish("fork_load");
}
