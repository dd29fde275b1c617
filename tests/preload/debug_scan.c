/* debug_scan: under SLUBMALLOC_DEBUG, red zones and poison are checked also when no later
 * malloc or free reaches the block: by malloc_trim, by the background thread, at exit.
 * Usage: debug_scan trim|background|exit (the first needs SLUBMALLOC_DEBUG=1, the second
 * SLUBMALLOC_BACKGROUND=1 too). A child writes one byte before a block (trim, exit) or into a
 * freed one (background), then waits for the check; the parent wants it killed by SIGABRT
 * with "found <when>" on stderr. Before 2026-12-03 such a bug was reported only at the block's
 * own free, or its slot's reuse. */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *want = !strcmp(mode, "trim") ? "found by malloc_trim"
                       : !strcmp(mode, "background") ? "found by the background thread"
                       : !strcmp(mode, "exit") ? "found at exit" : NULL;
    if (!want) {
        fprintf(stderr, "usage: debug_scan trim|background|exit\n");
        return 2;
    }
    int fds[2];
    if (pipe(fds) != 0)
        return 2;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        void *volatile block = malloc(40); /* volatile: gcc may not see its bounds */
        volatile unsigned char *p = block;
        if (!strcmp(mode, "background")) {
            free((void *)p);
            p[3] = 1; /* a write after free */
            sleep(5); /* the background thread looks once a purge delay */
        } else {
            p[-1] = 1; /* an underflow */
            if (!strcmp(mode, "trim"))
                malloc_trim(0);
            else
                return 0;
        }
        fprintf(stderr, "survived\n");
        _exit(0);
    }
    close(fds[1]);
    char err[8192];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof err - 1 && (r = read(fds[0], err + n, sizeof err - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = 0;
    int st;
    waitpid(pid, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: the child was not aborted (status %#x)",
          mode, st);
    check(strstr(err, want) != NULL, "%s: no \"%s\" on stderr", mode, want);
    printf("%s", err);
    return tu_finish("debug_scan");
}
