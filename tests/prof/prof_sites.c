/* prof_sites: call sites of known live bytes, for the heap profiler's test (prof.sh).
 * site_a holds 64 MiB in 1 KiB blocks, site_b 16 MiB in 100-byte blocks, site_c frees all it
 * allocates (as much as site_a). Built -O2 without frame pointers (meson.build).
 * Usage: prof_sites MODE, where MODE is
 *   main      the three sites, then return from main
 *   exit      the same, then exit() from a function
 *   threads   site_a and site_b on four threads (a quarter each), site_c on the main thread
 *   fork      site_a, then a child runs site_b and site_c and exits; the parent waits, frees
 *             nothing and returns: its profile has site_a only, the child's site_a and site_b
 *   realloc   site_r: 65536 blocks of 16 bytes grown by realloc to 1 KiB (64 MiB)
 *   memalign  site_m: 65536 blocks of 1 KiB from posix_memalign(64) (64 MiB)
 *   reuse     site_u: 65536 blocks of 1 KiB (64 MiB), each the block of a malloc(1024) freed
 *             just before: every block it keeps comes off the thread's free stack
 *   calloc    site_z: the same with calloc
 *   bulk      site_k: 64 MiB of 1 KiB blocks from malloc_bulk (found with dlsym), 16 at a time,
 *             each batch after a batch of 16 freed
 *   dump      site_a, then slub_prof_dump(argv[2]) (found with dlsym), then site_b
 * Each site keeps its blocks in a static array, so they are live at exit. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NA 65536  /* 64 MiB in 1 KiB blocks */
#define NB 167772 /* 16 MiB in 100-byte blocks */

static void *a[NA], *b[NB], *r[NA], *m[NA], *u[NA], *z[NA], *k[NA];

static void die(const char *what)
{
    perror(what);
    exit(2);
}

__attribute__((noinline)) void site_a(size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (!(a[i] = malloc(1024)))
            die("malloc");
        else
            memset(a[i], 1, 64);
}

__attribute__((noinline)) void site_b(size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (!(b[i] = malloc(100)))
            die("malloc");
        else
            memset(b[i], 2, 64);
}

__attribute__((noinline)) void site_u(void)
{
    for (size_t i = 0; i < NA; i++) {
        char *t = malloc(1024);
        if (!t)
            die("malloc");
        memset(t, 4, 64);
        free(t);
        if (!(u[i] = malloc(1024)))
            die("malloc");
        memset(u[i], 5, 64);
    }
}

__attribute__((noinline)) void site_z(void)
{
    for (size_t i = 0; i < NA; i++) {
        char *t = calloc(1, 1024);
        if (!t)
            die("calloc");
        free(t);
        if (!(z[i] = calloc(1, 1024)))
            die("calloc");
    }
}

__attribute__((noinline)) void site_k(void)
{
    size_t (*bulk)(size_t, size_t, void **) =
        (size_t (*)(size_t, size_t, void **))dlsym(RTLD_DEFAULT, "malloc_bulk");
    void *t[16];
    if (!bulk)
        die("malloc_bulk");
    for (size_t i = 0; i < NA; i += 16) {
        if (bulk(1024, 16, t) != 16)
            die("malloc_bulk");
        for (int j = 0; j < 16; j++)
            free(t[j]);
        if (bulk(1024, 16, k + i) != 16)
            die("malloc_bulk");
    }
}

__attribute__((noinline)) void site_c(void)
{
    for (size_t i = 0; i < NA; i++) {
        char *p = malloc(1024);
        if (!p)
            die("malloc");
        memset(p, 3, 64);
        free(p);
    }
}

__attribute__((noinline)) void site_r(void)
{
    for (size_t i = 0; i < NA; i++) {
        char *p = malloc(16);
        if (!p || !(r[i] = realloc(p, 1024)))
            die("realloc");
        memset(r[i], 4, 64);
    }
}

__attribute__((noinline)) void site_m(void)
{
    for (size_t i = 0; i < NA; i++) {
        if (posix_memalign(&m[i], 64, 1024))
            die("posix_memalign");
        memset(m[i], 5, 64);
    }
}

static void *quarter(void *arg)
{
    size_t k = (size_t)arg;
    site_a(k * NA / 4, (k + 1) * NA / 4);
    site_b(k * NB / 4, (k + 1) * NB / 4);
    return NULL;
}

__attribute__((noinline)) static void leave(void)
{
    exit(0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "main";
    if (!strcmp(mode, "main") || !strcmp(mode, "exit")) {
        site_a(0, NA);
        site_b(0, NB);
        site_c();
        if (!strcmp(mode, "exit"))
            leave();
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[4];
        for (size_t k = 0; k < 4; k++)
            if (pthread_create(&t[k], NULL, quarter, (void *)k))
                die("pthread_create");
        site_c();
        for (int k = 0; k < 4; k++)
            pthread_join(t[k], NULL);
    } else if (!strcmp(mode, "fork")) {
        site_a(0, NA);
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            site_b(0, NB);
            site_c();
            exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            die("child");
        printf("child %d\n", (int)pid);
    } else if (!strcmp(mode, "realloc")) {
        site_r();
    } else if (!strcmp(mode, "reuse")) {
        site_u();
    } else if (!strcmp(mode, "calloc")) {
        site_z();
    } else if (!strcmp(mode, "bulk")) {
        site_k();
    } else if (!strcmp(mode, "memalign")) {
        site_m();
    } else if (!strcmp(mode, "dump") && argc > 2) {
        int (*dump)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "slub_prof_dump");
        site_a(0, NA);
        if (!dump || dump(argv[2]))
            die("slub_prof_dump");
        site_b(0, NB);
    } else {
        fprintf(stderr, "prof_sites: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
