/* thp: SLUBMALLOC_THP=1 must give small objects huge pages; SLUBMALLOC_THP=0 must not.
 * Allocates 8 MiB of 256-byte objects, writes and checks them, then adds up AnonHugePages of
 * the mappings (/proc/self/smaps) that hold them.
 * Usage: thp on|off (run.sh sets SLUBMALLOC_THP to match).
 * "on" needs at least one huge page there; "off" needs none.
 * Skipped (exit 0, said on stdout) when the system's THP is "never".
 * Without slubmalloc (SLUBMALLOC_EXPECT unset) it only reports. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define NOBJ 32768
#define OBJ 256

static void *objs[NOBJ];

/* AnonHugePages (kB) of the mappings that hold at least one of objs[]. */
static long huge_kb_of_objects(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    uintptr_t lo = 0, hi = 0;
    int ours = 0;
    long kb = 0, sum = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            lo = a, hi = b, ours = 0;
            for (size_t i = 0; i < NOBJ && !ours; i += 64)
                ours = (uintptr_t)objs[i] >= lo && (uintptr_t)objs[i] < hi;
        } else if (ours && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
            sum += kb;
        }
    }
    fclose(f);
    return sum;
}

int main(int argc, char **argv)
{
    int on = argc > 1 && !strcmp(argv[1], "on");
    FILE *s = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char mode[128] = "";
    if (!s || !fgets(mode, sizeof mode, s) || strstr(mode, "[never]")) {
        printf("thp: skipped, transparent huge pages are off on this system (%s)\n",
               s ? mode : "no /sys/kernel/mm/transparent_hugepage");
        return 0;
    }
    fclose(s);
    mode[strcspn(mode, "\n")] = 0;
    for (size_t i = 0; i < NOBJ; i++) {
        objs[i] = malloc(OBJ);
        check(objs[i] != NULL, "malloc(%d) failed", OBJ);
        if (objs[i])
            tu_obj_fill(objs[i], OBJ);
    }
    for (size_t i = 0; i < NOBJ; i++)
        check(!objs[i] || tu_obj_check(objs[i], OBJ), "object %zu changed", i);
    long kb = huge_kb_of_objects();
    printf("thp %s: %ld kB of huge pages hold the %d objects (system: %s)\n",
           on ? "on" : "off", kb, NOBJ, mode);
    if (getenv("SLUBMALLOC_EXPECT")) {
        check(kb >= 0, "cannot read /proc/self/smaps");
        if (on)
            check(kb > 0, "SLUBMALLOC_THP=1: no huge page holds the objects");
        else
            check(kb == 0, "SLUBMALLOC_THP=0: %ld kB of huge pages hold the objects", kb);
    }
    for (size_t i = 0; i < NOBJ; i++)
        free(objs[i]);
    return tu_finish("thp");
}
