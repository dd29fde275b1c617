/* fork_stdio: fork() while other threads use stdio that allocates (after glibc's bug 19431).
 * Readers hold their FILE's lock while getline grows its buffer (through the size classes and
 * into large blocks: every realloc may need an allocator lock); a flusher holds stdio's list
 * lock in fflush(NULL) while it waits for each FILE's lock; openers fopen and fclose (the list
 * lock again); forkers fork, and each child uses malloc and stdio, then exits 0. An allocator
 * whose fork handler takes its own locks before the stdio list lock deadlocks here. A watchdog
 * turns a hang into a failure; each child has its own.
 * Usage: fork_stdio [seconds (4)] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { NREADERS = 4, NOPENERS = 2, NFORKERS = 2, LINE = 300000, MIN_FORKS = 10 };

static atomic_int stop;
static atomic_long nforks, nlines, nopens, nflushes;
static char path[64];

static void *reader(void *arg)
{
    (void)arg;
    FILE *f = fopen(path, "r");
    if (!check(f != NULL, "fopen %s", path))
        return NULL;
    while (!atomic_load(&stop)) {
        rewind(f);
        char *line = NULL;
        size_t cap = 0;
        ssize_t n = getline(&line, &cap, f);
        check(n == LINE + 1 && line[LINE / 2] == 'x', "getline returned %zd", n);
        free(line);
        atomic_fetch_add(&nlines, 1);
    }
    fclose(f);
    return NULL;
}

static void *opener(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        FILE *f = fopen("/dev/null", "w");
        if (!check(f != NULL, "fopen /dev/null"))
            break;
        setvbuf(f, NULL, _IOFBF, 1 << 16); /* a buffer malloc'd by stdio */
        fprintf(f, "%d %s\n", 42, "words");
        fclose(f);
        atomic_fetch_add(&nopens, 1);
    }
    return NULL;
}

static void *flusher(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        check(fflush(NULL) == 0, "fflush(NULL)");
        atomic_fetch_add(&nflushes, 1);
    }
    return NULL;
}

static void child(void)
{
    alarm(10); /* the handler is inherited: a hang here ends with status 3 */
    for (int i = 0; i < 200; i++) {
        size_t n = (size_t)(16 + i * 997 % 200000);
        char *p = malloc(n);
        if (!p)
            _exit(4);
        memset(p, i, n);
        free(p);
    }
    FILE *f = fopen("/dev/null", "w");
    if (!f)
        _exit(5);
    fprintf(f, "child %d\n", (int)getpid());
    fclose(f);
    _exit(0);
}

static void *forker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        pid_t pid = fork();
        if (!check(pid >= 0, "fork"))
            break;
        if (pid == 0)
            child();
        int st;
        check(waitpid(pid, &st, 0) == pid, "waitpid");
        check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
        atomic_fetch_add(&nforks, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 4;
    fu_expect_slub("fork_stdio");
    fu_watchdog("fork_stdio", (unsigned)seconds + 90);
    strcpy(path, "/tmp/fork_stdio.XXXXXX");
    int fd = mkstemp(path);
    if (!check(fd >= 0, "mkstemp"))
        return tu_finish("fork_stdio");
    FILE *w = fdopen(fd, "w");
    for (int i = 0; i < LINE; i++)
        fputc('x', w);
    fputc('\n', w);
    fclose(w);

    pthread_t t[NREADERS + NOPENERS + NFORKERS + 1];
    int k = 0;
    for (int i = 0; i < NREADERS; i++)
        pthread_create(&t[k++], NULL, reader, NULL);
    for (int i = 0; i < NOPENERS; i++)
        pthread_create(&t[k++], NULL, opener, NULL);
    pthread_create(&t[k++], NULL, flusher, NULL);
    for (int i = 0; i < NFORKERS; i++)
        pthread_create(&t[k++], NULL, forker, NULL);
    /* the run, then until MIN_FORKS forks (fork waits for the list lock, which fflush(NULL)
     * holds most of the time: a few forks a second on 2 cores, under glibc's malloc too) */
    double end = fu_now() + seconds;
    while (fu_now() < end || (atomic_load(&nforks) < MIN_FORKS && fu_now() < end + 40))
        usleep(10000);
    atomic_store(&stop, 1);
    for (int i = 0; i < k; i++)
        pthread_join(t[i], NULL);
    unlink(path);
    printf("fork_stdio: %ld forks, %ld getlines, %ld fopen/fclose, %ld fflush(NULL)\n",
           atomic_load(&nforks), atomic_load(&nlines), atomic_load(&nopens),
           atomic_load(&nflushes));
    check(atomic_load(&nforks) >= MIN_FORKS, "only %ld forks", atomic_load(&nforks));
    return tu_finish("fork_stdio");
}
