/* glibc_interpose: memory crossing the libc boundary must work with the replacement malloc:
 * libc allocating/reallocating and the program freeing (getline/getdelim growing a buffer, strdup,
 * strndup, asprintf, open_memstream, scandir), the program allocating and libc reallocating
 * (getline starting from our own malloc'd buffer), libc-internal allocations (fopen/fclose, qsort's
 * temporary buffer, regcomp/regexec, setenv), and fork/waitpid with allocation in the child.
 * The whole sequence runs in the main thread, then in two concurrent threads. Results verified. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

struct rec {
    uint32_t key;
    uint32_t id;
    char pad[56]; /* big elements make glibc's qsort allocate a temporary buffer */
};

static int cmp_rec(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key ? 1 : (x->id > y->id) - (x->id < y->id);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t line_len(int i)
{
    /* lengths from 0 to ~200 KB so getline must grow its buffer repeatedly */
    return (size_t)(i % 17 == 0 ? (i * 7919) % 200000 : (i * 31) % 700);
}

static char line_char(int i, size_t j)
{
    return (char)('a' + (i + (int)(j % 26)) % 26);
}

static void test_getline(const char *tag)
{
    char path[] = "/tmp/slub_getline_XXXXXX";
    int fd = mkstemp(path);
    if (!check(fd >= 0, "%s: mkstemp: %s", tag, strerror(errno)))
        return;
    FILE *f = fdopen(fd, "w");
    if (!check(f != NULL, "%s: fdopen", tag)) {
        close(fd);
        unlink(path);
        return;
    }
    enum { LINES = 400 };
    for (int i = 0; i < LINES; i++) {
        size_t n = line_len(i);
        for (size_t j = 0; j < n; j++)
            fputc(line_char(i, j), f);
        fputc('\n', f);
    }
    check(fclose(f) == 0, "%s: fclose after writing", tag);

    for (int pass = 0; pass < 2; pass++) {
        f = fopen(path, "r");
        if (!check(f != NULL, "%s: fopen for reading", tag))
            break;
        char *buf = NULL;
        size_t cap = 0;
        if (pass == 1) { /* start from our own small malloc'd buffer: libc must realloc it */
            cap = 16;
            buf = malloc(cap);
        }
        for (int i = 0; i < LINES; i++) {
            ssize_t got = pass == 0 ? getline(&buf, &cap, f) : getdelim(&buf, &cap, '\n', f);
            size_t n = line_len(i);
            if (!check(got == (ssize_t)n + 1, "%s: getline line %d returned %zd, expected %zu", tag, i, got, n + 1))
                break;
            check(cap >= n + 1, "%s: getline capacity %zu < %zu", tag, cap, n + 1);
            for (size_t j = 0; j < n; j++)
                if (buf[j] != line_char(i, j)) {
                    check(0, "%s: getline line %d byte %zu wrong", tag, i, j);
                    break;
                }
        }
        check(getline(&buf, &cap, f) == -1, "%s: getline at EOF did not return -1", tag);
        free(buf);
        fclose(f);
    }
    unlink(path);
}

static void test_stdio_and_strings(const char *tag)
{
    /* fopen/fclose churn, each FILE gets a libc-allocated buffer */
    for (int i = 0; i < 300; i++) {
        FILE *f = fopen("/dev/null", i % 2 ? "w" : "r");
        if (!check(f != NULL, "%s: fopen /dev/null", tag))
            break;
        if (i % 2)
            fprintf(f, "%d %s\n", i, tag);
        else
            check(fgetc(f) == EOF, "%s: read from /dev/null", tag);
        check(fclose(f) == 0, "%s: fclose", tag);
    }
    FILE *f = fopen("/proc/self/status", "r");
    if (check(f != NULL, "%s: fopen /proc/self/status", tag)) {
        char line[512];
        int found = 0;
        while (fgets(line, sizeof line, f))
            found |= strncmp(line, "Name:", 5) == 0;
        check(found, "%s: /proc/self/status has no Name: line", tag);
        fclose(f);
    }

    /* strdup / strndup / asprintf: allocated by libc, freed here */
    enum { NS = 5000 };
    char **strs = malloc(NS * sizeof *strs);
    if (!check(strs != NULL, "%s: malloc", tag))
        return;
    char src[600];
    for (int i = 0; i < NS; i++) {
        int len = (i * 37) % 590;
        for (int j = 0; j < len; j++)
            src[j] = (char)('A' + (i * 3 + j) % 26);
        src[len] = 0;
        if (i % 3 == 0)
            strs[i] = strdup(src);
        else if (i % 3 == 1)
            strs[i] = strndup(src, (size_t)len / 2 + 1);
        else if (asprintf(&strs[i], "%s", src) < 0)
            strs[i] = NULL;
        if (!check(strs[i] != NULL, "%s: strdup/strndup/asprintf returned NULL", tag))
            continue;
        size_t want = i % 3 == 1 ? (size_t)len / 2 + 1 : (size_t)len;
        if (want > (size_t)len)
            want = (size_t)len;
        check(strlen(strs[i]) == want && strncmp(strs[i], src, want) == 0, "%s: string %d content", tag, i);
    }
    /* qsort of the strings, verify order */
    qsort(strs, NS, sizeof *strs, cmp_str);
    for (int i = 1; i < NS; i++)
        if (strs[i - 1] && strs[i] && strcmp(strs[i - 1], strs[i]) > 0) {
            check(0, "%s: qsort of strings not sorted at %d", tag, i);
            break;
        }
    for (int i = 0; i < NS; i++)
        free(strs[i]);
    free(strs);

    /* qsort of large records (glibc allocates a temporary array for the merge sort) */
    enum { NR = 200000 };
    struct rec *r = malloc(NR * sizeof *r);
    if (check(r != NULL, "%s: malloc records", tag)) {
        uint64_t rng = 42;
        uint64_t sum = 0;
        for (uint32_t i = 0; i < NR; i++) {
            r[i].key = (uint32_t)(tu_rand(&rng) % 100000);
            r[i].id = i;
            memset(r[i].pad, (int)(i & 0x7f), sizeof r[i].pad);
            sum += r[i].key;
        }
        qsort(r, NR, sizeof *r, cmp_rec);
        uint64_t sum2 = 0;
        for (uint32_t i = 0; i < NR; i++) {
            sum2 += r[i].key;
            if (i && cmp_rec(&r[i - 1], &r[i]) > 0) {
                check(0, "%s: qsort of records not sorted at %u", tag, i);
                break;
            }
            if (r[i].pad[55] != (char)(r[i].id & 0x7f)) {
                check(0, "%s: qsort corrupted record %u", tag, i);
                break;
            }
        }
        check(sum == sum2, "%s: qsort lost records", tag);
        free(r);
    }

    /* open_memstream: libc reallocs the buffer, we free it */
    char *ms = NULL;
    size_t mslen = 0;
    FILE *m = open_memstream(&ms, &mslen);
    if (check(m != NULL, "%s: open_memstream", tag)) {
        for (int i = 0; i < 20000; i++)
            fprintf(m, "%05d,", i);
        fclose(m);
        check(mslen == 20000 * 6 && ms && strncmp(ms + 6 * 12345, "12345,", 6) == 0,
              "%s: open_memstream content (len %zu)", tag, mslen);
        free(ms);
    }

    /* regcomp/regexec: lots of small libc-internal allocations */
    for (int i = 0; i < 200; i++) {
        regex_t re;
        char pat[64];
        snprintf(pat, sizeof pat, "^([a-z]+)-%d-(x|y)+$", i);
        if (!check(regcomp(&re, pat, REG_EXTENDED) == 0, "%s: regcomp %s", tag, pat))
            continue;
        char subj[64];
        snprintf(subj, sizeof subj, "abc-%d-xyx", i);
        regmatch_t mt[3];
        check(regexec(&re, subj, 3, mt, 0) == 0 && mt[1].rm_eo == 3, "%s: regexec %s", tag, subj);
        snprintf(subj, sizeof subj, "abc-%d-xz", i);
        check(regexec(&re, subj, 0, NULL, 0) == REG_NOMATCH, "%s: regexec should not match %s", tag, subj);
        regfree(&re);
    }

    /* scandir: libc allocates the array and the entries, we free them */
    struct dirent **list = NULL;
    int nd = scandir("/proc/self/fd", &list, NULL, alphasort);
    if (check(nd >= 3, "%s: scandir returned %d", tag, nd)) {
        for (int i = 0; i < nd; i++)
            free(list[i]);
        free(list);
    }
}

static void test_env(void)
{
    /* setenv grows environ with realloc inside libc (main thread only: not thread-safe) */
    char name[32], val[64];
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "SLUB_TEST_VAR_%d", i);
        snprintf(val, sizeof val, "value-%d", i * i);
        check(setenv(name, val, 1) == 0, "setenv %s", name);
    }
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "SLUB_TEST_VAR_%d", i);
        snprintf(val, sizeof val, "value-%d", i * i);
        const char *g = getenv(name);
        check(g && strcmp(g, val) == 0, "getenv %s", name);
        unsetenv(name);
    }
}

static void test_fork(const char *tag)
{
    for (int i = 0; i < 20; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (!check(pid >= 0, "%s: fork: %s", tag, strerror(errno)))
            return;
        if (pid == 0) {
            alarm(30);
            int bad = 0;
            char *s = strdup("child string");
            char *big = malloc(1 << 20);
            if (!s || !big)
                exit(2);
            memset(big, 7, 1 << 20);
            char *t = NULL;
            if (asprintf(&t, "%s %d", s, i) < 0 || strncmp(t, "child string ", 13) != 0)
                bad = 1;
            for (int k = 0; k < 1000; k++) {
                void *p = malloc((size_t)(k * 13 % 4000) + 1);
                if (!p)
                    exit(2);
                free(p);
            }
            free(t);
            free(s);
            free(big);
            exit(bad ? 3 : 10 + i % 5);
        }
        int st = 0;
        pid_t w;
        do
            w = waitpid(pid, &st, 0);
        while (w < 0 && errno == EINTR);
        check(w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 10 + i % 5,
              "%s: fork child %d: waitpid %ld status 0x%x (expected exit %d)", tag, i, (long)w, st, 10 + i % 5);
    }
}

static void *thread_main(void *arg)
{
    const char *tag = arg;
    test_getline(tag);
    test_stdio_and_strings(tag);
    test_fork(tag);
    return NULL;
}

int main(void)
{
    alarm(200);
    test_env();
    thread_main("main thread");
    pthread_t t[2];
    static const char *const tags[2] = { "thread 1", "thread 2" };
    for (int i = 0; i < 2; i++)
        check(pthread_create(&t[i], NULL, thread_main, (void *)tags[i]) == 0, "pthread_create");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return tu_finish("glibc_interpose");
}
