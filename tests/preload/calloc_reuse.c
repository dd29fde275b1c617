/* calloc_reuse: calloc of a large block in a freed range reads as zero, and faults in no more
 * pages than that range held in memory. A memset over pages the last user never wrote faults
 * each of them in: stress-ng's malloc stressor ran at half its rate with that (2026-12-06).
 *   sparse: 16 MiB with two pages written, freed, then calloc of 16 MiB in its place;
 *   dense:  16 MiB with every byte written, freed, then calloc of 16 MiB;
 *   grown:  24 MiB written and freed, then calloc of 36 MiB: the range grows by mremap; its
 *           new 12 MiB are zero already and must not be faulted in.
 *   trimmed: 16 MiB written and freed, then malloc_trim: slubmalloc purges the range and keeps it
 *           mapped (mincore: no page in memory), so the next block needs no mmap; calloc of
 *           16 MiB reads as zero. Before 2026-12-06 malloc_trim unmapped it: stress-ng's
 *           malloc stressor trims on one call in eight, and each time mapped its ranges again.
 * Faults are counted with getrusage around the calloc alone; then every byte is read.
 * Also passes under plain glibc (its blocks are mappings of their own). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { MIB = 1 << 20 };

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* calloc(1, size), its faults, and whether all its bytes read as zero. */
static void *calloc_counted(size_t size, long *faults)
{
    long f0 = minflt();
    char *q = calloc(1, size);
    *faults = minflt() - f0;
    if (!check(q != NULL, "calloc(1, %zu) failed", size))
        return NULL;
    for (size_t i = 0; i < size; i++)
        if (q[i]) {
            check(0, "calloc(1, %zu): byte %zu is 0x%02x", size, i, (unsigned char)q[i]);
            break;
        }
    return q;
}

/* malloc(old), written (two pages, or every byte when dense), freed; then calloc(1, size),
 * checked. Returns the calloc's faults (-1: a call failed); *same: in the old block's place. */
static long reuse(size_t old, size_t size, int dense, int *same)
{
    char *p = malloc(old);
    long faults = -1;
    if (!check(p != NULL, "malloc(%zu) failed", old))
        return -1;
    if (dense) {
        memset(p, 0xab, old);
    } else {
        p[0] = 1;
        p[old / 2] = 1;
    }
    free(p);
    char *q = calloc_counted(size, &faults);
    *same = q == p;
    free(q);
    return q ? faults : -1;
}

/* The pages of [p, p + len) in memory; -1 when part of it is not mapped (mincore: ENOMEM). */
static long resident(char *p, size_t len, long page)
{
    static unsigned char vec[64 * MIB / 4096];
    if (len / (size_t)page > sizeof vec || mincore(p, len, vec) != 0)
        return errno == ENOMEM ? -1 : -2;
    long n = 0;
    for (size_t i = 0; i < len / (size_t)page; i++)
        n += vec[i] & 1;
    return n;
}

/* malloc_trim purges a cached range and keeps it mapped (slubmalloc: expect). */
static void trimmed(int expect, long page)
{
    char *p = malloc(16 * MIB);
    if (!check(p != NULL, "malloc(16 MiB) failed"))
        return;
    memset(p, 0xab, 16 * MIB);
    free(p);
    int r = malloc_trim(0);
    long in = resident(p, 16 * MIB, page), faults;
    printf("calloc_reuse: trimmed: malloc_trim returned %d; the freed range %s (%ld pages in "
           "memory)\n", r, in == -1 ? "is unmapped" : "stays mapped", in < 0 ? 0 : in);
    if (expect) {
        check(r == 1, "trimmed: malloc_trim returned %d after a 16 MiB block was freed", r);
        check(in == 0, "trimmed: the freed 16 MiB range after malloc_trim: %s", in == -1
              ? "unmapped (it should stay mapped, purged)" : "pages still in memory");
        check(malloc_trim(0) == 0, "trimmed: a second malloc_trim purged again");
    }
    char *q = calloc_counted(16 * MIB, &faults);
    printf("calloc_reuse: trimmed: calloc of 16 MiB %s, faulted %ld pages\n",
           q == p ? "in the same place" : "elsewhere", faults);
    if (expect)
        check(q == p, "trimmed: calloc of 16 MiB did not reuse the purged range");
    free(q);
}

int main(void)
{
    int expect = fu_expect_slub("calloc_reuse");
    fu_watchdog("calloc_reuse", 60);
    long page = sysconf(_SC_PAGESIZE), faults;
    int same;

    faults = reuse(16 * MIB, 16 * MIB, 0, &same);
    printf("calloc_reuse: sparse: 2 pages written, calloc of 16 MiB %s, faulted %ld pages\n",
           same ? "in the same place" : "elsewhere", faults);
    check(faults >= 0 && faults < 4 * MIB / page, "sparse: calloc of 16 MiB over a freed range "
          "of 2 written pages faulted %ld pages (at most %ld)", faults, 4 * MIB / page);

    faults = reuse(16 * MIB, 16 * MIB, 1, &same);
    printf("calloc_reuse: dense: every byte written, calloc of 16 MiB %s, faulted %ld pages\n",
           same ? "in the same place" : "elsewhere", faults);

    faults = reuse(24 * MIB, 36 * MIB, 1, &same);
    printf("calloc_reuse: grown: 24 MiB written and freed, calloc of 36 MiB faulted %ld pages\n",
           faults);
    check(faults >= 0 && faults < 6 * MIB / page, "grown: calloc of 36 MiB after 24 MiB faulted "
          "%ld pages (the 12 MiB beyond the old range are zero: at most %ld)", faults,
          6 * MIB / page);

    trimmed(expect, page);
    return tu_finish("calloc_reuse");
}
