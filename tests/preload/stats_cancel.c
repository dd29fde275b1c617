/* stats_cancel: malloc_stats, malloc_info and slub_stats_print are no cancellation points
 * (glibc promises it of its own; see its tst-malloc-stats-cancellation). A thread with a
 * cancel request already pending calls all three, writing into a pipe that another thread
 * drains; it must be cancelled only at the pthread_testcancel after them, so the pipe holds
 * every report whole and nothing written after. Then other threads call them again: a lock
 * left held by the cancelled thread would hang them (the watchdog fails the test).
 * slub_stats_print is looked up with dlsym (absent under another allocator). */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

static pthread_barrier_t gate;
static int pipe_w;
static FILE *pipe_fp;
static void (*stats_print)(int fd);

static void *reports(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&gate); /* not a cancellation point; the request is pending now */
    malloc_stats();
    malloc_info(0, pipe_fp);
    if (stats_print)
        stats_print(pipe_w);
    pthread_testcancel(); /* the first cancellation point */
    static const char late[] = "WRITTEN AFTER CANCEL\n";
    ssize_t r = write(pipe_w, late, sizeof late - 1);
    (void)r;
    return NULL;
}

struct sink {
    int fd;
    char *buf;
    size_t len, cap;
};

static void *drain(void *arg)
{
    struct sink *s = arg;
    char block[4096];
    ssize_t n;
    while ((n = read(s->fd, block, sizeof block)) > 0) {
        if (s->len + (size_t)n + 1 > s->cap) {
            s->cap = (s->len + (size_t)n + 1) * 2;
            s->buf = realloc(s->buf, s->cap);
        }
        memcpy(s->buf + s->len, block, (size_t)n);
        s->len += (size_t)n;
        s->buf[s->len] = 0;
    }
    return NULL;
}

static void *again(void *arg)
{
    (void)arg;
    malloc_stats();
    malloc_info(0, pipe_fp);
    if (stats_print)
        stats_print(pipe_w);
    return NULL;
}

int main(void)
{
    fu_expect_slub("stats_cancel");
    fu_watchdog("stats_cancel", 60);
    stats_print = (void (*)(int))dlsym(RTLD_DEFAULT, "slub_stats_print");
    int real_stderr = dup(2), p[2];
    if (!check(real_stderr >= 0 && pipe(p) == 0, "dup/pipe"))
        return tu_finish("stats_cancel");
    FILE *err = fdopen(real_stderr, "w");
    setvbuf(err, NULL, _IONBF, 0);
    dup2(p[1], 2); /* malloc_stats writes to fd 2 */
    pipe_w = p[1];
    pipe_fp = fdopen(dup(p[1]), "w");
    setvbuf(pipe_fp, NULL, _IONBF, 0); /* malloc_info's writes reach the pipe at once */

    struct sink s = {.fd = p[0]};
    pthread_t reader, t, u;
    pthread_create(&reader, NULL, drain, &s);
    pthread_barrier_init(&gate, NULL, 2);
    pthread_create(&t, NULL, reports, NULL);
    pthread_cancel(t);
    pthread_barrier_wait(&gate);
    void *ret;
    pthread_join(t, &ret);
    pthread_create(&u, NULL, again, NULL); /* no lock may be left held */
    pthread_join(u, NULL);
    again(NULL);

    fclose(pipe_fp);
    close(p[1]);
    dup2(real_stderr, 2);
    pthread_join(reader, NULL);
    const char *out = s.buf ? s.buf : "";
    int ok = 1;
    ok &= check(ret == PTHREAD_CANCELED, "the thread was not cancelled");
    ok &= check(strstr(out, "max mmap bytes") != NULL, "malloc_stats' report cut short");
    ok &= check(strstr(out, "</malloc>") != NULL, "malloc_info's report cut short");
    if (stats_print)
        ok &= check(strstr(out, "large_allocations") != NULL, "slub_stats_print's report cut short");
    ok &= check(strstr(out, "WRITTEN AFTER CANCEL") == NULL, "the thread ran past its cancellation point");
    if (!ok)
        fprintf(err, "--- what the pipe got ---\n%s\n", out);
    free(s.buf);
    return tu_finish("stats_cancel");
}
