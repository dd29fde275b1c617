/* dlopen_api: libslubmalloc.so loaded with dlopen, after the program started, by a plugin
 * linked with -lslubmalloc (libdlopen_plugin.so, next to this program). Run without LD_PRELOAD.
 * Checks: dlopen succeeds (the library's initial-exec TLS fits in glibc's spare static TLS);
 * the plugin's API calls work on the main thread and on a thread that existed before the
 * dlopen; the program's malloc stays glibc's; and free_bulk of a block from glibc's malloc is
 * reported (slubmalloc: invalid free, then abort) in a child, not followed. */
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static int (*run)(void);
static void (*free_bulk_fn)(size_t, void **);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int loaded, thread_result = -1;

/* A thread that exists before the dlopen, then calls into the plugin. */
static void *early(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!loaded)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    thread_result = run();
    return NULL;
}

int main(void)
{
    pthread_t t;
    check(pthread_create(&t, NULL, early, NULL) == 0, "pthread_create");
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
    if (n <= 0)
        return 2;
    exe[n] = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/libdlopen_plugin.so", dirname(exe));
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    run = (int (*)(void))dlsym(h, "plugin_run");
    free_bulk_fn = (void (*)(size_t, void **))dlsym(h, "plugin_free_bulk");
    check(run && free_bulk_fn, "the plugin's functions");
    if (!run || !free_bulk_fn)
        return tu_finish("dlopen_api");
    pthread_mutex_lock(&mu);
    loaded = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    int r = run();
    check(r == 0, "the plugin's API on the main thread: %d checks failed", r);
    pthread_join(t, NULL);
    check(thread_result == 0, "the plugin's API on a thread older than the dlopen: %d", thread_result);

    Dl_info info;
    check(dladdr((void *)malloc, &info) && info.dli_fname && strstr(info.dli_fname, "libc.so"),
          "the program's malloc is glibc's (%s)", info.dli_fname ? info.dli_fname : "?");

    /* a glibc block passed to free_bulk: reported, and the process aborts */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        void *p[2] = {malloc(48), malloc(48)};
        free_bulk_fn(2, p);
        _exit(0); /* not reached when reported */
    }
    int st;
    waitpid(pid, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
          "free_bulk of glibc blocks: the child ended with status %d, not SIGABRT", st);
    printf("dlopen_api: loaded %s with dlopen; API on 2 threads; glibc blocks to free_bulk: %s\n",
           path, WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT ? "reported" : "not reported");
    return tu_finish("dlopen_api");
}
