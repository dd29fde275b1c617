/* calloc_reuse: calloc of a large block in a freed range reads as zero, and faults in no more
 * pages than that range held in memory. A memset over pages the last user never wrote faults
 * each of them in: stress-ng's malloc stressor ran at half its rate with that (2026-12-06).
 *   sparse: 16 MiB with two pages written, freed, then calloc of 16 MiB in its place;
 *   dense:  16 MiB with every byte written, freed, then calloc of 16 MiB;
 *   grown:  24 MiB written and freed, then calloc of 36 MiB: the range grows by mremap; its
 *           new 12 MiB are zero already and must not be faulted in.
 * Faults are counted with getrusage around the calloc alone; then every byte is read.
 * Also passes under plain glibc (its blocks are mappings of their own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    fu_expect_slub("calloc_reuse");
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
    return tu_finish("calloc_reuse");
}
