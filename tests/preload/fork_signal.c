/* fork_signal: fork() from a signal handler in a single-threaded process, whatever the
 * interrupted code was doing: inside malloc, free, realloc, or fork itself (after glibc's
 * tst-mallocfork2). Helper processes send SIGUSR1 to the test as fast as they can; its handler
 * forks a child that exits at once and reaps it; the main loop meanwhile forks, mallocs,
 * reallocs and frees. An allocator whose fork handler takes its locks in a single-threaded
 * process spins forever when the signal lands while they are held. A watchdog turns that
 * into a failure. Usage: fork_signal [seconds (4)] */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { NSENDERS = 2, NOBJ = 512 };

static volatile sig_atomic_t handled, handler_error;

static void on_usr1(int sig)
{
    (void)sig;
    int saved = errno;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    if (pid < 0 || waitpid(pid, NULL, 0) != pid)
        handler_error = 1;
    handled++;
    errno = saved;
}

static void sender(pid_t target)
{
    for (;;) {
        if (kill(target, SIGUSR1) != 0)
            _exit(0); /* the test is gone */
        for (volatile int i = 0; i < 2000; i++)
            ;
    }
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 4;
    fu_expect_slub("fork_signal");
    fu_watchdog("fork_signal", 120);
    void *obj[NOBJ] = {0};
    for (int i = 0; i < NOBJ; i++) /* the engine set up before the signals start */
        obj[i] = malloc(16);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pid_t senders[NSENDERS];
    for (int i = 0; i < NSENDERS; i++) {
        senders[i] = fork();
        if (senders[i] == 0)
            sender(getppid());
    }

    uint64_t rng = 12345;
    long forks = 0;
    long iterations = 0;
    for (double end = fu_now() + seconds; fu_now() < end; iterations++) {
        uint64_t r = tu_rand(&rng);
        unsigned k = (unsigned)(r % NOBJ);
        switch (r >> 60) {
        case 0: { /* a fork of our own, interrupted as often as the rest */
            pid_t pid = fork();
            if (pid == 0)
                _exit(0);
            int st;
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            check(pid > 0 && WIFEXITED(st), "fork in the main loop");
            forks++;
            break;
        }
        case 1:
        case 2: {
            void *q = realloc(obj[k], (size_t)(r >> 8) % 300000 + 1);
            if (check(q != NULL, "realloc"))
                obj[k] = q;
            break;
        }
        default:
            free(obj[k]);
            obj[k] = malloc((size_t)(r >> 8) % ((r & 1) ? 200000 : 1024) + 1);
            check(obj[k] != NULL, "malloc");
        }
    }
    for (int i = 0; i < NSENDERS; i++) {
        kill(senders[i], SIGKILL);
        waitpid(senders[i], NULL, 0);
    }
    signal(SIGUSR1, SIG_IGN);
    for (int i = 0; i < NOBJ; i++)
        free(obj[i]);
    printf("fork_signal: %ld iterations, %ld forks in the loop, %d in the handler\n", iterations,
           forks, (int)handled);
    check(!handler_error, "fork or waitpid failed in the handler");
    check(handled >= 100, "only %d signals handled", (int)handled);
    return tu_finish("fork_signal");
}
