/* fork_paths: fork() while other threads are inside every slubmalloc path: malloc and free,
 * realloc, large blocks, malloc_bulk/free_bulk, typed caches (alloc, free, bulk, create and
 * destroy), statistics (slub_stats_get, slub_stats_print, malloc_info, mallinfo2),
 * malloc_trim, per-CPU memory (pcpu_alloc/pcpu_free) and per-CPU counters and references.
 * Linked with libslubmalloc.so, as a program using the API is. Each child takes every one of
 * those paths again, on the state the parent's threads left mid-way, and exits 0: a lock
 * held across fork, or a structure left half-changed, hangs or crashes it. A watchdog turns a
 * hang into a failure; each child has its own. It runs `seconds`, longer (up to 60 s more) until
 * it has forked 20 times. Usage: fork_paths [seconds (5)] */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "slubmalloc.h"

#include "fault_util.h"
#include "test_util.h"

static atomic_int stop;
static atomic_long ops[8];
static struct slub_cache *shared_cache;
static struct pcpu_counter counter;
static struct pcpu_ref ref;
static int null_fd;
static FILE *null_fp;

static void small_path(uint64_t *rng)
{
    void *p[64];
    for (int i = 0; i < 64; i++)
        p[i] = malloc((size_t)(tu_rand(rng) % 2048) + 1);
    for (int i = 0; i < 64; i += 2)
        p[i] = realloc(p[i], (size_t)(tu_rand(rng) % 8192) + 1);
    for (int i = 0; i < 64; i++)
        free(p[i]);
}

static void large_path(uint64_t *rng)
{
    size_t n = 200000 + (size_t)(tu_rand(rng) % (4u << 20));
    char *p = malloc(n);
    if (!p)
        return;
    p[0] = p[n - 1] = 1;
    char *q = realloc(p, n * 2);
    free(q ? q : p);
    free(calloc(1, 300000));
}

static void bulk_path(uint64_t *rng)
{
    void *v[128];
    size_t size = (size_t)(tu_rand(rng) % 4096) + 1, n = (size_t)(tu_rand(rng) % 128) + 1;
    if (malloc_bulk(size, n, v) == n)
        free_bulk(n, v);
}

static void typed_path(uint64_t *rng)
{
    void *v[32];
    void *o = slub_cache_alloc(shared_cache);
    if (slub_cache_alloc_bulk(shared_cache, 32, v) == 32)
        slub_cache_free_bulk(shared_cache, 32, v);
    slub_cache_free(shared_cache, o);
    if (tu_rand(rng) % 8 == 0) {
        struct slub_cache *c = slub_cache_create("fork-own", 96, 0, 0, NULL);
        if (c) {
            void *a = slub_cache_alloc(c);
            slub_cache_free(c, a);
            slub_cache_destroy(c);
        }
    }
}

static void stats_path(void)
{
    struct slub_stats t;
    struct slub_cache_stats rows[8];
    slub_stats_get(&t, rows, 8);
    slub_stats_print(null_fd);
    malloc_info(0, null_fp);
    struct mallinfo2 m = mallinfo2();
    (void)m;
}

/* Per-CPU memory, a counter and a reference. The parent's workers use shared ones; a child
 * makes its own: a counter or reference another thread was changing at the fork is the
 * program's object, as its mutexes are (src/freelist.c, FORK). */
static void pcpu_path(struct pcpu_counter *c, struct pcpu_ref *r)
{
    long *a = pcpu_alloc(sizeof(long), sizeof(long));
    if (a) {
        pcpu_this_add(a, 1);
        pcpu_free(a);
    }
    pcpu_counter_add(c, 100); /* past the batch at times: the counter's slow path */
    (void)pcpu_counter_sum(c);
    pcpu_ref_get(r);
    pcpu_ref_put(r);
}

static void pcpu_path_own(void)
{
    struct pcpu_counter c;
    struct pcpu_ref r;
    if (pcpu_counter_init(&c, 0) != 0 || pcpu_ref_init(&r, NULL, 0) != 0)
        _exit(7);
    pcpu_path(&c, &r);
    pcpu_ref_kill(&r);
    pcpu_ref_exit(&r);
    pcpu_counter_destroy(&c);
}

enum { SMALL, LARGE, BULK, TYPED, STATS, TRIM, PCPU, NPATHS };

static void run_path(int which, uint64_t *rng)
{
    switch (which) {
    case SMALL: small_path(rng); break;
    case LARGE: large_path(rng); break;
    case BULK: bulk_path(rng); break;
    case TYPED: typed_path(rng); break;
    case STATS: stats_path(); break;
    case TRIM: malloc_trim(0); break;
    case PCPU: pcpu_path(&counter, &ref); break;
    }
}

static void *worker(void *arg)
{
    int which = (int)(intptr_t)arg;
    uint64_t rng = 777 + (uint64_t)which * 1000003;
    while (!atomic_load(&stop)) {
        run_path(which, &rng);
        atomic_fetch_add(&ops[which], 1);
        if (which == TRIM)
            usleep(200);
    }
    return NULL;
}

static void *child_thread(void *arg)
{
    uint64_t rng = 99;
    small_path(&rng);
    bulk_path(&rng);
    return arg;
}

static void child(void)
{
    alarm(10); /* the watchdog's handler is inherited: a hang ends with status 3 */
    uint64_t rng = (uint64_t)getpid();
    for (int round = 0; round < 3; round++)
        for (int w = 0; w < NPATHS; w++)
            if (w == PCPU)
                pcpu_path_own();
            else
                run_path(w, &rng);
    pthread_t t; /* and a thread of the child's own */
    if (pthread_create(&t, NULL, child_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
        _exit(6);
    _exit(0);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    fu_watchdog("fork_paths", (unsigned)seconds + 90);
    null_fd = open("/dev/null", O_WRONLY);
    null_fp = fopen("/dev/null", "w");
    shared_cache = slub_cache_create("fork-shared", 72, 0, SLUB_HWCACHE_ALIGN, NULL);
    check(shared_cache && null_fd >= 0 && null_fp, "setup");
    check(pcpu_counter_init(&counter, 0) == 0, "pcpu_counter_init");
    check(pcpu_ref_init(&ref, NULL, 0) == 0, "pcpu_ref_init");

    pthread_t t[NPATHS];
    for (int w = 0; w < NPATHS; w++)
        pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w);
    /* at least 20 forks, however slow the machine: the count is coverage, not a speed (a
     * loaded CI host did 17 in 5 s, main before 2026-12-05 too) */
    double end = fu_now() + seconds;
    long forks = 0;
    while (fu_now() < end || (forks < 20 && fu_now() < end + 60)) {
        pid_t pid = fork();
        if (!check(pid >= 0, "fork"))
            break;
        if (pid == 0)
            child();
        int st;
        check(waitpid(pid, &st, 0) == pid, "waitpid");
        check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %ld: status 0x%x", forks, st);
        forks++;
    }
    atomic_store(&stop, 1);
    for (int w = 0; w < NPATHS; w++)
        pthread_join(t[w], NULL);
    printf("fork_paths: %ld forks; rounds per path:", forks);
    for (int w = 0; w < NPATHS; w++)
        printf(" %ld", atomic_load(&ops[w]));
    printf("\n");
    check(forks >= 20, "only %ld forks", forks);
    for (int w = 0; w < NPATHS; w++)
        check(atomic_load(&ops[w]) > 0, "path %d never ran", w);
    return tu_finish("fork_paths");
}
