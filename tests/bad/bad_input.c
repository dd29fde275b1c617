/* bad_input: one bad call to the malloc family per run, chosen by argv[1] (`bad_input list`
 * prints the case names). Not linked with slubmalloc: tests/bad/run_bad.sh runs it under
 * LD_PRELOAD=libslubmalloc.so and judges each case by its exit status/signal and its stderr.
 * Three kinds of case:
 *   - abort cases (double free, invalid free/realloc/malloc_usable_size, red zone, poison):
 *     the bad call must not return; if it does, the program says so on stderr and exits 0,
 *     which the runner reports as NOT CAUGHT;
 *   - error-return cases (impossible sizes, bad alignments): the program prints one normalised
 *     line `outcome: ...` on stdout (the runner compares it with plain glibc's) and exits 1 if
 *     the result breaks the contract fixed by the issue (NULL + ENOMEM for impossible sizes,
 *     EINVAL with *memptr untouched for posix_memalign's bad alignments, the old block intact
 *     after a failed realloc, a returned block aligned and writable);
 *   - freelist-corruption cases (use after free without debug): exit 3 if malloc ever returns
 *     the attacker's value 0x4141414141414141, 0 if it never does; an abort is up to the runner.
 * Built with -O0 -fno-builtin; the bad pointers and sizes pass through volatile objects so the
 * compiler neither folds the calls nor warns about them. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- laundering: the compiler must not see through the bad values ---- */
static void *hide(void *p)
{
    void *volatile v = p;
    return v;
}

static size_t hide_size(size_t n)
{
    volatile size_t v = n;
    return v;
}

/* Called through volatile pointers: blocks are used after a free or a failing call on purpose. */
static void (*volatile free_v)(void *) = free;
static void *(*volatile realloc_v)(void *, size_t) = realloc;
static void *(*volatile reallocarray_v)(void *, size_t, size_t) = reallocarray;

#define ATTACK ((uintptr_t)0x4141414141414141ULL)

static char global_buf[64];

/* An abort case's bad call returned: say so (the runner shows this line). */
static int survived(const char *what)
{
    fprintf(stderr, "bad_input: %s returned (no abort)\n", what);
    return 0;
}

/* After an undetected double free of a (size bytes): does malloc hand a out twice? */
static int after_double_free(void *a, size_t size)
{
    void *got[64];
    int hits = 0;
    for (int i = 0; i < 64; i++) {
        got[i] = malloc(size);
        hits += got[i] == a;
    }
    fprintf(stderr, "bad_input: double free returned (no abort); malloc(%zu) then returned %p "
                    "%d times in 64 calls\n", size, a, hits);
    return 0;
}

static char *malloc_filled(size_t n)
{
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "bad_input: malloc(%zu) failed\n", n);
        exit(2);
    }
    memset(p, 0x5a, n);
    return p;
}

/* ---- 1. double free ---- */
static int double_free_small(void)
{
    char *p = malloc_filled(32);
    free_v(p);
    free_v(p);
    return after_double_free(p, 32);
}

static int double_free_large(void)
{
    char *p = malloc_filled(1 << 20);
    free_v(p);
    free_v(p);
    return survived("double free of a 1 MiB block");
}

static int double_free_delayed(void)
{
    char *a = malloc_filled(48), *o[10];
    for (int i = 0; i < 10; i++)
        o[i] = malloc_filled(48);
    free_v(a);
    for (int i = 0; i < 10; i++)
        free_v(o[i]);
    free_v(a);
    return after_double_free(a, 48);
}

static int double_free_aba(void)
{
    char *a = malloc_filled(48), *b = malloc_filled(48);
    free_v(a);
    free_v(b);
    free_v(a);
    return after_double_free(a, 48);
}

/* glibc's tst-tcfree2 shape: the first of 20 freed blocks freed again, deep in the stack */
static int double_free_deep(void)
{
    char *o[20];
    for (int i = 0; i < 20; i++)
        o[i] = malloc_filled(20);
    for (int i = 0; i < 20; i++)
        free_v(o[i]);
    free_v(o[0]);
    return after_double_free(o[0], 20);
}

/* a block freed, then sent from the thread's stacks to its slab's freelist (malloc_trim
 * drains them; the neighbour keeps the slab alive), then freed again */
static int double_free_flushed(void)
{
    char *a = malloc_filled(40), *b = malloc_filled(40);
    free_v(a);
    malloc_trim(0);
    free_v(a);
    free_v(b);
    return after_double_free(a, 40);
}

/* a block freed, handed out again, freed (correctly), then freed once more */
static int double_free_reused(void)
{
    enum { N = 4096 };
    static char *o[N];
    char *a = malloc_filled(48);
    free_v(a);
    int k = -1;
    for (int i = 0; i < N && k < 0; i++)
        if ((o[i] = malloc_filled(48)) == a)
            k = i;
    if (k < 0) {
        fprintf(stderr, "bad_input: the freed block was not handed out again\n");
        return 2;
    }
    for (int i = 0; i < k; i++)
        free_v(o[i]);
    free_v(a);
    char *b = malloc_filled(48); /* another allocation between the two frees */
    free_v(a);
    free_v(b);
    return after_double_free(a, 48);
}

/* ---- 2. invalid free ---- */
static int invalid_free_stack(void)
{
    char buf[64];
    memset(buf, 1, sizeof buf);
    free_v(hide(buf));
    return survived("free of a stack address");
}

static int invalid_free_global(void)
{
    free_v(hide(global_buf));
    return survived("free of a global");
}

static int invalid_free_one(void)
{
    free_v(hide((void *)1));
    return survived("free((void *)1)");
}

static int invalid_free_interior(void)
{
    char *p = malloc_filled(64);
    free_v(hide(p + 8));
    return survived("free(p + 8) of a 64-byte block");
}

static int invalid_free_unaligned(void)
{
    char *p = malloc_filled(64);
    free_v(hide(p + 1));
    return survived("free(p + 1) of a 64-byte block");
}

static int invalid_free_far(void)
{
    free_v(hide((void *)0x7f0000000000ULL));
    return survived("free((void *)0x7f0000000000)");
}

static int invalid_free_mmap(void)
{
    void *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("bad_input: mmap");
        return 2;
    }
    free_v(hide((char *)m + 4096));
    return survived("free of an address inside a separate mmap");
}

static int invalid_free_far_heap(void)
{
    char *p = malloc_filled(64);
    free_v(hide(p + (1UL << 30)));
    return survived("free(p + 1 GiB) of a 64-byte block");
}

static int invalid_free_large_interior(void)
{
    char *p = malloc_filled(1 << 20);
    free_v(hide(p + 16));
    return survived("free(p + 16) of a 1 MiB block");
}

static int invalid_free_large_interior_page(void)
{
    char *p = malloc_filled(1 << 20);
    free_v(hide(p + 65536));
    return survived("free(p + 64 KiB) of a 1 MiB block");
}

/* ---- 3. realloc / malloc_usable_size of a bad pointer ---- */
static int realloc_stack(void)
{
    char buf[64];
    memset(buf, 1, sizeof buf);
    void *q = realloc(hide(buf), 100);
    fprintf(stderr, "bad_input: realloc of a stack address returned %p\n", q);
    return survived("realloc of a stack address");
}

static int realloc_interior(void)
{
    char *p = malloc_filled(64);
    void *q = realloc(hide(p + 8), 100);
    fprintf(stderr, "bad_input: realloc(p + 8, 100) returned %p\n", q);
    return survived("realloc(p + 8) of a 64-byte block");
}

static int usable_size_stack(void)
{
    char buf[64];
    memset(buf, 1, sizeof buf);
    size_t n = malloc_usable_size(hide(buf));
    fprintf(stderr, "bad_input: malloc_usable_size of a stack address returned %zu\n", n);
    return survived("malloc_usable_size of a stack address");
}

static int usable_size_interior(void)
{
    char *p = malloc_filled(64);
    size_t n = malloc_usable_size(hide(p + 8));
    fprintf(stderr, "bad_input: malloc_usable_size(p + 8) returned %zu\n", n);
    return survived("malloc_usable_size(p + 8) of a 64-byte block");
}

/* ---- 4. impossible sizes: NULL + ENOMEM (printed, and checked here) ---- */
static int expect_null_enomem(const char *call, void *p, int err)
{
    if (p) {
        printf("outcome: %s = non-NULL\n", call);
        fprintf(stderr, "bad_input: %s returned %p, expected NULL with ENOMEM\n", call, p);
        return 1;
    }
    printf("outcome: %s = NULL errno=%s\n", call, err == ENOMEM ? "ENOMEM" : strerror(err));
    if (err != ENOMEM) {
        fprintf(stderr, "bad_input: %s: errno %d (%s), expected ENOMEM\n", call, err,
                strerror(err));
        return 1;
    }
    return 0;
}

static int huge_malloc(size_t n, const char *call)
{
    errno = 0;
    void *p = malloc(hide_size(n));
    return expect_null_enomem(call, p, errno);
}

static int huge_malloc_max(void) { return huge_malloc(SIZE_MAX, "malloc(SIZE_MAX)"); }
static int huge_malloc_half(void) { return huge_malloc(SIZE_MAX / 2, "malloc(SIZE_MAX/2)"); }
static int huge_malloc_minus8(void) { return huge_malloc((size_t)-8, "malloc(-8)"); }

static int calloc_overflow(size_t n, size_t size, const char *call)
{
    errno = 0;
    void *p = calloc(hide_size(n), hide_size(size));
    return expect_null_enomem(call, p, errno);
}

static int huge_calloc_ovf(void)
{
    return calloc_overflow(SIZE_MAX / 2, 3, "calloc(SIZE_MAX/2, 3)");
}

static int huge_calloc_ovf2(void)
{
    return calloc_overflow(1UL << 40, 1UL << 40, "calloc(1<<40, 1<<40)");
}

/* The old block must stay valid and unchanged after a failed resize. */
static int check_intact(const unsigned char *p, size_t n, const char *call)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (unsigned char)(i * 7 + 3)) {
            fprintf(stderr, "bad_input: after %s byte %zu of the old block changed\n", call, i);
            return 1;
        }
    }
    if (malloc_usable_size((void *)p) < n) {
        fprintf(stderr, "bad_input: after %s the old block shrank\n", call);
        return 1;
    }
    free_v((void *)p);
    return 0;
}

static unsigned char *patterned(size_t n)
{
    unsigned char *p = (unsigned char *)malloc_filled(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + 3);
    return p;
}

static int huge_realloc(void)
{
    unsigned char *p = patterned(100);
    errno = 0;
    void *q = realloc_v(p, hide_size(SIZE_MAX));
    int bad = expect_null_enomem("realloc(p, SIZE_MAX)", q, errno);
    return bad ? bad : check_intact(p, 100, "realloc(p, SIZE_MAX)");
}

static int huge_reallocarray(void)
{
    unsigned char *p = patterned(100);
    errno = 0;
    void *q = reallocarray_v(p, hide_size(SIZE_MAX / 2), hide_size(3));
    int bad = expect_null_enomem("reallocarray(p, SIZE_MAX/2, 3)", q, errno);
    return bad ? bad : check_intact(p, 100, "reallocarray(p, SIZE_MAX/2, 3)");
}

/* posix_memalign reports through its return value and must leave *memptr alone on failure. */
static int posix_memalign_expect(size_t align, size_t size, int want, const char *call)
{
    void *sentinel = (void *)0x5eed, *p = sentinel;
    int saved = errno = 1234;
    int r = posix_memalign(&p, hide_size(align), hide_size(size));
    const char *rs = r == 0 ? "0" : r == EINVAL ? "EINVAL" : r == ENOMEM ? "ENOMEM" : "other";
    printf("outcome: %s = %s memptr=%s\n", call, rs, p == sentinel ? "untouched" : "written");
    int bad = 0;
    if (r != want) {
        fprintf(stderr, "bad_input: %s returned %d, expected %d\n", call, r, want);
        bad = 1;
    }
    if (r != 0 && p != sentinel) {
        fprintf(stderr, "bad_input: %s failed but wrote *memptr = %p\n", call, p);
        bad = 1;
    }
    if (r != 0 && errno != saved)
        fprintf(stderr, "bad_input: note: %s changed errno to %d\n", call, errno);
    if (r == 0)
        free_v(p);
    return bad;
}

static int huge_posix_memalign(void)
{
    return posix_memalign_expect(64, SIZE_MAX, ENOMEM, "posix_memalign(&p, 64, SIZE_MAX)");
}

static int huge_posix_memalign_half(void)
{
    return posix_memalign_expect(64, SIZE_MAX / 2, ENOMEM, "posix_memalign(&p, 64, SIZE_MAX/2)");
}

static int huge_posix_memalign_align(void)
{
    return posix_memalign_expect(1UL << 62, 1, ENOMEM, "posix_memalign(&p, 1<<62, 1)");
}

static int huge_aligned_alloc(void)
{
    errno = 0;
    void *p = aligned_alloc(hide_size(64), hide_size(SIZE_MAX));
    return expect_null_enomem("aligned_alloc(64, SIZE_MAX)", p, errno);
}

/* ---- 5. bad alignments ---- */
static int align_pm_0(void) { return posix_memalign_expect(0, 64, EINVAL, "posix_memalign(&p, 0, 64)"); }
static int align_pm_3(void) { return posix_memalign_expect(3, 64, EINVAL, "posix_memalign(&p, 3, 64)"); }
static int align_pm_24(void) { return posix_memalign_expect(24, 64, EINVAL, "posix_memalign(&p, 24, 64)"); }

static int align_pm_half(void)
{
    return posix_memalign_expect(sizeof(void *) / 2, 64, EINVAL,
                                 "posix_memalign(&p, sizeof(void *)/2, 64)");
}

/* aligned_alloc / memalign: what glibc does is the reference (the runner compares the outcome
 * lines); checked here only that a returned block is aligned to the alignment rounded up to a
 * power of two and writable. */
static int report_aligned(const char *call, void *p, int err, size_t align, size_t size)
{
    if (!p) {
        printf("outcome: %s = NULL errno=%s\n", call,
               err == ENOMEM ? "ENOMEM" : err == EINVAL ? "EINVAL" : strerror(err));
        return 0;
    }
    printf("outcome: %s = non-NULL\n", call);
    size_t a = 1;
    while (a < align && a < (SIZE_MAX >> 1) + 1)
        a <<= 1;
    if ((uintptr_t)p & (a - 1)) {
        fprintf(stderr, "bad_input: %s = %p is not aligned to %zu\n", call, p, a);
        return 1;
    }
    memset(p, 0x33, size);
    free_v(p);
    return 0;
}

static int align_aa_3(void)
{
    errno = 0;
    void *p = aligned_alloc(hide_size(3), hide_size(64));
    return report_aligned("aligned_alloc(3, 64)", p, errno, 3, 64);
}

static int align_aa_0(void)
{
    errno = 0;
    void *p = aligned_alloc(hide_size(0), hide_size(64));
    return report_aligned("aligned_alloc(0, 64)", p, errno, 0, 64);
}

static int align_ma_3(void)
{
    errno = 0;
    void *p = memalign(hide_size(3), hide_size(64));
    return report_aligned("memalign(3, 64)", p, errno, 3, 64);
}

static int align_ma_huge(void)
{
    errno = 0;
    void *p = memalign(hide_size(1UL << 62), hide_size(1));
    return report_aligned("memalign(1<<62, 1)", p, errno, 1UL << 62, 1);
}

static int align_ma_max(void)
{
    errno = 0;
    void *p = memalign(hide_size(SIZE_MAX), hide_size(1));
    return report_aligned("memalign(SIZE_MAX, 1)", p, errno, SIZE_MAX, 1);
}

/* ---- 6. debug mode: red zones and poison (run with SLUBMALLOC_DEBUG=ZP) ---- */
static int overflow(size_t size, size_t by)
{
    char *p = malloc_filled(size);
    memset(hide(p + size), 0x41, by);
    free_v(p);
    fprintf(stderr, "bad_input: wrote %zu bytes past a malloc(%zu) block, freed it\n", by, size);
    return survived("free of an overflowed block");
}

static int overflow_1_40(void) { return overflow(40, 1); }
static int overflow_8_40(void) { return overflow(40, 8); }
static int overflow_32_40(void) { return overflow(40, 32); }
static int overflow_1_64(void) { return overflow(64, 1); }
static int overflow_8_64(void) { return overflow(64, 8); }
static int overflow_32_64(void) { return overflow(64, 32); }
static int overflow_1_100(void) { return overflow(100, 1); }
static int overflow_8_100(void) { return overflow(100, 8); }
static int overflow_32_100(void) { return overflow(100, 32); }

static int underflow_1(void)
{
    char *p = malloc_filled(64);
    char *before = hide(p - 1);
    *before = 0x41;
    free_v(p);
    return survived("free of a block whose byte before it was overwritten");
}

static int write_after_free(void)
{
    enum { TRIES = 100000 };
    char *p = malloc_filled(64);
    free_v(p);
    memset(hide(p), 0x41, 8);
    for (int i = 0; i < TRIES; i++) {
        char *q = malloc(64);
        if (!q) {
            fprintf(stderr, "bad_input: malloc(64) failed after %d calls\n", i);
            return 2;
        }
        if (q == p) {
            fprintf(stderr, "bad_input: the overwritten object was handed out again after %d "
                            "mallocs, no report\n", i + 1);
            return 0;
        }
    }
    fprintf(stderr, "bad_input: the overwritten object was not handed out again in %d mallocs, "
                    "no report\n", TRIES);
    return 0;
}

/* ---- 7. use after free over the free pointer, without debug mode ---- */
/* malloc(size) n times; every result is checked before it is touched. Exit 3 if steered. */
static int malloc_unsteered(size_t size, int n)
{
    for (int i = 0; i < n; i++) {
        char *q = malloc(size);
        if ((uintptr_t)q == ATTACK || ((uintptr_t)q >> 32) == (ATTACK >> 32)) {
            fprintf(stderr, "bad_input: STEERED: malloc(%zu) returned %p\n", size, (void *)q);
            return 3;
        }
        if (!q) {
            fprintf(stderr, "bad_input: malloc(%zu) returned NULL after %d calls\n", size, i);
            return 2;
        }
        memset(q, 0x22, size);
    }
    fprintf(stderr, "bad_input: %d mallocs after the corruption, none returned the attacker's "
                    "value, no report\n", n);
    return 0;
}

/* As the issue has it: one object freed, all of it overwritten, malloc of its size repeated. */
static int uaf_freelist_single(void)
{
    char *p = malloc_filled(64);
    free_v(p);
    memset(hide(p), 0x41, 64);
    return malloc_unsteered(64, 4096);
}

/* Freed objects that went back to their slabs (past the thread cache) so their free pointers
 * are in use: every other one of 4096 objects is freed (slabs never become empty, so their
 * pages stay mapped), all freed ones are overwritten, then malloc runs through them. */
static int uaf_freelist_chain(void)
{
    enum { N = 4096 };
    static char *o[N];
    for (int i = 0; i < N; i++)
        o[i] = malloc_filled(64);
    for (int i = 0; i < N; i += 2)
        free_v(o[i]);
    for (int i = 0; i < N; i += 2)
        memset(hide(o[i]), 0x41, 64);
    return malloc_unsteered(64, 2 * N);
}

/* ---- 8. SLUBMALLOC_KFENCE (run with N = 1: about every other allocation is sampled) ---- */
/* A sampled block of 40 bytes: its usable size is exactly 40 (a size class's would be 48).
 * The others stay allocated, so no sampled slot is reused meanwhile. */
static char *kfence_block(void)
{
    for (int i = 0; i < 64; i++) {
        char *p = malloc(40);
        if (p && malloc_usable_size(p) == 40) {
            memset(p, 0x11, 40);
            return p;
        }
    }
    fprintf(stderr, "bad_input: no sampled block in 64 mallocs (SLUBMALLOC_KFENCE unset?)\n");
    exit(2);
}

static int kfence_overflow_guard(void)
{
    char *p = kfence_block();
    ((volatile char *)hide(p))[40 + 16] = 0x41; /* past the page the block ends in: a guard */
    return survived("a write one page past a sampled block");
}

static int kfence_overflow_at_free(void)
{
    char *p = kfence_block();
    ((volatile char *)hide(p))[40] = 0x41; /* the byte right after it, in its own page */
    free_v(p);
    return survived("free of a sampled block written one byte past its end");
}

static int kfence_underflow_at_free(void)
{
    char *p = kfence_block();
    ((volatile char *)hide(p))[-1] = 0x41;
    free_v(p);
    return survived("free of a sampled block written one byte before its start");
}

static int kfence_use_after_free(void)
{
    char *p = kfence_block();
    free_v(p);
    char c = ((volatile char *)hide(p))[0];
    (void)c;
    return survived("a read of a freed sampled block");
}

static int kfence_double_free(void)
{
    char *p = kfence_block();
    free_v(p);
    free_v(p);
    return survived("a sampled block freed twice");
}

/* ---- 9. zero-size blocks: usable bytes by default, as glibc's; no access with debug Z ---- */
/* stress-ng's malloc stressor stores a block's address in its first word, also for
 * calloc(n, len / n) with len < n. Every peer gives malloc(0) 8 or more usable bytes. */
static int zero_size_usable(void)
{
    void *volatile z = hide(calloc(5, 0)), *volatile m = hide(malloc(0));
    if (!z || !m || z == m) {
        fprintf(stderr, "bad_input: calloc(5, 0) = %p, malloc(0) = %p\n", z, m);
        return 1;
    }
    *(uintptr_t *volatile)z = (uintptr_t)z; /* what stress-ng does */
    *(uintptr_t *volatile)m = (uintptr_t)m;
    int ok = *(uintptr_t *volatile)z == (uintptr_t)z && *(uintptr_t *volatile)m == (uintptr_t)m &&
             malloc_usable_size(z) >= sizeof(uintptr_t) && malloc_usable_size(m) >= sizeof(uintptr_t);
    printf("outcome: malloc(0), calloc(5, 0): a word stored and read back, usable >= 8: %s\n",
           ok ? "yes" : "no");
    free_v(z);
    free_v(m);
    return !ok;
}

static int zero_size_write(void)
{
    char *p = malloc(0);
    ((volatile char *)hide(p))[0] = 0x41;
    return survived("a write to a malloc(0) block");
}

static int zero_size_double_free(void)
{
    void *p = malloc(0);
    free_v(p);
    free_v(p);
    return survived("a malloc(0) block freed twice");
}

/* ---- 10. faults in the allocator's no-access areas are reported (the default) ---- */
static int large_guard_after(void)
{
    char *p = malloc(300000);
    size_t n = malloc_usable_size(p);
    ((volatile char *)hide(p))[n + 100] = 0x41; /* past the block's last page: its guard */
    return survived("a write past a large block's last page");
}

static int large_guard_before(void)
{
    char *p = malloc(300000);
    ((volatile char *)hide(p))[-100] = 0x41;
    return survived("a write before a large block");
}

static int slab_far_overflow(void)
{
    char *p = malloc(64);
    ((volatile char *)hide(p))[3 << 20] = 0x41; /* 3 MiB on: pages no slab uses yet */
    return survived("a write 3 MiB past a 64-byte block");
}

/* ---- sanity: is the preloaded library in this process? ---- */
static int probe(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "malloc_bulk");
    printf("outcome: malloc_bulk %s\n", sym ? "present" : "absent");
    return sym ? 0 : 1;
}

struct bad_case {
    const char *name;
    int (*run)(void);
};

#define CASE(f) { #f, f }
static const struct bad_case cases[] = {
    CASE(probe),
    CASE(double_free_small), CASE(double_free_large), CASE(double_free_delayed),
    CASE(double_free_aba), CASE(double_free_deep), CASE(double_free_flushed),
    CASE(double_free_reused),
    CASE(invalid_free_stack), CASE(invalid_free_global), CASE(invalid_free_one),
    CASE(invalid_free_interior), CASE(invalid_free_unaligned), CASE(invalid_free_far),
    CASE(invalid_free_mmap), CASE(invalid_free_far_heap), CASE(invalid_free_large_interior),
    CASE(invalid_free_large_interior_page),
    CASE(realloc_stack), CASE(realloc_interior), CASE(usable_size_stack),
    CASE(usable_size_interior),
    CASE(huge_malloc_max), CASE(huge_malloc_half), CASE(huge_malloc_minus8), CASE(huge_realloc),
    CASE(huge_reallocarray), CASE(huge_calloc_ovf), CASE(huge_calloc_ovf2),
    CASE(huge_posix_memalign), CASE(huge_posix_memalign_half), CASE(huge_posix_memalign_align),
    CASE(huge_aligned_alloc),
    CASE(align_pm_0), CASE(align_pm_3), CASE(align_pm_24), CASE(align_pm_half),
    CASE(align_aa_3), CASE(align_aa_0), CASE(align_ma_3), CASE(align_ma_huge),
    CASE(align_ma_max),
    CASE(overflow_1_40), CASE(overflow_8_40), CASE(overflow_32_40),
    CASE(overflow_1_64), CASE(overflow_8_64), CASE(overflow_32_64),
    CASE(overflow_1_100), CASE(overflow_8_100), CASE(overflow_32_100),
    CASE(underflow_1), CASE(write_after_free),
    CASE(uaf_freelist_single), CASE(uaf_freelist_chain),
    CASE(kfence_overflow_guard), CASE(kfence_overflow_at_free), CASE(kfence_underflow_at_free),
    CASE(kfence_use_after_free), CASE(kfence_double_free),
    CASE(zero_size_usable), CASE(zero_size_write), CASE(zero_size_double_free),
    CASE(large_guard_after), CASE(large_guard_before), CASE(slab_far_overflow),
};

int main(int argc, char **argv)
{
    size_t n = sizeof cases / sizeof cases[0];
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        for (size_t i = 0; i < n; i++)
            puts(cases[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE | list\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            int rc = cases[i].run();
            fflush(stdout);
            return rc;
        }
    }
    fprintf(stderr, "bad_input: unknown case %s (try `list`)\n", argv[1]);
    return 2;
}
