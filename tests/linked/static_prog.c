/* static_prog: linked with `cc -static static_prog.c -lslubmalloc -lpthread` (static_link.sh).
 * Its malloc family must be slubmalloc's: it uses the API of include/slubmalloc.h too, and
 * static_link.sh checks SLUBMALLOC_STATS=1's output. Exits 0 when every block kept its bytes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slubmalloc.h>

static void *worker(void *arg)
{
    long bad = 0;
    for (int i = 0; i < 100000; i++) {
        size_t n = (size_t)(i % 700) + 1;
        unsigned char *p = malloc(n);
        if (!p)
            return (void *)1;
        memset(p, i & 0xff, n);
        bad += p[n - 1] != (unsigned char)(i & 0xff);
        free(p);
    }
    (void)arg;
    return (void *)bad;
}

int main(void)
{
    int bad = 0;
    char *s = malloc(100);
    strcpy(s, "static");
    char *big = calloc(1, 1 << 20);
    bad += !big || big[12345] != 0;
    char *r = realloc(s, 5000);
    bad += !r || strcmp(r, "static") != 0;
    void *a = NULL;
    bad += posix_memalign(&a, 4096, 100) != 0 || ((uintptr_t)a & 4095);
    void *p[64];
    bad += malloc_bulk(32, 64, p) != 64;
    free_bulk(64, p);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        bad += ret != NULL;
    }
    struct slub_stats st;
    slub_stats_get(&st, NULL, 0);
    bad += st.bytes_in_use == 0;
    printf("static_prog: %s, %zu bytes in use, %zu caches\n", bad ? "FAILED" : "ok",
           st.bytes_in_use, st.ncaches);
    free(r);
    free(big);
    free(a);
    return bad != 0;
}
