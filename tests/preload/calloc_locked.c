/* calloc_locked: calloc returns zeroed memory in a process whose memory is locked (mlockall).
 * Locked pages cannot be purged: madvise(MADV_DONTNEED) fails with EINVAL and leaves them as
 * they were. An allocator that purges a reused range instead of clearing it, or that takes
 * purged pages for zero pages, hands out old data there.
 * Each round dirties blocks with a pattern, frees them, lets the allocator purge (malloc_trim),
 * and checks that calloc's blocks of the same sizes are all zero: large blocks (reused ranges of
 * 1 MiB and more, and smaller ones) and small blocks of several classes (slab pages used again).
 * Needs CAP_IPC_LOCK or a high enough RLIMIT_MEMLOCK (root has both); it fails, saying so,
 * without them. Also passes under plain glibc. */
#include <errno.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "test_util.h"

/* The first non-zero byte of p[0, n), or (size_t)-1. */
static size_t first_nonzero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return i;
    return (size_t)-1;
}

/* Two blocks of n bytes, dirtied and freed in turn, then callocs that reuse their ranges. */
static void large_rounds(size_t n)
{
    for (int r = 0; r < 6; r++) {
        unsigned char *a = malloc(n), *b = malloc(n);
        if (!check(a && b, "malloc(%zu) returned NULL", n))
            return;
        tu_fill(a, 0, n, 1 + r);
        tu_fill(b, 0, n, 2 + r);
        free(a);
        free(b);
        for (int k = 0; k < 2; k++) {
            unsigned char *c = calloc(1, n);
            if (!check(c != NULL, "calloc(1, %zu) returned NULL", n))
                return;
            size_t at = first_nonzero(c, n);
            check(at == (size_t)-1, "calloc(1, %zu), round %d: byte %zu is 0x%02x (locked pages)",
                  n, r, at, at == (size_t)-1 ? 0 : c[at]);
            tu_fill(c, 0, n, 3 + r);
            free(c);
        }
    }
}

/* count blocks of n bytes, dirtied and freed, their slabs' pages purged (malloc_trim), then as
 * many callocs of n: the same pages come back. */
static void small_rounds(size_t n, size_t count)
{
    void **v = malloc(count * sizeof *v);
    if (!check(v != NULL, "malloc of the array returned NULL"))
        return;
    for (int r = 0; r < 3; r++) {
        for (size_t i = 0; i < count; i++) {
            v[i] = malloc(n);
            if (!check(v[i] != NULL, "malloc(%zu) returned NULL", n))
                goto out;
            tu_fill(v[i], 0, n, i + r);
        }
        for (size_t i = 0; i < count; i++)
            free(v[i]);
        malloc_trim(0);
        size_t bad = 0;
        for (size_t i = 0; i < count; i++) {
            v[i] = calloc(1, n);
            if (!check(v[i] != NULL, "calloc(1, %zu) returned NULL", n))
                goto out;
            size_t at = first_nonzero(v[i], n);
            if (at != (size_t)-1 && bad++ < 3)
                check(0, "calloc(1, %zu), round %d, block %zu: byte %zu is 0x%02x (locked pages)", n, r,
                      i, at, ((unsigned char *)v[i])[at]);
        }
        check(bad == 0, "calloc(1, %zu), round %d: %zu of %zu blocks not zero", n, r, bad, count);
        for (size_t i = 0; i < count; i++)
            free(v[i]);
        malloc_trim(0);
    }
out:
    free(v);
}

int main(void)
{
    struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_MEMLOCK, &rl); /* (root may raise it; others keep theirs) */
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        fprintf(stderr, "FAIL: mlockall: %s (the test needs CAP_IPC_LOCK, or RLIMIT_MEMLOCK of some 64 MiB)\n",
                strerror(errno));
        return 1;
    }
    static const size_t large[] = {4u << 20, 2u << 20, 1u << 20, 300000, 140000};
    for (size_t i = 0; i < sizeof large / sizeof large[0]; i++)
        large_rounds(large[i]);
    static const size_t small[] = {16, 48, 64, 200, 1024, 5000, 20000, 100000};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        small_rounds(small[i], (4u << 20) / small[i] + 8);
    return tu_finish("calloc_locked");
}
