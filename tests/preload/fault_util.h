/* fault_util.h: helpers shared by the fault and load tests (oom, fork_load, thread_churn,
 * xstress_long), on top of test_util.h: the check that the library under test really is the one
 * preloaded (SLUBMALLOC_EXPECT=1: malloc must resolve into an object whose file name contains
 * "slubmalloc"), a watchdog (alarm() whose handler prints a message and exits with status 3, so
 * a deadlock becomes a failure and never a hang), a monotonic clock and a fast word-wise
 * pattern (fu_fill/fu_verify) whose bytes depend only on (seed, offset), so a prefix kept by
 * realloc still verifies after the block moved. Header-only, every function static. */
#ifndef SLUB_FAULT_UTIL_H
#define SLUB_FAULT_UTIL_H

#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

/* 1 when SLUBMALLOC_EXPECT=1. Then malloc and free must come from libslubmalloc (a failed check
 * otherwise); the object malloc resolves to is printed either way. */
static inline int fu_expect_slub(const char *name)
{
    const char *e = getenv("SLUBMALLOC_EXPECT");
    int expect = e && strcmp(e, "1") == 0;
    static const char *const syms[] = { "malloc", "free" };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *sym = dlsym(RTLD_DEFAULT, syms[i]);
        Dl_info info;
        const char *obj = "(absent)";
        if (sym && dladdr(sym, &info) && info.dli_fname)
            obj = info.dli_fname;
        if (i == 0)
            printf("%s: malloc resolves to %s%s\n", name, obj, expect ? " (SLUBMALLOC_EXPECT=1)" : "");
        if (expect)
            check(strstr(obj, "slubmalloc") != NULL, "SLUBMALLOC_EXPECT=1 but %s resolves to %s", syms[i], obj);
    }
    fflush(stdout);
    return expect;
}

static const char *fu_watchdog_name = "test";

static void fu_watchdog_fired(int sig)
{
    (void)sig;
    /* async-signal-safe only: write and _exit */
    static const char msg[] = ": WATCHDOG: time limit reached (deadlock or livelock?)\n";
    ssize_t r = write(2, "FAIL: ", 6);
    r = write(2, fu_watchdog_name, strlen(fu_watchdog_name));
    r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

/* Arms alarm(seconds); when it fires the process prints a FAIL line and exits with status 3.
 * A child of fork() does not inherit the pending alarm (but does inherit the handler). */
static inline void fu_watchdog(const char *name, unsigned seconds)
{
    fu_watchdog_name = name;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fu_watchdog_fired;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(seconds);
}

static inline double fu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Word i of the pattern of seed s: distinct per word and per seed. */
static inline uint64_t fu_word(uint64_t s, size_t i)
{
    uint64_t x = s + (uint64_t)i * 0x9E3779B97F4A7C15ULL;
    x ^= x >> 29;
    return x * 0xBF58476D1CE4E5B9ULL;
}

/* Fills bytes [from, to) of p with the pattern of seed s. from and to may be any offsets; the
 * byte at offset k is always byte k % 8 of fu_word(s, k / 8). */
static inline void fu_fill(void *p, size_t from, size_t to, uint64_t s)
{
    unsigned char *c = p;
    size_t k = from;
    for (; k < to && (k & 7); k++)
        c[k] = (unsigned char)(fu_word(s, k / 8) >> (k % 8 * 8));
    for (; k + 8 <= to; k += 8) {
        uint64_t w = fu_word(s, k / 8);
        memcpy(c + k, &w, 8);
    }
    for (; k < to; k++)
        c[k] = (unsigned char)(fu_word(s, k / 8) >> (k % 8 * 8));
}

/* Offset of the first byte in [from, to) that differs from the pattern of seed s, or
 * (size_t)-1 when they all match. */
static inline size_t fu_verify(const void *p, size_t from, size_t to, uint64_t s)
{
    const unsigned char *c = p;
    size_t k = from;
    for (; k < to && (k & 7); k++)
        if (c[k] != (unsigned char)(fu_word(s, k / 8) >> (k % 8 * 8)))
            return k;
    for (; k + 8 <= to; k += 8) {
        uint64_t w;
        memcpy(&w, c + k, 8);
        if (w != fu_word(s, k / 8))
            for (size_t j = k;; j++)
                if (c[j] != (unsigned char)(fu_word(s, j / 8) >> (j % 8 * 8)))
                    return j;
    }
    for (; k < to; k++)
        if (c[k] != (unsigned char)(fu_word(s, k / 8) >> (k % 8 * 8)))
            return k;
    return (size_t)-1;
}

/* VmSize (address space in use) in bytes from /proc/self/status, or -1. */
static inline long fu_vmsize(void)
{
    return tu_status_bytes("VmSize");
}

#endif
