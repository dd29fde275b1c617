/* tight_as: a program whose address space is capped (RLIMIT_AS) a little above what it uses,
 * as glibc's tst-dynarray-fail caps it (2 MiB of room), must still allocate within that room:
 * thousands of small strings, a buffer grown by realloc to 1 MiB, and, once memory has run
 * out (NULL with ENOMEM, never a crash), the same again after everything is freed. Before the
 * cap the program has freed and trimmed everything, so an allocator that gives all its
 * regions back, or that needs a whole new region for each size, finds no room. Then, with
 * more room, large blocks freed and cached must not keep small ones out of it. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fault_util.h"
#include "test_util.h"

enum { NSTR = 10000, ROOM = 2 << 20 };
/* the second part: large blocks up to BIG_ROOM, then SMALL_AFTER small ones (about 20 MiB) */
enum { BIG_ROOM = 48 << 20, BIG_SIZE = 4 << 20, BIG_MAX = 16, SMALL_AFTER = 100000 };

static long vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0;
    if (f) {
        if (fscanf(f, "%ld", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return pages * sysconf(_SC_PAGESIZE);
}

static char *strs[NSTR];

/* The work that must fit in the room. */
static void work(const char *when)
{
    int n = 0;
    for (; n < NSTR; n++)
        if (!(strs[n] = strdup("placeholder")))
            break;
    check(n == NSTR, "%s: strdup failed after %d strings (errno %d)", when, n, errno);
    char *buf = NULL;
    size_t len = 0;
    while (len < (1 << 20)) {
        char *b = realloc(buf, len + 4096);
        if (!check(b != NULL, "%s: realloc to %zu failed (errno %d)", when, len + 4096, errno))
            break;
        memset(b + len, 'x', 4096);
        buf = b, len += 4096;
    }
    for (size_t i = 0; i < len; i += 4096)
        if (!check(buf[i] == 'x', "%s: buffer byte %zu lost", when, i))
            break;
    free(buf);
    for (int i = 0; i < n; i++) {
        check(strcmp(strs[i], "placeholder") == 0, "%s: string %d changed", when, i);
        free(strs[i]);
    }
}

int main(void)
{
    fu_expect_slub("tight_as");
    fu_watchdog("tight_as", 120);
    /* a heap that was used and given back */
    void **v = malloc(50000 * sizeof *v);
    for (int i = 0; i < 50000; i++)
        v[i] = malloc((size_t)(i % 97) * 16 + 8);
    for (int i = 0; i < 50000; i++)
        free(v[i]);
    free(v);
    malloc_trim(0);

    struct rlimit rl = {(rlim_t)(vm_bytes() + ROOM), RLIM_INFINITY};
    if (!check(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit"))
        return tu_finish("tight_as");
    printf("tight_as: RLIMIT_AS %ld bytes\n", (long)rl.rlim_cur);
    work("first");

    /* exhaust it: every failure is NULL with ENOMEM */
    struct node {
        struct node *next;
        char pad[200];
    } *head = NULL;
    long got = 0;
    for (;;) {
        errno = 0;
        struct node *x = malloc(sizeof *x);
        if (!x) {
            check(errno == ENOMEM, "malloc failed with errno %d", errno);
            break;
        }
        x->next = head, head = x, got++;
    }
    printf("tight_as: %ld blocks of %zu bytes before ENOMEM\n", got, sizeof *head);
    check(got > 1000, "only %ld blocks fit in the room", got);
    while (head) {
        struct node *x = head->next;
        free(head);
        head = x;
    }
    work("after running out");

    /* large blocks freed fill the large cache, which keeps their address space: when a new
     * region for small blocks does not fit, the cache must give it back */
    rl.rlim_cur = (rlim_t)(vm_bytes() + BIG_ROOM);
    if (!check(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit"))
        return tu_finish("tight_as");
    void *big[BIG_MAX];
    int nbig = 0;
    for (; nbig < BIG_MAX; nbig++)
        if (!(big[nbig] = malloc(BIG_SIZE)))
            break;
    check(nbig >= 6, "only %d large blocks of %d MiB fit in %d MiB", nbig, BIG_SIZE >> 20,
          BIG_ROOM >> 20);
    for (int i = 0; i < nbig; i++)
        free(big[i]);
    got = 0;
    for (; got < SMALL_AFTER; got++) {
        struct node *x = malloc(sizeof *x);
        if (!x)
            break;
        x->next = head, head = x;
    }
    printf("tight_as: %d large blocks freed, then %ld of %d small blocks\n", nbig, got,
           SMALL_AFTER);
    check(got == SMALL_AFTER, "after %d large blocks were freed, only %ld of %d small blocks "
          "(errno %d)", nbig, got, SMALL_AFTER, errno);
    while (head) {
        struct node *x = head->next;
        free(head);
        head = x;
    }
    return tu_finish("tight_as");
}
