/* background: with SLUBMALLOC_BACKGROUND=1 freed memory must go back while the program is
 * idle; without it, it stays until a later free.
 * The program allocates 48 MiB of 1000-byte objects and one 8 MiB block, writes them, frees
 * them all, then makes no allocator call and watches its RSS (/proc/self/statm).
 * Usage: background on|off|fork (run.sh sets SLUBMALLOC_BACKGROUND to match, and
 * SLUBMALLOC_PURGE_DELAY_MS=200).
 *   on:   within 3 s, RSS must fall by 3/4 of what the frees left resident. A thread named
 *         slubmalloc-bg must exist. Then it must go to sleep: over a second with nothing
 *         pending, its voluntary context switches may grow by 1 at most. Before that second:
 *         three purge delays (its last purges; a look that finds this thread quiet and pokes
 *         it), one malloc (the poked cache drains), three more (that drain's purge, then a
 *         delay with nothing due). Then a second round: its frees must wake the sleeping
 *         thread.
 *   off:  for 1 s RSS must not fall by a quarter of it, and no such thread may exist (so the
 *         figure "on" needs is not there by itself).
 *   fork: "on", in a child forked by a process that has the thread (started at load): the
 *         child starts its own at its first slow path.
 *   last: glibc ends the process when its last thread ends, and the background thread must
 *         not keep it alive (it blocks every signal, so only SIGKILL would end it). A child's
 *         main thread ends by pthread_exit, first alone, then before a worker that ends
 *         later. Each child must exit 0 within 10 s, its atexit handler run.
 * Without slubmalloc (SLUBMALLOC_EXPECT unset) it only reports. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define NOBJ 49152
#define OBJ 1000
#define LARGE (8u << 20)

static void *objs[NOBJ];

/* The task id of the thread named slubmalloc-bg, or 0. */
static long bg_tid(void)
{
    DIR *d = opendir("/proc/self/task");
    long tid = 0;
    struct dirent *e;
    while (d && !tid && (e = readdir(d))) {
        char path[96], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(name, sizeof name, f) && !strcmp(name, "slubmalloc-bg\n"))
            tid = atol(e->d_name);
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return tid;
}

static long rss_kb(void)
{
    return tu_rss_statm() / 1024;
}

/* voluntary_ctxt_switches of thread tid, or -1. */
static long switches(long tid)
{
    char path[96], line[128];
    long n = -1;
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        sscanf(line, "voluntary_ctxt_switches: %ld", &n);
    if (f)
        fclose(f);
    return n;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One round: allocate, write, free, then watch the RSS. */
static void round_of(int on, const char *label)
{
    int expect = getenv("SLUBMALLOC_EXPECT") != NULL;
    long base = rss_kb();
    for (size_t i = 0; i < NOBJ; i++) {
        objs[i] = malloc(OBJ);
        check(objs[i] != NULL, "malloc(%d) failed", OBJ);
        if (objs[i])
            memset(objs[i], 0x5a, OBJ);
    }
    char *big = malloc(LARGE);
    check(big != NULL, "malloc(%u) failed", LARGE);
    if (big)
        memset(big, 0x5a, LARGE);
    long peak = rss_kb();
    for (size_t i = 0; i < NOBJ; i++)
        free(objs[i]);
    free(big);
    long after = rss_kb(), pending = after - base, now = after;
    int waited = 0, limit = on ? 3000 : 1000;
    while (waited < limit && !(on && now <= base + pending / 4)) {
        nap_ms(50);
        waited += 50;
        now = rss_kb();
    }
    long tid = bg_tid();
    printf("background %s: RSS %ld kB at start, %ld at peak, %ld after the frees, %ld "
           "after %d ms idle; thread slubmalloc-bg: %s\n",
           label, base, peak, after, now, waited, tid ? "yes" : "no");
    if (!expect)
        return;
    check(pending >= 8192, "%s: the frees left only %ld kB resident: nothing to measure", label,
          pending);
    if (!on) {
        check(now > base + pending * 3 / 4, "%s: RSS fell from %ld to %ld kB without the thread",
              label, after, now);
        check(!tid, "%s: a thread slubmalloc-bg runs without SLUBMALLOC_BACKGROUND=1", label);
        return;
    }
    check(now <= base + pending / 4, "%s: RSS still %ld kB after %d ms idle (%ld at start, %ld "
          "after the frees)", label, now, waited, base, after);
    check(tid != 0, "%s: no thread slubmalloc-bg", label);
    if (tid) {
        const char *d = getenv("SLUBMALLOC_PURGE_DELAY_MS");
        long delay = d ? atol(d) : 1000;
        nap_ms(3 * delay); /* (see the top) */
        free(malloc(OBJ));
        nap_ms(3 * delay);
        long s0 = switches(tid);
        nap_ms(1000);
        long s1 = switches(tid);
        printf("background %s: the thread's voluntary switches over 1 s idle: %ld -> %ld\n",
               label, s0, s1);
        check(s0 >= 0 && s1 >= s0 && s1 - s0 <= 1,
              "%s: the thread woke %ld times in a second with nothing pending", label, s1 - s0);
    }
}

/* on: a second round finds the thread asleep with nothing pending, so its frees must wake it. */
static void scenario(int on, const char *label)
{
    round_of(on, label);
    if (on)
        round_of(on, label);
}

/* ---- last: the process ends with its last thread ---- */
static int marker_fd;

static void at_exit_marker(void)
{
    (void)!write(marker_fd, "x", 1);
}

static void *late_worker(void *arg)
{
    (void)arg;
    nap_ms(100); /* main has ended by then */
    free(malloc(200));
    return NULL;
}

/* A child whose main thread ends by pthread_exit (with_worker: before a worker does): exit
 * status 0 within 10 s, and its atexit handler wrote to the pipe. */
static void last_thread(int with_worker)
{
    int fds[2];
    if (!check(pipe(fds) == 0, "pipe"))
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        marker_fd = fds[1];
        atexit(at_exit_marker);
        free(malloc(100));
        pthread_t t;
        if (with_worker && pthread_create(&t, NULL, late_worker, NULL))
            _exit(3);
        pthread_exit(NULL);
    }
    close(fds[1]);
    int st = 0, waited = 0;
    pid_t got = 0;
    while (pid > 0 && (got = waitpid(pid, &st, WNOHANG)) == 0 && waited < 10000)
        nap_ms(10), waited += 10;
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    char c;
    int marked = read(fds[0], &c, 1) == 1;
    close(fds[0]);
    check(got == pid, "last (worker %d): the process still ran 10 s after its last thread ended",
          with_worker);
    check(got != pid || (WIFEXITED(st) && WEXITSTATUS(st) == 0),
          "last (worker %d): status %d, wanted exit 0", with_worker, st);
    check(got != pid || marked, "last (worker %d): its atexit handler did not run", with_worker);
    printf("last (worker %d): ended in %d ms\n", with_worker, waited);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "on";
    if (!strcmp(mode, "last")) {
        last_thread(0);
        last_thread(1);
        return tu_finish("background");
    }
    if (strcmp(mode, "fork")) {
        scenario(!strcmp(mode, "on"), mode);
        return tu_finish("background");
    }
    int waited = 0; /* (it names itself once it runs) */
    while (!bg_tid() && waited < 1000)
        nap_ms(10), waited += 10;
    check(!getenv("SLUBMALLOC_EXPECT") || bg_tid() != 0, "fork: the parent has no thread");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        scenario(1, "fork");
        fflush(NULL);
        _exit(tu_finish("background child"));
    }
    int st = 0;
    pid_t got = pid > 0 ? waitpid(pid, &st, 0) : -1;
    check(got == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork: the child failed (status %d)",
          st);
    return tu_finish("background");
}
