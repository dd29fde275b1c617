/* rss: memory must be returned to the OS. Allocates 1 GiB (requested bytes; configurable) of
 * small objects (mix of 16..512 B), writes them, reads RSS from /proc/self/statm, frees everything
 * in random order and reads RSS again: the RSS must drop by at least 75% of the growth. Done twice:
 * once freeing from the allocating thread, once with a second thread doing all the frees.
 * Each scenario runs in a child process of its own; the figures are printed.
 * Note: plain glibc does not pass this (its fastbins/tcache keep chunks near the heap top in use,
 * so the heap is never trimmed); with GLIBC_TUNABLES=glibc.malloc.mxfast=0:glibc.malloc.tcache_count=0
 * the same-thread case drops by ~100%, which shows the measurement itself works.
 * Usage: rss [MiB] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static void **objs;
static size_t nobjs;

static void free_all(void)
{
    for (size_t i = 0; i < nobjs; i++)
        free(objs[i]);
}

static void *free_thread(void *arg)
{
    (void)arg;
    free_all();
    return NULL;
}

static void run(const char *label, size_t target, int other_thread, uint64_t seed)
{
    uint64_t rng = seed;
    long rss0 = tu_rss_statm();
    size_t total = 0;
    nobjs = 0;
    while (total < target) {
        size_t n = 16 + (size_t)(tu_rand(&rng) % 497);
        void *p = malloc(n);
        if (!check(p != NULL, "%s: malloc(%zu) failed after %zu bytes", label, n, total))
            break;
        memset(p, (int)(n & 0xff), n);
        objs[nobjs++] = p;
        total += n;
    }
    long rss1 = tu_rss_statm();
    /* free in random order */
    for (size_t i = nobjs; i > 1; i--) {
        size_t j = (size_t)(tu_rand(&rng) % i);
        void *t = objs[i - 1];
        objs[i - 1] = objs[j];
        objs[j] = t;
    }
    if (other_thread) {
        pthread_t t;
        if (pthread_create(&t, NULL, free_thread, NULL) == 0)
            pthread_join(t, NULL);
        else
            check(0, "%s: pthread_create failed", label);
    } else {
        free_all();
    }
    long rss2 = tu_rss_statm();
    long growth = rss1 - rss0, drop = rss1 - rss2;
    printf("%s: %zu objects, %zu MiB requested; RSS before %ld MiB, after alloc %ld MiB (growth %ld MiB), "
           "after free %ld MiB (drop %ld MiB = %.1f%% of growth)\n",
           label, nobjs, total >> 20, rss0 >> 20, rss1 >> 20, growth >> 20, rss2 >> 20, drop >> 20,
           growth > 0 ? 100.0 * (double)drop / (double)growth : 0.0);
    fflush(stdout);
    check(rss0 > 0 && rss1 > 0 && rss2 > 0, "%s: could not read /proc/self/statm", label);
    check(growth >= (long)(total / 10 * 9), "%s: RSS grew by only %ld bytes for %zu bytes written", label,
          growth, total);
    check(drop >= growth / 4 * 3, "%s: RSS dropped by %ld MiB after freeing everything, need >= 75%% of the "
          "%ld MiB growth", label, drop >> 20, growth >> 20);
}

/* Each scenario runs in its own child process, so one does not inherit the other's heap. */
static int run_in_child(const char *label, size_t target, int other_thread, uint64_t seed, size_t maxobjs)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        objs = mmap(NULL, maxobjs * sizeof *objs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (!check(objs != MAP_FAILED, "mmap pointer table"))
            exit(1);
        memset(objs, 0, maxobjs * sizeof *objs);
        run(label, target, other_thread, seed);
        fflush(stdout);
        exit(atomic_load(&tu_failures) ? 1 : 0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return 1;
    if (WIFSIGNALED(st))
        fprintf(stderr, "FAIL: %s: child killed by signal %d\n", label, WTERMSIG(st));
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    size_t target = mib << 20;
    /* the pointer table is mapped directly (not from malloc) and pre-touched so that it is part
     * of the baseline RSS; its size is the object count the deterministic size sequence needs */
    size_t maxobjs = 0;
    static const uint64_t seeds[2] = { 0x1111, 0x2222 };
    for (int s = 0; s < 2; s++) {
        uint64_t rng = seeds[s];
        size_t total = 0, cnt = 0;
        while (total < target) {
            total += 16 + (size_t)(tu_rand(&rng) % 497);
            cnt++;
        }
        if (cnt > maxobjs)
            maxobjs = cnt;
    }
    int bad = run_in_child("same thread frees", target, 0, seeds[0], maxobjs);
    bad += run_in_child("second thread frees", target, 1, seeds[1], maxobjs);
    if (bad)
        atomic_fetch_add(&tu_failures, bad);
    return tu_finish("rss");
}
