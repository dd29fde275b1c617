/* many_large: 40,000 large blocks live at once must all be allocated, as glibc allocates them.
 * The kernel caps a process's mappings (vm.max_map_count, 65530 by default). With guard pages
 * on every block, each block took two mappings (neighbours' guards merge): near 32,700 blocks
 * the process reached the cap. Then every mmap of the program's own failed (a thread's stack,
 * a file, a library), and each new block cost failed system calls (stress-ng's malloc
 * stressor lost a third of its mmap calls). So at the peak a one-page mapping of the
 * program's own must still succeed.
 * Under slubmalloc the first blocks, allocated while few are live, keep their guard page:
 * a write just past the first block faults (checked in a child; the library reports the
 * fault and aborts). The mappings at the peak stay
 * well below the cap. Every other block freed, then allocated again, leaves as many mappings:
 * a freed range unmapped inside a mapping would split it (stress-ng's workers reached the cap
 * so). Each block's first word is written and checked before it is freed.
 * Then, all freed and trimmed, slubmalloc keeps much of that address space as retained ranges,
 * merged across the blocks' old mappings: 1 MiB blocks cut from them are written, grown to
 * 3 MiB by realloc (mremap of a range over two mappings fails: the block is copied) and read
 * back; and calloc of 8 MiB from them reads as zero. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

enum { NBLOCK = 40000, BLOCK = 136 << 10 };

static long mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    int c;
    if (!f)
        return -1;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* Does a write one byte past the block b (BLOCK bytes, a whole number of pages) fault? The
 * child dies of SIGSEGV, or of SIGABRT once the library has reported the fault. */
static int guard_after(char *b)
{
    pid_t pid = fork();
    if (pid == 0) {
        ((volatile char *)b)[BLOCK] = 1;
        _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return 0;
    return WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGABRT);
}

int main(void)
{
    char **v = calloc(NBLOCK, sizeof *v);
    check(v != NULL, "calloc of the table failed");
    if (!v)
        return tu_finish("many_large");
    long got = 0;
    for (long i = 0; i < NBLOCK; i++) {
        v[i] = malloc(BLOCK);
        if (!v[i]) {
            int err = errno;
            check(0, "malloc(%d) number %ld of %d failed (%s), %ld mappings", BLOCK, i,
                  NBLOCK, strerror(err), mappings());
            break;
        }
        memcpy(v[i], &i, sizeof i);
        got++;
    }
    long maps = mappings();
    printf("many_large: %ld blocks of %d bytes live, %ld mappings\n", got, BLOCK, maps);
    check(maps >= 0 && maps < 30000, "%ld mappings at the peak", maps);
    void *own = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (check(own != MAP_FAILED, "the program's own mmap failed at the peak (%s)", strerror(errno)))
        munmap(own, 4096);
    if (dlsym(RTLD_DEFAULT, "slub_cache_create") && got)
        check(guard_after(v[0]), "a write past the first block did not fault");
    /* every other block freed: the holes must not split the mappings */
    for (long i = 1; i < got; i += 2)
        free(v[i]);
    long holes = mappings();
    check(holes >= 0 && holes < maps + 1000,
          "%ld mappings with every other block freed (%ld at the peak)", holes, maps);
    for (long i = 1; i < got; i += 2) {
        v[i] = malloc(BLOCK);
        if (!check(v[i] != NULL, "malloc(%d) into hole %ld failed", BLOCK, i)) {
            got = i;
            break;
        }
        memcpy(v[i], &i, sizeof i);
    }
    long refill = mappings();
    printf("many_large: %ld mappings with every other block freed, %ld with them allocated "
           "again\n", holes, refill);
    check(refill >= 0 && refill < maps + 1000,
          "%ld mappings once the holes were allocated again (%ld at the peak)", refill, maps);
    for (long i = 0; i < got; i++) {
        long w;
        memcpy(&w, v[i], sizeof w);
        check(w == i, "block %ld holds %ld", i, w);
        free(v[i]);
    }
    free(v);

    enum { NREUSE = 400, SMALL = 1 << 20, GROWN = 3 << 20 };
    static unsigned char *w[NREUSE];
    malloc_trim(0);
    for (int i = 0; i < NREUSE; i++) {
        w[i] = malloc(SMALL);
        if (!check(w[i] != NULL, "malloc(1 MiB) number %d after the trim failed", i))
            break;
        tu_fill(w[i], 0, SMALL, (unsigned)i);
    }
    long bad = 0;
    for (int i = 0; i < NREUSE && w[i]; i++) {
        unsigned char *g = realloc(w[i], GROWN);
        if (!check(g != NULL, "realloc(1 MiB -> 3 MiB) number %d failed", i))
            break;
        w[i] = g;
        bad += tu_verify(g, 0, SMALL, (unsigned)i) != (size_t)-1;
    }
    check(bad == 0, "%ld of %d blocks lost their bytes when grown", bad, NREUSE);
    unsigned char *z = calloc(1, 8 << 20);
    if (check(z != NULL, "calloc(8 MiB) failed")) {
        size_t nz = 0;
        for (size_t i = 0; i < (8u << 20); i++)
            nz += z[i] != 0;
        check(nz == 0, "calloc(8 MiB) over freed ranges: %zu bytes not zero", nz);
    }
    free(z);
    for (int i = 0; i < NREUSE; i++)
        free(w[i]);
    printf("many_large: %d blocks of 1 MiB after the trim, grown to 3 MiB, kept their bytes\n",
           NREUSE);
    return tu_finish("many_large");
}
