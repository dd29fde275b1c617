/* Shared helpers for the slubmalloc test programs: failure counting/reporting macros,
 * a small deterministic PRNG, byte-pattern fill/verify helpers, RSS readers and the lookup of
 * malloc_bulk and free_bulk.
 * Header-only (all functions static) so every test stays a single standalone executable. */
#ifndef SLUB_TEST_UTIL_H
#define SLUB_TEST_UTIL_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Number of failed checks so far (atomically updated: tests may fail from several threads). */
static atomic_long tu_failures;

/* check(ok, printf-format, ...): if ok is false, record a failure and print the message
 * (first 50 failures printed, later ones only counted). Returns ok. */
static inline int check(int ok, const char *fmt, ...)
{
    if (ok)
        return 1;
    long n = atomic_fetch_add(&tu_failures, 1) + 1;
    if (n > 50)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    return 0;
}

/* Final verdict: prints a summary and returns the process exit status. */
static inline int tu_finish(const char *name)
{
    long n = atomic_load(&tu_failures);
    if (n) {
        fprintf(stderr, "%s: %ld check(s) FAILED\n", name, n);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* xorshift64* PRNG: deterministic, per-thread state. */
static inline uint64_t tu_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Pattern byte at offset i for a given seed; the terms in i>>8 and i>>16 make a shift of the
 * data by any multiple of 256 bytes (e.g. a page) detectable. */
static inline unsigned char tu_pat(size_t i, uint64_t seed)
{
    return (unsigned char)(i * 7u + (i >> 8) * 13u + (i >> 16) * 29u + seed);
}

static inline void tu_fill(void *p, size_t from, size_t to, uint64_t seed)
{
    unsigned char *c = p;
    for (size_t i = from; i < to; i++)
        c[i] = tu_pat(i, seed);
}

/* Returns the index of the first mismatching byte in [from, to), or (size_t)-1 if all match. */
static inline size_t tu_verify(const void *p, size_t from, size_t to, uint64_t seed)
{
    const unsigned char *c = p;
    for (size_t i = from; i < to; i++)
        if (c[i] != tu_pat(i, seed))
            return i;
    return (size_t)-1;
}

/* Fast word-wise pattern derived from (pointer, size): used by the stress tests to detect
 * corruption, double hand-out of the same memory, and mix-ups between objects. */
static inline uint64_t tu_obj_seed(const void *p, size_t n)
{
    uint64_t s = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL ^ (uint64_t)n * 0xC2B2AE3D27D4EB4FULL;
    return s | 1;
}

static inline void tu_obj_fill(void *p, size_t n)
{
    uint64_t s = tu_obj_seed(p, n);
    size_t words = n / 8;
    uint64_t *w = p;
    for (size_t i = 0; i < words; i++)
        w[i] = s + i * 0x100000001B3ULL;
    unsigned char *c = p;
    for (size_t i = words * 8; i < n; i++)
        c[i] = (unsigned char)(s >> (i % 8 * 8));
}

/* Returns 1 if the object still holds the pattern written by tu_obj_fill. */
static inline int tu_obj_check(const void *p, size_t n)
{
    uint64_t s = tu_obj_seed(p, n);
    size_t words = n / 8;
    const uint64_t *w = p;
    for (size_t i = 0; i < words; i++)
        if (w[i] != s + i * 0x100000001B3ULL)
            return 0;
    const unsigned char *c = p;
    for (size_t i = words * 8; i < n; i++)
        if (c[i] != (unsigned char)(s >> (i % 8 * 8)))
            return 0;
    return 1;
}

/* Resident set size in bytes from /proc/self/statm (second field, in pages). */
static inline long tu_rss_statm(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &res) != 2)
        res = -1;
    fclose(f);
    return res < 0 ? -1 : res * getpagesize();
}

/* A "Vm...:" field of /proc/self/status (VmRSS, VmSize) in bytes, or -1. */
static inline long tu_status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field);
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kb = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* VmRSS in bytes from /proc/self/status. */
static inline long tu_vmrss(void)
{
    return tu_status_bytes("VmRSS");
}

/* ---- slubmalloc's bulk calls, found with dlsym: the programs run under any allocator ---- */
typedef size_t (*tu_malloc_bulk_fn)(size_t, size_t, void **);
typedef void (*tu_free_bulk_fn)(size_t, void **);

/* *a and *f: malloc_bulk and free_bulk, or both NULL when either is missing, which is a failed
 * check when expect (SLUBMALLOC_EXPECT=1). Returns whether both were found. */
static inline int tu_find_bulk(tu_malloc_bulk_fn *a, tu_free_bulk_fn *f, int expect)
{
    *a = (tu_malloc_bulk_fn)dlsym(RTLD_DEFAULT, "malloc_bulk");
    *f = (tu_free_bulk_fn)dlsym(RTLD_DEFAULT, "free_bulk");
    if (*a && *f)
        return 1;
    check(!expect, "SLUBMALLOC_EXPECT=1 but malloc_bulk/free_bulk are not exported");
    *a = NULL;
    *f = NULL;
    return 0;
}

#endif
