/* signal: SIGSEGV and SIGBUS keep their meaning under slubmalloc. Its handler owns only a
 * fault the kernel raised in one of its no-access areas; every other such signal must reach
 * the program as if the handler were not there.
 * Usage: signal preload (run under LD_PRELOAD, or plainly: the same outcomes but the
 * guard case) | signal dlopen (no LD_PRELOAD: the program sets its handlers, then loads
 * SLUBMALLOC_LIB with dlopen, so the library's handler is installed after them and must
 * chain to them). Each case runs in a child, after a malloc and a free; the parent judges the
 * child by its wait status and its stderr. Before 2026-12-03 a raise(SIGSEGV) was swallowed:
 * the child printed on and exited 0. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

enum sender { RAISE, KILL, QUEUE, NSENDERS };
static const char *const sender_name[NSENDERS] = {"raise", "kill", "sigqueue"};
static const int sigs[2] = {SIGSEGV, SIGBUS};
enum { VALUE = 4242 };

static void send_sig(int sig, enum sender how)
{
    switch (how) {
    case RAISE:
        raise(sig);
        break;
    case KILL:
        kill(getpid(), sig);
        break;
    default:
        sigqueue(getpid(), sig, (union sigval){.sival_int = VALUE});
        break;
    }
}

/* What the program's own handler saw, written in the handler. */
static volatile sig_atomic_t seen_sig, seen_code, seen_pid, seen_value, seen_calls, seen_ctx;
static void *volatile seen_addr;
static sigjmp_buf back;
static volatile sig_atomic_t jump_back;

static void record(int sig, siginfo_t *si, void *ctx)
{
    seen_calls++;
    seen_sig = sig;
    seen_code = si->si_code;
    seen_ctx = ctx != NULL;
    if (si->si_code <= 0) {
        seen_pid = si->si_pid;
        seen_value = si->si_code == SI_QUEUE ? si->si_value.sival_int : 0;
    } else {
        seen_addr = si->si_addr;
    }
    if (jump_back)
        siglongjmp(back, 1);
}

static void set_handler(int sig, void (*fn)(int, siginfo_t *, void *), int flags,
                        struct sigaction *old)
{
    struct sigaction sa = {.sa_sigaction = fn, .sa_flags = SA_SIGINFO | flags};
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, old);
}

static void set_plain(int sig, void (*fn)(int))
{
    struct sigaction sa = {.sa_handler = fn};
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* The handler must have been called once with what the sender put in. */
static int check_seen(int sig, enum sender how)
{
    static const int codes[NSENDERS] = {SI_TKILL, SI_USER, SI_QUEUE};
    int ok = seen_calls == 1 && seen_sig == sig && seen_code == codes[how] && seen_ctx &&
             seen_pid == getpid() && (how != QUEUE || seen_value == VALUE);
    if (!ok)
        fprintf(stderr, "handler saw calls %d sig %d code %d pid %d value %d ctx %d\n",
                (int)seen_calls, (int)seen_sig, (int)seen_code, (int)seen_pid,
                (int)seen_value, (int)seen_ctx);
    seen_calls = 0;
    return ok;
}

/* A handler set after the library's that passes the signal on as CPython's faulthandler does:
 * it puts the handler it found back and sends the signal again. */
static struct sigaction found[2];
static void reraise(int sig, siginfo_t *si, void *ctx)
{
    (void)si, (void)ctx;
    sigaction(sig, &found[sig == SIGBUS], NULL);
    raise(sig);
}

/* One that calls the handler it found, with its own arguments. */
static void call_found(int sig, siginfo_t *si, void *ctx)
{
    const struct sigaction *f = &found[sig == SIGBUS];
    if (f->sa_flags & SA_SIGINFO) {
        f->sa_sigaction(sig, si, ctx);
    } else { /* the default action, as a program without the library does it */
        sigaction(sig, f, NULL);
        raise(sig);
    }
}

/* A real fault outside the library's areas: a page of no access, or a file page past the end
 * of its file (SIGBUS). */
static volatile char *fault_page(int sig)
{
    if (sig == SIGSEGV)
        return mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FILE *f = tmpfile();
    int fd = fileno(f);
    if (ftruncate(fd, 4096) != 0)
        return MAP_FAILED;
    volatile char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (ftruncate(fd, 0) != 0)
        return MAP_FAILED;
    return p;
}

/* ---------- the cases: each runs in a child ---------- */

struct want {
    int sig;       /* the child dies by it; 0: it exits 0 */
    const char *msg; /* stderr must hold it; NULL: stderr holds no "slubmalloc:" */
};

static int ccase_sig, ccase_how;

static void dies_by_default(void)
{
    send_sig(ccase_sig, ccase_how);
}

static void program_handler_after(void)
{
    set_handler(ccase_sig, record, 0, NULL);
    send_sig(ccase_sig, ccase_how);
    if (!check_seen(ccase_sig, ccase_how))
        exit(1);
}

static void chain_by_raise(void)
{
    set_handler(ccase_sig, reraise, 0, &found[ccase_sig == SIGBUS]);
    send_sig(ccase_sig, ccase_how);
}

static void chain_by_call(void)
{
    set_handler(ccase_sig, call_found, 0, &found[ccase_sig == SIGBUS]);
    send_sig(ccase_sig, ccase_how);
}

static void ignored(void)
{
    set_plain(ccase_sig, SIG_IGN);
    send_sig(ccase_sig, ccase_how);
}

static void real_fault(void)
{
    volatile char *p = fault_page(ccase_sig);
    if (p == MAP_FAILED)
        exit(2);
    (void)p[0];
}

static volatile size_t zero; /* malloc(zero): the compiler may not see the size */

/* A zero-size block has no access under SLUBMALLOC_DEBUG's Z only (signal_debug); by default
 * malloc(0) has usable bytes. */
static void guard_fault(void)
{
    volatile char *z = malloc(zero);
    (void)z[0];
}

/* The byte just past a new large block: the guard page after it. */
static void guard_fault_large(void)
{
    size_t n = 1u << 20;
    char *volatile p = malloc(n);
    (void)((volatile char *)p)[n];
}

/* dlopen mode: the program's handler comes first; the library's, installed at its load, must
 * chain to it with the same arguments. */
static void *lib;
static void load_library(void)
{
    const char *path = getenv("SLUBMALLOC_LIB");
    if (!path || !(lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "dlopen %s: %s\n", path ? path : "(SLUBMALLOC_LIB unset)", dlerror());
        exit(2);
    }
}

static void handler_before(void)
{
    struct sigaction mine, now;
    set_handler(ccase_sig, record, 0, NULL);
    sigaction(ccase_sig, NULL, &mine);
    load_library();
    sigaction(ccase_sig, NULL, &now);
    if (now.sa_sigaction == mine.sa_sigaction) {
        fprintf(stderr, "the library installed no handler over the program's\n");
        exit(1);
    }
    send_sig(ccase_sig, ccase_how);
    if (!check_seen(ccase_sig, ccase_how))
        exit(1);
    /* a real fault goes on to the program's handler with its address */
    volatile char *volatile p = fault_page(ccase_sig);
    jump_back = 1;
    if (sigsetjmp(back, 1) == 0)
        (void)p[0];
    if (seen_calls != 1 || seen_code <= 0 || seen_addr != (void *)p) {
        fprintf(stderr, "fault: handler saw calls %d code %d addr %p (page %p)\n",
                (int)seen_calls, (int)seen_code, seen_addr, (void *)p);
        exit(1);
    }
}

/* SA_RESETHAND before the library: the first signal reaches the handler, the second kills. */
static void resethand_before(void)
{
    set_handler(ccase_sig, record, SA_RESETHAND, NULL);
    load_library();
    send_sig(ccase_sig, ccase_how);
    if (!check_seen(ccase_sig, ccase_how))
        exit(1);
    send_sig(ccase_sig, ccase_how);
}

static void ignored_before(void)
{
    set_plain(ccase_sig, SIG_IGN);
    load_library();
    send_sig(ccase_sig, ccase_how);
}

static void default_before(void)
{
    load_library();
    send_sig(ccase_sig, ccase_how);
}

/* The byte just past a large block of the library loaded with dlopen: its guard page. */
static void guard_fault_dlopen(void)
{
    load_library();
    void *(*lib_malloc)(size_t) = (void *(*)(size_t))dlsym(lib, "malloc");
    size_t n = 1u << 20;
    char *volatile p = lib_malloc(n);
    (void)((volatile char *)p)[n];
}

/* Runs fn in a child; judges its end and its stderr. */
static void run_case(const char *name, void (*fn)(void), struct want w)
{
    int fds[2];
    if (pipe(fds) != 0) {
        check(0, "pipe");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        free(malloc(24));
        fn();
        _exit(0);
    }
    close(fds[1]);
    char err[4096];
    size_t n = 0;
    ssize_t r;
    while ((r = read(fds[0], err + n, sizeof err - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    int ok = w.sig ? WIFSIGNALED(st) && WTERMSIG(st) == w.sig
                   : WIFEXITED(st) && WEXITSTATUS(st) == 0;
    ok = ok && (w.msg ? strstr(err, w.msg) != NULL : strstr(err, "slubmalloc:") == NULL);
    char end[64];
    if (WIFSIGNALED(st))
        snprintf(end, sizeof end, "killed by %s", strsignal(WTERMSIG(st)));
    else
        snprintf(end, sizeof end, "exit %d", WEXITSTATUS(st));
    check(ok, "%s %s: %s, wanted %s%s%s; stderr: %s", name, strsignal(ccase_sig), end,
          w.sig ? strsignal(w.sig) : "exit 0", w.msg ? " with " : "", w.msg ? w.msg : "", err);
    if (ok)
        printf("ok   %-22s %-20s %s\n", name, strsignal(ccase_sig), end);
}

static void each_sender(const char *what, void (*fn)(void), int dies)
{
    for (int s = 0; s < 2; s++)
        for (int h = 0; h < NSENDERS; h++) {
            char name[64];
            snprintf(name, sizeof name, "%s/%s", what, sender_name[h]);
            ccase_sig = sigs[s];
            ccase_how = h;
            run_case(name, fn, (struct want){dies ? sigs[s] : 0, NULL});
        }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "preload";
    int under_lib = getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "slubmalloc");
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(mode, "dlopen") == 0) {
        each_sender("default_before", default_before, 1);
        each_sender("handler_before", handler_before, 0);
        each_sender("resethand_before", resethand_before, 1);
        each_sender("ignored_before", ignored_before, 0);
        ccase_sig = SIGSEGV;
        run_case("guard_fault_dlopen", guard_fault_dlopen,
                 (struct want){SIGABRT, "slubmalloc: out-of-bounds access"});
    } else if (strcmp(mode, "preload") == 0) {
        each_sender("default", dies_by_default, 1);
        each_sender("handler_after", program_handler_after, 0);
        each_sender("chain_by_raise", chain_by_raise, 1);
        each_sender("chain_by_call", chain_by_call, 1);
        each_sender("ignored", ignored, 0);
        for (int s = 0; s < 2; s++) {
            ccase_sig = sigs[s];
            run_case("real_fault", real_fault, (struct want){sigs[s], NULL});
        }
        ccase_sig = SIGSEGV;
        if (under_lib && getenv("SLUBMALLOC_DEBUG"))
            run_case("guard_fault", guard_fault,
                     (struct want){SIGABRT, "slubmalloc: access to a zero-size block"});
        if (under_lib) {
            run_case("guard_fault_large", guard_fault_large,
                     (struct want){SIGABRT, "slubmalloc: out-of-bounds access"});
        } else {
            printf("skip guard_fault, guard_fault_large (no slubmalloc in LD_PRELOAD)\n");
        }
    } else {
        fprintf(stderr, "usage: signal preload|dlopen\n");
        return 2;
    }
    return tu_finish("signal");
}
