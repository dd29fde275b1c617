/* unit_unwind: cfi.c's cached stack walker gives the same return addresses as libgcc's
 * unwinder (_Unwind_Backtrace), from stacks built -O2 without frame pointers: deep recursion,
 * frames addressed from rbp (a variable-length array), calls through libc (qsort), a thread,
 * each twice (the second walk reads the cache), and from a caller's frame address. From a
 * signal handler it must give up (-1),
 * and sm_os_backtrace must then still match libgcc. On aarch64 it always gives up. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "check.h"
#include "platform.h"

#define MAXF 64

struct walk {
	void **out;
	int n, max;
};

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);
	if (!ip)
		return _URC_END_OF_STACK;
	w->out[w->n++] = (void *)ip;
	return w->n == w->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static int walks, given_up;
static volatile int in_signal;

/* Both walks from here: [0] lies in this function for both (after different calls); the rest
 * must be equal. */
static __attribute__((noinline)) void compare_here(const char *what, int min_depth)
{
	void *a[MAXF], *b[MAXF], *c[MAXF];
	int n = sm_cfi_backtrace(a, MAXF, 0, NULL);
	struct walk w = {b, 0, MAXF};
	_Unwind_Backtrace(step, &w);
#if defined(__x86_64__)
	if (in_signal) {
		CHECK(n == -1, "%s: the walker went through a signal frame (%d frames)", what, n);
		int m = sm_os_backtrace(c, MAXF, 0, NULL);
		CHECK(m == w.n, "%s: sm_os_backtrace %d frames, libgcc %d", what, m, w.n);
		for (int i = 1; i < m; i++)
			CHECK(c[i] == b[i], "%s: frame %d: %p, libgcc %p", what, i, c[i], b[i]);
		given_up++;
		return;
	}
	CHECK(n >= 0, "%s: the walker gave up", what);
	CHECK(n == w.n, "%s: %d frames, libgcc %d", what, n, w.n);
	CHECK(n >= min_depth, "%s: %d frames, expected %d or more", what, n, min_depth);
	for (int i = 1; i < n; i++)
		CHECK(a[i] == b[i], "%s: frame %d: %p, libgcc %p", what, i, a[i], b[i]);
	/* max and skip */
	int k = sm_cfi_backtrace(c, 3, 0, NULL);
	CHECK(k == 3 && c[1] == b[1] && c[2] == b[2], "%s: max 3 gave %d frames", what, k);
	k = sm_cfi_backtrace(c, MAXF, 2, NULL);
	CHECK(k == n - 2, "%s: skip 2 gave %d frames of %d", what, k, n);
	for (int i = 0; i < k; i++)
		CHECK(c[i] == b[i + 2], "%s: skip 2, frame %d: %p, libgcc %p", what, i, c[i], b[i + 2]);
	/* from this function's frame: its caller's frames, as libgcc's after [0] */
	k = sm_cfi_backtrace(c, MAXF, 0, __builtin_frame_address(0));
	CHECK(k == n - 1, "%s: from the frame address gave %d frames of %d", what, k, n);
	for (int i = 0; i < k; i++)
		CHECK(c[i] == b[i + 1], "%s: from, frame %d: %p, libgcc %p", what, i, c[i], b[i + 1]);
#else
	CHECK(n == -1, "%s: the walker does not run on this processor", what);
	(void)c, (void)min_depth;
#endif
	walks++;
}

static volatile size_t sink;
static void (*volatile indirect)(int, int);

/* kind 0: a fixed frame (CFA from rsp); 1: a variable-length array (CFA from rbp); 2: a call
 * through a function pointer. */
static __attribute__((noinline)) void rec(int depth, int kind)
{
	if (depth == 0) {
		compare_here("recursion", 10);
		return;
	}
	if (kind == 1) {
		char vla[64 + depth * 8];
		memset(vla, depth, sizeof vla);
		sink += (size_t)vla[depth];
		rec(depth - 1, (depth + kind) % 3);
		sink += (size_t)vla[depth + 1];
	} else if (kind == 2) {
		indirect(depth - 1, (depth + kind) % 3);
		sink++;
	} else {
		volatile char buf[200];
		buf[depth % 200] = (char)depth;
		rec(depth - 1, (depth + kind) % 3);
		sink += (size_t)buf[depth % 200];
	}
}

static int by_value(const void *x, const void *y)
{
	static int once;
	if (!once++)
		compare_here("qsort", 4);
	return *(const int *)x - *(const int *)y;
}

static void on_signal(int sig)
{
	(void)sig;
	in_signal = 1;
	compare_here("signal handler", 1);
	in_signal = 0;
}

static void *thread_main(void *arg)
{
	(void)arg;
	rec(20, 0);
	rec(21, 1);
	return NULL;
}

int main(void)
{
	indirect = rec;
	for (int round = 0; round < 2; round++) { /* the second: from the cache */
		for (int kind = 0; kind < 3; kind++)
			rec(30 + kind, kind);
		int v[64];
		for (int i = 0; i < 64; i++)
			v[i] = (i * 37) % 64;
		qsort(v, 64, sizeof v[0], by_value);
		pthread_t t;
		CHECK(pthread_create(&t, NULL, thread_main, NULL) == 0, "pthread_create");
		pthread_join(t, NULL);
		signal(SIGUSR1, on_signal);
		raise(SIGUSR1);
	}
	printf("unit_unwind: %d walks equal to libgcc's, %d given up in a signal handler\n", walks,
	       given_up);
	return 0;
}
