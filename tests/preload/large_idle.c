/* large_idle: a program that frees its large blocks and then makes no more large calls keeps at
 * most 512 MiB of them resident, however many it had. The large cache may hold up to the recent
 * peak of live large bytes (so that a wave of blocks finds the last one's pages), but only up
 * to LARGE_CACHE_PEAK_MAX (config.h): nothing purges it while no large call comes.
 * 640 MiB of 16 MiB blocks, every page written, all freed; then small blocks only, and the
 * RSS read from /proc/self/statm. Also passes under plain glibc (its blocks are mappings of
 * their own, unmapped at free). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { BLOCK = 16 << 20, NBLOCK = 40, KEEP_MAX_MIB = 512, SLACK_MIB = 48 };

static long rss_kib(void)
{
    return tu_rss_statm() / 1024;
}

int main(void)
{
    fu_expect_slub("large_idle");
    fu_watchdog("large_idle", 120);
    long page = sysconf(_SC_PAGESIZE);
    long base = rss_kib();
    static char *v[NBLOCK];
    for (int i = 0; i < NBLOCK; i++) {
        v[i] = malloc(BLOCK);
        if (!check(v[i] != NULL, "malloc(%d) failed", BLOCK))
            return tu_finish("large_idle");
        for (long off = 0; off < BLOCK; off += page)
            v[i][off] = (char)i;
    }
    long peak = rss_kib();
    for (int i = 0; i < NBLOCK; i++)
        free(v[i]);
    for (int i = 0; i < 100000; i++) { /* small work only: no large call */
        void *p = malloc(64);
        check(p != NULL, "malloc(64) failed");
        free(p);
    }
    long after = rss_kib();
    printf("large_idle: RSS %ld KiB at start, %ld with %d MiB of large blocks, %ld after the "
           "frees\n", base, peak, NBLOCK * (BLOCK >> 20), after);
    check(peak - base > (NBLOCK * (long)(BLOCK >> 20) - 16) * 1024,
          "the blocks were not resident (%ld KiB more)", peak - base);
    check(after - base <= (KEEP_MAX_MIB + SLACK_MIB) * 1024L,
          "%ld MiB of freed large blocks still resident after the frees (at most %d)",
          (after - base) / 1024, KEEP_MAX_MIB);
    return tu_finish("large_idle");
}
