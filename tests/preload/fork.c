/* fork: fork safety of the allocator. One thread forks 1000 times (configurable) while three
 * other threads allocate/free continuously and use stdio (snprintf into heap buffers, occasional
 * fprintf to a shared FILE* on /dev/null). Each child mallocs, frees and callocs a few hundred
 * objects of several sizes (verifying contents and calloc zeroing), uses stdio and exits 0; the
 * parent checks every child's wait status. Children have their own alarm(), and the whole test a
 * global alarm(), so a deadlock (e.g. an allocator lock held across fork) is a failure, not a hang.
 * Usage: fork [forks] */
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

#include "test_util.h"

static atomic_int stop;
static FILE *devnull;
static atomic_long worker_ops;

static void *worker(void *arg)
{
    uint64_t rng = 0x9999ULL + (uintptr_t)arg * 12345;
    enum { WIN = 128 };
    void *win[WIN] = { 0 };
    size_t winn[WIN] = { 0 };
    long ops = 0;
    while (!atomic_load(&stop)) {
        unsigned w = (unsigned)(tu_rand(&rng) % WIN);
        if (win[w]) {
            check(tu_obj_check(win[w], winn[w]), "worker: object %p (%zu bytes) corrupted", win[w], winn[w]);
            free(win[w]);
        }
        uint64_t r = tu_rand(&rng);
        size_t n = r % 64 == 0 ? 4096 + (size_t)(r >> 8) % 300000 : 8 + (size_t)(r >> 8) % 1024;
        win[w] = malloc(n);
        winn[w] = n;
        if (win[w])
            tu_obj_fill(win[w], n);
        char *buf = malloc(256);
        if (buf) {
            int len = snprintf(buf, 256, "thread %lu op %ld size %zu %p %.3f", (unsigned long)(uintptr_t)arg,
                               ops, n, win[w], ops / 7.0);
            check(len > 0 && len < 256 && strncmp(buf, "thread ", 7) == 0, "snprintf result");
            if (ops % 64 == 0)
                fprintf(devnull, "%s\n", buf);
            free(buf);
        }
        ops++;
    }
    for (int w = 0; w < WIN; w++)
        free(win[w]);
    atomic_fetch_add(&worker_ops, ops);
    return NULL;
}

/* Runs in the child: a few hundred allocations of several sizes, verified. */
static int child_work(int iter)
{
    static const size_t sizes[] = { 1, 16, 24, 100, 256, 1000, 4096, 10000, 70000 };
    enum { NS = sizeof sizes / sizeof sizes[0], PER = 30 };
    void *p[NS * PER];
    int bad = 0;
    /* two large blocks (own mappings in most allocators) */
    void *l1 = malloc(300000), *l2 = calloc(1, 1 << 20);
    if (!l1 || !l2)
        return 2;
    tu_obj_fill(l1, 300000);
    for (size_t i = 0; i < (1 << 20); i += 4096)
        if (((unsigned char *)l2)[i])
            bad = 1;
    for (int k = 0; k < NS * PER; k++) {
        size_t n = sizes[k % NS];
        p[k] = malloc(n);
        if (!p[k])
            return 2;
        tu_obj_fill(p[k], n);
    }
    for (int k = 0; k < NS * PER; k++) {
        if (!tu_obj_check(p[k], sizes[k % NS]))
            bad = 1;
        if (k % 2)
            free(p[k]);
    }
    for (int k = 0; k < NS * PER; k += 2) {
        size_t n = sizes[k % NS];
        free(p[k]);
        unsigned char *c = calloc(n, 1);
        if (!c)
            return 2;
        for (size_t i = 0; i < n; i++)
            if (c[i])
                bad = 1;
        p[k] = c;
    }
    for (int k = 0; k < NS * PER; k += 2)
        free(p[k]);
    if (!tu_obj_check(l1, 300000))
        bad = 1;
    free(l1);
    free(l2);
    char *s = malloc(128);
    if (!s)
        return 2;
    snprintf(s, 128, "child %d pid %ld", iter, (long)getpid());
    fprintf(devnull, "%s\n", s);
    free(s);
    return bad ? 3 : 0;
}

static int nforks = 1000;

static void *forker(void *arg)
{
    (void)arg;
    int bad_children = 0;
    for (int i = 0; i < nforks; i++) {
        if (bad_children >= 3) {
            check(0, "stopping after %d failed children (of %d forks so far)", bad_children, i);
            break;
        }
        pid_t pid = fork();
        if (pid < 0) {
            check(0, "fork #%d failed: %s", i, strerror(errno));
            break;
        }
        if (pid == 0) {
            alarm(20); /* a deadlocked child dies with SIGALRM instead of hanging the test */
            exit(child_work(i));
        }
        int status = 0;
        pid_t w;
        do
            w = waitpid(pid, &status, 0);
        while (w < 0 && errno == EINTR);
        if (!check(w == pid, "waitpid(%ld) returned %ld: %s", (long)pid, (long)w, strerror(errno)))
            continue;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad_children++;
        if (WIFSIGNALED(status))
            check(0, "child #%d killed by signal %d (%s)%s", i, WTERMSIG(status), strsignal(WTERMSIG(status)),
                  WTERMSIG(status) == SIGALRM ? " - deadlock in the child after fork?" : "");
        else
            check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child #%d exited with status %d%s", i,
                  WEXITSTATUS(status),
                  WEXITSTATUS(status) == 3 ? " (corrupted data / non-zero calloc in child)" :
                  WEXITSTATUS(status) == 2 ? " (allocation failed in child)" : "");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        nforks = atoi(argv[1]);
    alarm(240);
    devnull = fopen("/dev/null", "w");
    if (!check(devnull != NULL, "fopen /dev/null"))
        return 1;
    fflush(stdout);
    pthread_t w[3], f;
    for (int i = 0; i < 3; i++)
        pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)i);
    pthread_create(&f, NULL, forker, NULL);
    pthread_join(f, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(w[i], NULL);
    fclose(devnull);
    printf("fork: %d forks, %ld allocation rounds in worker threads\n", nforks, atomic_load(&worker_ops));
    check(atomic_load(&worker_ops) > 0, "worker threads made no progress");
    return tu_finish("fork");
}
