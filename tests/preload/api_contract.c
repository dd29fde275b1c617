/* api_contract: checks every function of glibc's "Replacing malloc" set against the behaviour of
 * glibc 2.36: malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc, malloc_usable_size, plus free_sized, free_aligned_sized and cfree (looked up with
 * dlsym; optional under plain glibc, required when SLUBMALLOC_EXPECT=1, which also requires that
 * every function resolves into libslubmalloc). Checked: NULL + ENOMEM on impossible sizes and
 * overflows, EINVAL for bad alignments with *memptr untouched, alignment for every power of two up
 * to 1 MiB, calloc zeroing after dirty reuse, realloc content preservation 1 B .. 64 MiB, malloc(0)
 * uniqueness, realloc(p, 0), free(NULL), errno preservation by free, usable sizes (>= request,
 * writable without clobbering neighbours) and 16-byte alignment for every size 0..70000.
 * Built with -O0 -fno-builtin so the compiler cannot fold or elide the deliberate bad calls. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

typedef void (*free_sized_fn)(void *, size_t);
typedef void (*free_aligned_sized_fn)(void *, size_t, size_t);
typedef void (*cfree_fn)(void *);

/* Volatile so the compiler neither warns about nor folds the impossible requests. */
static volatile size_t v_size_max = SIZE_MAX;
static volatile size_t v_ptrdiff_max = PTRDIFF_MAX;
static volatile size_t v_zero = 0;
static volatile size_t v_2p32 = (size_t)1 << 32;
static volatile size_t v_2p33 = (size_t)1 << 33;

/* Called through volatile pointers where the old block is used after a (failing) call, which the
 * compiler would otherwise diagnose as a use after free. */
static void *(*volatile realloc_v)(void *, size_t) = realloc;
static void *(*volatile reallocarray_v)(void *, size_t, size_t) = reallocarray;

static int expect_slub;
static size_t page;

static int aligned_to(const void *p, size_t a)
{
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* Every function of the set must come from libslubmalloc when SLUBMALLOC_EXPECT=1. */
static void check_interposition(void)
{
    static const char *const names[] = {
        "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
        "memalign", "valloc", "pvalloc", "malloc_usable_size", "free_sized", "free_aligned_sized",
        "cfree",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *sym = dlsym(RTLD_DEFAULT, names[i]);
        Dl_info info;
        const char *obj = "(absent)";
        if (sym && dladdr(sym, &info) && info.dli_fname)
            obj = info.dli_fname;
        else if (sym)
            obj = "(unknown object)";
        if (i == 0)
            printf("note: malloc resolves to %s\n", obj);
        if (expect_slub && strcmp(names[i], "reallocarray") == 0) {
            /* glibc's reallocarray just calls realloc, so a replacement need not export it */
            printf("note: reallocarray resolves to %s\n", obj);
        } else if (expect_slub)
            check(sym && strstr(obj, "slubmalloc") != NULL,
                  "SLUBMALLOC_EXPECT=1 but %s resolves to %s, not libslubmalloc", names[i], obj);
    }
}

static void check_enomem_ptr(void *p, const char *what)
{
    int e = errno;
    check(p == NULL, "%s returned %p, expected NULL", what, p);
    check(e == ENOMEM, "%s: errno %d (%s), expected ENOMEM", what, e, strerror(e));
    free(p);
}

static void test_failures(void)
{
    void *p;

    errno = 0; p = malloc(v_size_max);                 check_enomem_ptr(p, "malloc(SIZE_MAX)");
    errno = 0; p = malloc(v_ptrdiff_max + 1);          check_enomem_ptr(p, "malloc(PTRDIFF_MAX+1)");
    errno = 0; p = malloc(v_ptrdiff_max);              check_enomem_ptr(p, "malloc(PTRDIFF_MAX)");
    errno = 0; p = malloc(v_size_max - 4096);          check_enomem_ptr(p, "malloc(SIZE_MAX-4096)");
    errno = 0; p = malloc((size_t)1 << 62);            check_enomem_ptr(p, "malloc(2^62)");
    errno = 0; p = malloc(v_size_max - 15);            check_enomem_ptr(p, "malloc(SIZE_MAX-15)");
    errno = 0; p = calloc(v_size_max / 2 + 1, 2);      check_enomem_ptr(p, "calloc(SIZE_MAX/2+1, 2)");
    errno = 0; p = calloc(2, v_size_max / 2 + 1);      check_enomem_ptr(p, "calloc(2, SIZE_MAX/2+1)");
    errno = 0; p = calloc(v_2p32, v_2p32); check_enomem_ptr(p, "calloc(2^32, 2^32)");
    errno = 0; p = calloc(v_size_max, v_size_max);     check_enomem_ptr(p, "calloc(SIZE_MAX, SIZE_MAX)");
    errno = 0; p = calloc(1, v_ptrdiff_max + 1);       check_enomem_ptr(p, "calloc(1, PTRDIFF_MAX+1)");
    errno = 0; p = calloc(v_size_max, 1);              check_enomem_ptr(p, "calloc(SIZE_MAX, 1)");
    errno = 0; p = aligned_alloc(64, v_size_max);      check_enomem_ptr(p, "aligned_alloc(64, SIZE_MAX)");
    errno = 0; p = aligned_alloc(4096, v_ptrdiff_max + 1); check_enomem_ptr(p, "aligned_alloc(4096, PTRDIFF_MAX+1)");
    errno = 0; p = memalign(64, v_size_max);           check_enomem_ptr(p, "memalign(64, SIZE_MAX)");
    errno = 0; p = memalign(1 << 20, v_size_max - (1 << 19)); check_enomem_ptr(p, "memalign(1MiB, SIZE_MAX-512KiB)");
    errno = 0; p = valloc(v_size_max);                 check_enomem_ptr(p, "valloc(SIZE_MAX)");
    errno = 0; p = valloc(v_size_max - page);          check_enomem_ptr(p, "valloc(SIZE_MAX-page)");
    errno = 0; p = pvalloc(v_size_max);                check_enomem_ptr(p, "pvalloc(SIZE_MAX)");
    errno = 0; p = pvalloc(v_size_max - page + 2);     check_enomem_ptr(p, "pvalloc(SIZE_MAX-page+2)");

    /* memalign with an alignment above SIZE_MAX/2+1 cannot be satisfied: glibc says EINVAL. */
    errno = 0;
    p = memalign(v_size_max / 2 + 2, 16);
    check(p == NULL && errno == EINVAL, "memalign(SIZE_MAX/2+2, 16) -> %p errno %d, expected NULL/EINVAL",
          p, errno);
    free(p);

    /* posix_memalign reports errors through the return value and must not set *memptr. */
    /* On ENOMEM glibc leaves errno at ENOMEM too (its tst-malloc-thread-fail reads it); on
     * EINVAL errno is left alone (test_posix_memalign_bad). */
    void *sentinel = (void *)0x1234;
    p = sentinel;
    errno = 0;
    int r = posix_memalign(&p, 64, v_size_max);
    check(r == ENOMEM && errno == ENOMEM, "posix_memalign(64, SIZE_MAX) returned %d, errno %d, expected ENOMEM twice", r, errno);
    check(r != 0 || p != sentinel, "posix_memalign(64, SIZE_MAX) succeeded?");
    p = sentinel;
    errno = 0;
    r = posix_memalign(&p, 4096, v_ptrdiff_max + 1);
    check(r == ENOMEM && errno == ENOMEM, "posix_memalign(4096, PTRDIFF_MAX+1) returned %d, errno %d, expected ENOMEM twice", r, errno);
    p = sentinel;
    errno = 0;
    r = posix_memalign(&p, 1 << 20, v_size_max - (1 << 19));
    check(r == ENOMEM && errno == ENOMEM, "posix_memalign(1MiB, SIZE_MAX-512KiB) returned %d, errno %d", r, errno);

    /* reallocarray / realloc overflow: NULL + ENOMEM and the old block is left intact. */
    unsigned char *q = malloc(100);
    check(q != NULL, "malloc(100) failed");
    if (q) {
        tu_fill(q, 0, 100, 11);
        errno = 0;
        void *r2 = reallocarray_v(q, v_size_max / 2 + 1, 2);
        int e = errno;
        check(r2 == NULL && e == ENOMEM, "reallocarray(p, SIZE_MAX/2+1, 2) -> %p errno %d, expected NULL/ENOMEM", r2, e);
        errno = 0;
        r2 = reallocarray_v(q, v_2p33, v_2p33);
        e = errno;
        check(r2 == NULL && e == ENOMEM, "reallocarray(p, 2^33, 2^33) -> %p errno %d, expected NULL/ENOMEM", r2, e);
        errno = 0;
        r2 = realloc_v(q, v_size_max);
        e = errno;
        check(r2 == NULL && e == ENOMEM, "realloc(p, SIZE_MAX) -> %p errno %d, expected NULL/ENOMEM", r2, e);
        errno = 0;
        r2 = realloc_v(q, v_ptrdiff_max + 1);
        e = errno;
        check(r2 == NULL && e == ENOMEM, "realloc(p, PTRDIFF_MAX+1) -> %p errno %d, expected NULL/ENOMEM", r2, e);
        errno = 0;
        r2 = realloc_v(q, (size_t)1 << 62);
        e = errno;
        check(r2 == NULL && e == ENOMEM, "realloc(p, 2^62) -> %p errno %d, expected NULL/ENOMEM", r2, e);
        size_t bad = tu_verify(q, 0, 100, 11);
        check(bad == (size_t)-1, "block changed after failed realloc/reallocarray (byte %zu)", bad);
        /* reallocarray that does not overflow behaves like realloc. */
        unsigned char *g = reallocarray_v(q, 50, 20);
        check(g != NULL, "reallocarray(p, 50, 20) failed");
        if (g) {
            bad = tu_verify(g, 0, 100, 11);
            check(bad == (size_t)-1, "reallocarray(p, 50, 20) lost contents at byte %zu", bad);
            check(malloc_usable_size(g) >= 1000, "reallocarray(p, 50, 20) usable %zu < 1000", malloc_usable_size(g));
            memset(g, 1, 1000);
            q = g;
        }
        free(q);
    }
    void *g = reallocarray(NULL, 10, 10);
    check(g != NULL && malloc_usable_size(g) >= 100, "reallocarray(NULL, 10, 10) = %p", g);
    free(g);
}

static void test_posix_memalign_bad(void)
{
    static const size_t bad[] = { 0, 1, 2, 3, 4, 5, 6, 7, 12, 24, 40, 48, 96, 100, 4095, 4097, 12288,
                                  (size_t)1 << 63 | 8, SIZE_MAX, SIZE_MAX - 7 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (size_t sz = 0; sz <= 4096; sz = sz ? sz * 8 : 1) {
            void *sentinel = (void *)(uintptr_t)(0xdead0000 + i);
            void *p = sentinel;
            int r = posix_memalign(&p, bad[i], sz);
            check(r == EINVAL, "posix_memalign(align=%zu, size=%zu) returned %d, expected EINVAL", bad[i], sz, r);
            check(p == sentinel, "posix_memalign(align=%zu, size=%zu) modified *memptr to %p", bad[i], sz, p);
            if (r == 0 && p != sentinel)
                free(p);
        }
    }
    /* Good alignments with size 0 succeed and return a freeable pointer. */
    void *p = NULL;
    int r = posix_memalign(&p, sizeof(void *), v_zero);
    check(r == 0, "posix_memalign(8, 0) returned %d", r);
    if (r == 0)
        free(p);
}

/* Power-of-two alignments from 1 to 1 MiB with many sizes, for posix_memalign, aligned_alloc and
 * memalign; a few blocks are kept alive at once so they are distinct and fully writable. */
static void test_alignment(void)
{
    static const size_t sizes[] = { 1, 7, 8, 16, 24, 100, 255, 512, 1000, 4095, 4096, 4097, 10000,
                                    65536, 100000, 262145, 1048577 };
    enum { KEEP = 3 };
    for (size_t a = 1; a <= ((size_t)1 << 20); a <<= 1) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t n = sizes[s];
            if (a >= 65536 && n > 100000 && n != 1048577)
                continue; /* keep runtime modest: large+huge-alignment combos sampled */
            for (int fn = 0; fn < 3; fn++) {
                static const char *const fname[] = { "posix_memalign", "aligned_alloc", "memalign" };
                void *blk[KEEP] = { 0 };
                for (int k = 0; k < KEEP; k++) {
                    void *p = NULL;
                    if (fn == 0) {
                        if (a < sizeof(void *))
                            continue;
                        int r = posix_memalign(&p, a, n);
                        check(r == 0, "posix_memalign(%zu, %zu) returned %d", a, n, r);
                        if (r)
                            p = NULL;
                    } else if (fn == 1) {
                        p = aligned_alloc(a, n);
                    } else {
                        p = memalign(a, n);
                    }
                    if (!check(p != NULL, "%s(%zu, %zu) returned NULL (errno %d)", fname[fn], a, n, errno))
                        continue;
                    check(aligned_to(p, a), "%s(%zu, %zu) = %p is misaligned", fname[fn], a, n, p);
                    check(aligned_to(p, a < 16 ? a : 16), "%s(%zu, %zu) = %p", fname[fn], a, n, p);
                    size_t us = malloc_usable_size(p);
                    check(us >= n, "%s(%zu, %zu): malloc_usable_size %zu < size", fname[fn], a, n, us);
                    memset(p, 0x5a + k, n);
                    blk[k] = p;
                }
                for (int k = 0; k < KEEP; k++) {
                    for (int j = 0; j < k; j++)
                        check(!blk[k] || blk[k] != blk[j], "%s(%zu, %zu) returned %p twice",
                              fname[fn], a, n, blk[k]);
                    if (blk[k]) {
                        unsigned char *c = blk[k];
                        check(c[0] == (unsigned char)(0x5a + k) && c[n - 1] == (unsigned char)(0x5a + k),
                              "%s(%zu, %zu): block %d overwritten", fname[fn], a, n, k);
                    }
                }
                for (int k = 0; k < KEEP; k++)
                    free(blk[k]);
            }
        }
    }
    /* glibc memalign/aligned_alloc accept a non-power-of-two alignment by rounding it up to the
     * next power of two; a replacement may instead fail with EINVAL, but never misalign. */
    static const size_t odd[] = { 3, 24, 48, 100, 3000, 5000 };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        size_t p2 = 1;
        while (p2 < odd[i])
            p2 <<= 1;
        errno = 0;
        void *p = memalign(odd[i], 200);
        check(p ? aligned_to(p, p2) : errno == EINVAL, "memalign(%zu, 200) = %p errno %d", odd[i], p, errno);
        if (p)
            memset(p, 1, 200);
        free(p);
    }
}

static void test_valloc_pvalloc(void)
{
    static const size_t sizes[] = { 1, 100, 4095, 4096, 4097, 10000, 65536, 100001, 1048576, 3000000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        void *v = valloc(n);
        if (check(v != NULL, "valloc(%zu) returned NULL", n)) {
            check(aligned_to(v, page), "valloc(%zu) = %p not page aligned", n, v);
            check(malloc_usable_size(v) >= n, "valloc(%zu): usable %zu", n, malloc_usable_size(v));
            memset(v, 0x33, n);
        }
        void *pv = pvalloc(n);
        size_t rounded = (n + page - 1) / page * page;
        if (check(pv != NULL, "pvalloc(%zu) returned NULL", n)) {
            check(aligned_to(pv, page), "pvalloc(%zu) = %p not page aligned", n, pv);
            size_t us = malloc_usable_size(pv);
            check(us >= rounded, "pvalloc(%zu): usable %zu < rounded size %zu", n, us, rounded);
            memset(pv, 0x44, rounded); /* the whole rounded size is the caller's */
        }
        if (v)
            check(((unsigned char *)v)[n - 1] == 0x33, "valloc(%zu) block clobbered", n);
        free(v);
        free(pv);
    }
    void *pv = pvalloc(v_zero);
    check(pv == NULL || aligned_to(pv, page), "pvalloc(0) = %p not page aligned", pv);
    free(pv);
    void *v = valloc(v_zero);
    check(v == NULL || aligned_to(v, page), "valloc(0) = %p not page aligned", v);
    free(v);
}

/* calloc must return zeroed memory even when it reuses blocks that were dirtied and freed. */
static void test_calloc_zero(void)
{
    enum { N = 8 };
    size_t n = 1;
    while (n <= 65536 + 64) {
        void *blk[N];
        for (int k = 0; k < N; k++) {
            blk[k] = malloc(n);
            if (blk[k])
                memset(blk[k], 0xA5, malloc_usable_size(blk[k]));
        }
        for (int k = N - 1; k >= 0; k--)
            free(blk[k]);
        for (int k = 0; k < N; k++) {
            unsigned char *c = calloc(1, n);
            blk[k] = c;
            if (!check(c != NULL, "calloc(1, %zu) returned NULL", n))
                continue;
            for (size_t i = 0; i < n; i++)
                if (c[i]) {
                    check(0, "calloc(1, %zu): byte %zu is 0x%02x after dirty reuse", n, i, c[i]);
                    break;
                }
            memset(c, 0xA5, n);
        }
        for (int k = 0; k < N; k++)
            free(blk[k]);
        /* two-argument form */
        unsigned char *c = calloc(n, 1);
        if (check(c != NULL, "calloc(%zu, 1) returned NULL", n)) {
            for (size_t i = 0; i < n; i++)
                if (c[i]) {
                    check(0, "calloc(%zu, 1): byte %zu not zero", n, i);
                    break;
                }
            free(c);
        }
        n = n < 1024 ? n + 1 : n < 8192 ? n + 24 : n + 250;
    }
    static const size_t big[] = { 65536 + 4096, 100000, 131072, 131073, 262144 + 7, 1 << 20,
                                  (4 << 20) + 3, 16 << 20, 32 << 20 };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        for (int round = 0; round < 3; round++) {
            void *d = malloc(big[i]);
            if (d)
                memset(d, 0x5A, big[i]);
            free(d);
            size_t cnt = big[i] / 8;
            unsigned char *c = calloc(cnt, 8);
            if (!check(c != NULL, "calloc(%zu, 8) returned NULL", cnt))
                continue;
            for (size_t j = 0; j < cnt * 8; j++)
                if (c[j]) {
                    check(0, "calloc(%zu, 8): byte %zu not zero after reuse", cnt, j);
                    break;
                }
            memset(c, 0x77, cnt * 8); /* dirty it for the next round */
            free(c);
        }
    }
    /* zero-sized calloc behaves like malloc(0) */
    void *a = calloc(0, 10), *b = calloc(10, 0), *z = calloc(0, 0);
    check(a && b && z, "calloc with a zero count/size returned NULL (%p %p %p)", a, b, z);
    check(!a || !b || a != b, "calloc(0,10) and calloc(10,0) returned the same pointer");
    free(a); free(b); free(z);
}

static void test_malloc_zero(void)
{
    enum { N = 1000 };
    void **p = malloc(N * sizeof *p);
    if (!check(p != NULL, "malloc for pointer table failed"))
        return;
    for (int i = 0; i < N; i++) {
        p[i] = malloc(v_zero);
        check(p[i] != NULL, "malloc(0) #%d returned NULL", i);
        check(aligned_to(p[i], 16), "malloc(0) = %p not 16-byte aligned", p[i]);
    }
    /* all distinct: sort then compare neighbours */
    for (int i = 1; i < N; i++) {
        void *x = p[i];
        int j = i - 1;
        while (j >= 0 && (uintptr_t)p[j] > (uintptr_t)x) {
            p[j + 1] = p[j];
            j--;
        }
        p[j + 1] = x;
    }
    for (int i = 1; i < N; i++)
        check(p[i] == NULL || p[i] != p[i - 1], "malloc(0) returned %p twice", p[i]);
    for (int i = 0; i < N; i++)
        free(p[i]);
    free(p);
    void *r = realloc(NULL, v_zero);
    check(r != NULL, "realloc(NULL, 0) returned NULL (glibc returns malloc(0))");
    free(r);
}

static void test_realloc(void)
{
    /* realloc(NULL, n) allocates */
    unsigned char *p = realloc(NULL, 1000);
    if (check(p != NULL, "realloc(NULL, 1000) returned NULL")) {
        check(malloc_usable_size(p) >= 1000, "realloc(NULL, 1000): usable %zu", malloc_usable_size(p));
        memset(p, 1, 1000);
        /* realloc(p, 0) frees and returns NULL (glibc) */
        void *r = realloc(p, v_zero);
        check(r == NULL, "realloc(p, 0) returned %p, expected NULL (block freed)", r);
        free(r);
    }
    for (int i = 0; i < 1000; i++) {  /* repeat: leaking blocks in realloc(p,0) would show in RSS */
        void *q = malloc(64 + i);
        void *r = realloc(q, v_zero);
        check(r == NULL, "realloc(malloc(%d), 0) returned %p", 64 + i, r);
        free(r);
    }
    void *big = malloc(8 << 20);
    if (big) {
        memset(big, 3, 8 << 20);
        void *r = realloc(big, v_zero);
        check(r == NULL, "realloc(8MiB block, 0) returned %p", r);
        free(r);
    }

    /* a large block freed, a smaller one (slubmalloc: the lower part of its range), grown by
     * realloc (slubmalloc: over the freed rest, in place): contents kept, and the next blocks
     * apart (160 of 1 MiB: more than slubmalloc caches, so they take every freed range) */
    malloc_trim(0); /* (slubmalloc: an empty cache, so the freed range is the best fit) */
    void *whole = malloc(16 << 20);
    if (check(whole != NULL, "malloc(16 MiB) failed")) {
        memset(whole, 5, 16 << 20);
        free(whole);
        unsigned char *lo = malloc(1 << 20), *g = NULL;
        if (check(lo != NULL, "malloc(1 MiB) failed")) {
            tu_fill(lo, 0, 1 << 20, 7);
            g = realloc(lo, 6 << 20);
            if (!check(g != NULL, "realloc(1 MiB -> 6 MiB) returned NULL"))
                free(lo);
        }
        if (g) {
            size_t bad = tu_verify(g, 0, 1 << 20, 7);
            check(bad == (size_t)-1, "realloc 1 MiB -> 6 MiB lost contents at byte %zu", bad);
            tu_fill(g, 0, 6 << 20, 8);
            unsigned char *next[160];
            for (int i = 0; i < 160; i++) {
                next[i] = malloc(1 << 20);
                if (check(next[i] != NULL, "malloc(1 MiB) failed"))
                    check(next[i] >= g + (6 << 20) || next[i] + (1 << 20) <= g,
                          "malloc(1 MiB) = %p overlaps the grown block %p (6 MiB)",
                          (void *)next[i], (void *)g);
            }
            bad = tu_verify(g, 0, 6 << 20, 8);
            check(bad == (size_t)-1, "the grown block was overwritten at byte %zu", bad);
            for (int i = 0; i < 160; i++)
                free(next[i]);
            free(g);
        }
    }

    static const size_t sizes[] = { 1, 2, 7, 8, 15, 16, 17, 24, 31, 32, 48, 63, 64, 100, 128, 255,
                                    256, 500, 512, 1000, 1024, 2000, 4095, 4096, 4097, 8192, 10000,
                                    16384, 32768, 65535, 65536, 65537, 100000, 131072, 262144,
                                    500000, 1 << 20, (1 << 20) + 1, 4 << 20, 16 << 20, 64 << 20 };
    enum { NS = sizeof sizes / sizeof sizes[0] };

    /* growth chain 1 B -> 64 MiB, then shrink chain back down */
    for (int dir = 0; dir < 2; dir++) {
        size_t cur = dir ? sizes[NS - 1] : sizes[0];
        unsigned char *b = malloc(cur);
        if (!check(b != NULL, "malloc(%zu) failed", cur))
            continue;
        tu_fill(b, 0, cur, 99);
        for (int i = 1; i < NS; i++) {
            size_t n = dir ? sizes[NS - 1 - i] : sizes[i];
            unsigned char *nb = realloc(b, n);
            if (!check(nb != NULL, "realloc(%zu -> %zu) returned NULL", cur, n))
                break;
            b = nb;
            size_t keep = cur < n ? cur : n;
            size_t bad = tu_verify(b, 0, keep, 99);
            check(bad == (size_t)-1, "realloc %s %zu -> %zu lost contents at byte %zu",
                  dir ? "shrink" : "grow", cur, n, bad);
            check(malloc_usable_size(b) >= n, "realloc(%zu): usable %zu", n, malloc_usable_size(b));
            tu_fill(b, 0, n, 99);
            cur = n;
        }
        free(b);
    }

    /* every pair of sizes up to ~1 MiB: a -> b keeps min(a, b) bytes, new size fully writable,
     * and a neighbour block allocated in between is never disturbed */
    for (int i = 0; i < NS; i++) {
        if (sizes[i] > (2 << 20))
            continue;
        for (int j = 0; j < NS; j++) {
            if (sizes[j] > (2 << 20))
                continue;
            size_t a = sizes[i], n = sizes[j];
            uint64_t seed = (uint64_t)i * 64 + (uint64_t)j;
            unsigned char *b = malloc(a);
            unsigned char *nbr = malloc(a);
            if (!check(b && nbr, "malloc(%zu) failed", a)) {
                free(b); free(nbr);
                continue;
            }
            tu_fill(b, 0, a, seed);
            tu_fill(nbr, 0, a, seed + 1);
            unsigned char *nb = realloc(b, n);
            if (check(nb != NULL, "realloc(%zu -> %zu) returned NULL", a, n)) {
                size_t keep = a < n ? a : n;
                size_t bad = tu_verify(nb, 0, keep, seed);
                check(bad == (size_t)-1, "realloc %zu -> %zu lost contents at byte %zu", a, n, bad);
                memset(nb, 0xEE, n);
                bad = tu_verify(nbr, 0, a, seed + 1);
                check(bad == (size_t)-1, "realloc %zu -> %zu clobbered another block at byte %zu", a, n, bad);
                free(nb);
            } else {
                free(b);
            }
            free(nbr);
        }
    }
}

static void test_free_and_errno(free_sized_fn fs, free_aligned_sized_fn fas, cfree_fn cf)
{
    free(NULL); /* no-op */
    static const size_t sizes[] = { 0, 1, 16, 100, 1000, 4096, 40000, 70000, 300000, 1 << 20, 20 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int how = 0; how < 4; how++) {
            void *p = how == 3 ? aligned_alloc(4096, sizes[i]) : malloc(sizes[i]);
            if (!check(p != NULL, "allocation of %zu failed", sizes[i]))
                continue;
            memset(p, 0x11, sizes[i]);
            errno = 4242;
            if (how == 1 && fs)
                fs(p, sizes[i]);
            else if (how == 2 && cf)
                cf(p);
            else if (how == 3 && fas)
                fas(p, 4096, sizes[i]);
            else
                free(p);
            check(errno == 4242, "free variant %d of a %zu-byte block changed errno to %d", how, sizes[i], errno);
        }
    }
    errno = EBADF;
    free(NULL);
    check(errno == EBADF, "free(NULL) changed errno to %d", errno);
    if (fs) {
        fs(NULL, 0);
        fs(NULL, 100);
        check(errno == EBADF, "free_sized(NULL, ...) changed errno to %d", errno);
    }
    if (fas) {
        fas(NULL, 64, 0);
        check(errno == EBADF, "free_aligned_sized(NULL, ...) changed errno to %d", errno);
    }
    if (cf) {
        cf(NULL);
        check(errno == EBADF, "cfree(NULL) changed errno to %d", errno);
    }

    /* free_sized / free_aligned_sized with every kind of block, including memalign/posix_memalign */
    if (fs) {
        for (size_t n = 1; n < 300000; n = n * 3 + 1) {
            void *p = malloc(n);
            void *q = calloc(n, 1);
            void *r = realloc(malloc(n / 2 + 1), n);
            if (p) fs(p, n);
            if (q) fs(q, n);
            if (r) fs(r, n);
        }
    }
    if (fas) {
        for (size_t a = 1; a <= 65536; a <<= 1)
            for (size_t n = a; n <= 200000; n *= 7) {
                void *p = aligned_alloc(a, n);
                if (check(p != NULL, "aligned_alloc(%zu, %zu) failed", a, n))
                    fas(p, a, n);
            }
    }
}

/* A program may store anything in its block, the bytes of slubmalloc's free key included
 * (src/harden.h: 0xffffffff9e3779b9 in word 1; free's fastpath tests its first byte). Such a
 * block frees like any other, with free and free_sized, and comes back whole. */
static void test_key_lookalike(free_sized_fn fs)
{
    static const uint64_t key = 0xffffffff9e3779b9ull;
    enum { N = 64 };
    void *held[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            size_t n = 16 + (size_t)i * 16;
            unsigned char *p = held[i] = malloc(n);
            if (!check(p != NULL, "malloc(%zu) failed", n))
                return;
            memset(p, 0x5a, n);
            if (i & 1)
                memcpy(p + 8, &key, sizeof key); /* the whole key */
            else
                p[8] = (unsigned char)key; /* its first byte alone */
        }
        for (int i = 0; i < N; i++) {
            if (fs && (i & 2))
                fs(held[i], 16 + (size_t)i * 16);
            else
                free(held[i]);
        }
    }
    for (int i = 0; i < N; i++) {
        size_t n = 16 + (size_t)i * 16;
        unsigned char *p = held[i] = malloc(n);
        if (!check(p != NULL, "malloc(%zu) after key lookalikes failed", n))
            return;
        memset(p, i, n);
    }
    for (int i = 0; i < N; i++) {
        unsigned char *p = held[i];
        for (size_t k = 0; k < 16 + (size_t)i * 16; k++)
            if (!check(p[k] == (unsigned char)i, "block %d byte %zu changed", i, k))
                break;
        free(p);
    }
}

/* Usable size >= request, every usable byte writable without touching other blocks, and
 * 16-byte alignment for every size 0..70000 (step 1 to 4096, coarser after). */
static void test_usable_sizes(void)
{
    check(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) = %zu", malloc_usable_size(NULL));
    enum { RING = 8 };
    void *ring[RING] = { 0 };
    unsigned slot = 0;
    for (size_t n = 0; n <= 70000; n = n < 4096 ? n + 1 : n + 37) {
        void *p = malloc(n);
        if (!check(p != NULL, "malloc(%zu) returned NULL", n))
            continue;
        check(aligned_to(p, 16), "malloc(%zu) = %p not 16-byte aligned", n, p);
        size_t us = malloc_usable_size(p);
        check(us >= n, "malloc(%zu): malloc_usable_size %zu < request", n, us);
        memset(p, (int)(n & 0xff), us);
        free(ring[slot % RING]);
        ring[slot++ % RING] = p;
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);

    /* neighbourhood test: fill the entire usable area of many same-size blocks with distinct
     * bytes, then check none was clobbered by another block's usable area */
    enum { K = 48 };
    for (size_t n = 1; n <= 70000; n = n < 256 ? n + 1 : n < 4096 ? n + 17 : n * 9 / 8) {
        unsigned char *b[K];
        size_t us[K];
        for (int k = 0; k < K; k++) {
            b[k] = malloc(n);
            us[k] = b[k] ? malloc_usable_size(b[k]) : 0;
            if (b[k])
                memset(b[k], k + 1, us[k]);
        }
        for (int k = 0; k < K; k++) {
            if (!b[k])
                continue;
            for (size_t i = 0; i < us[k]; i++)
                if (b[k][i] != (unsigned char)(k + 1)) {
                    check(0, "size %zu: byte %zu of block %d (usable %zu) overwritten by a neighbour",
                          n, i, k, us[k]);
                    break;
                }
        }
        for (int k = 0; k < K; k++)
            free(b[k]);
    }
    static const size_t big[] = { 100000, 131072, 262143, 1 << 20, 5000001 };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        void *p = malloc(big[i]);
        if (!check(p != NULL, "malloc(%zu) failed", big[i]))
            continue;
        size_t us = malloc_usable_size(p);
        check(us >= big[i], "malloc(%zu): usable %zu", big[i], us);
        check(aligned_to(p, 16), "malloc(%zu) = %p misaligned", big[i], p);
        memset(p, 0xCD, us);
        free(p);
    }
}

int main(void)
{
    const char *e = getenv("SLUBMALLOC_EXPECT");
    expect_slub = e && strcmp(e, "1") == 0;
    page = (size_t)getpagesize();

    free_sized_fn fs = (free_sized_fn)dlsym(RTLD_DEFAULT, "free_sized");
    free_aligned_sized_fn fas = (free_aligned_sized_fn)dlsym(RTLD_DEFAULT, "free_aligned_sized");
    cfree_fn cf = (cfree_fn)dlsym(RTLD_DEFAULT, "cfree");
    const char *names[3] = { "free_sized", "free_aligned_sized", "cfree" };
    void *syms[3] = { (void *)fs, (void *)fas, (void *)cf };
    for (int i = 0; i < 3; i++) {
        if (!syms[i]) {
            if (expect_slub)
                check(0, "%s is not exported (SLUBMALLOC_EXPECT=1)", names[i]);
            else
                printf("note: %s not available, its checks are skipped\n", names[i]);
        }
    }

    check_interposition();
    test_failures();
    test_posix_memalign_bad();
    test_alignment();
    test_valloc_pvalloc();
    test_calloc_zero();
    test_malloc_zero();
    test_realloc();
    test_free_and_errno(fs, fas, cf);
    test_key_lookalike(fs);
    test_usable_sizes();
    return tu_finish("api_contract");
}
