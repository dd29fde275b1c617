/* fuzz_ops.c: libFuzzer harness for slubmalloc's malloc family. The input bytes decode into a
 * sequence of operations on a table of 64 slots: malloc, calloc (zeroing checked), realloc,
 * memalign / aligned_alloc / posix_memalign / valloc / pvalloc, free, malloc_bulk into a run
 * of slots, free_bulk of a run, frees and allocations made by a helper thread (remote frees,
 * blocks of another thread's slabs), a short-lived thread that allocates and exits, and the
 * documented failure contracts (overflowing calloc, impossible sizes, bad alignments).
 * Sizes cover tiny sizes, every class boundary (class size - 1, = and + 1, up to 128 KiB),
 * the small/large boundary and large blocks up to 4 MiB; live memory stays under LIVE_MAX.
 *
 * It is linked with slubmalloc's engine (tests/fuzz/meson.build), so malloc and friends ARE
 * slubmalloc's; LLVMFuzzerInitialize checks that (the block lies in one of slubmalloc's regions
 * and malloc(1) has its 16-byte class) and refuses to run otherwise.
 *
 * The shadow model, which checks every block the harness gets (no overlap, alignment, usable
 * size, calloc zeroing, contents intact, failure contracts), is in fuzz_shadow.c. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_shadow.h"
#include "config.h"
#include "region.h"
#include "sizeclass.h"
#include "slubmalloc.h"

#define LARGE_TOP (4UL << 20)      /* largest block asked for */
#define RUN_MAX 16                 /* slots per bulk / remote run */

static size_t class_sizes[NCLASS];
static size_t page_size;

/* memalign called through a pointer, without the header's alloc_align attribute: the compiler
 * and UBSan must not assume a result aligned to an alignment that is not a power of two. */
static void *(*volatile memalign_any)(size_t, size_t) = memalign;

/* ---- input decoding: reads past the end give zeros ---- */
struct input {
	const uint8_t *p;
	size_t n;
};

static unsigned u8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static unsigned u16(struct input *in)
{
	unsigned lo = u8(in);
	return lo | u8(in) << 8;
}

static size_t u24(struct input *in)
{
	size_t lo = u16(in);
	return lo | (size_t)u8(in) << 16;
}

/* A requested size: tiny, small, a class boundary, medium, around MAX_SMALL, or large. */
static size_t decode_size(struct input *in)
{
	switch (u8(in) % 8) {
	case 0:
		return u8(in) % 33; /* 0 .. 32 */
	case 1:
		return u8(in) + 1;
	case 2:
		return u16(in) % 4096 + 1;
	case 3: { /* class size - 1, class size, class size + 1 */
		size_t c = class_sizes[u8(in) % NCLASS];
		return c - 1 + u8(in) % 3;
	}
	case 4:
		return u16(in) % 32768 + 1;
	case 5:
		return u24(in) % (MAX_SMALL + 8192) + 1;
	case 6: /* straddling the small / large boundary */
		return MAX_SMALL - 32 + u8(in) % 64;
	default: { /* up to 128 KiB << (0 .. 5) above MAX_SMALL: mostly below 1 MiB */
		size_t top = (LARGE_TOP - MAX_SMALL) >> (5 - u8(in) % 6);
		return MAX_SMALL + 1 + u24(in) * 4 % top;
	}
	}
}

/* ---- the helper thread: remote frees and blocks from another thread's slabs ---- */
enum job_kind { JOB_NONE, JOB_FREE, JOB_FREE_BULK, JOB_MALLOC, JOB_MALLOC_BULK };
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum job_kind kind;
	size_t n, size;
	void *ptrs[RUN_MAX];
	size_t got;
} job = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, JOB_NONE, 0, 0, { 0 }, 0 };
static pthread_t helper;
static int helper_ok;

static void do_job(enum job_kind kind)
{
	switch (kind) {
	case JOB_FREE:
		for (size_t i = 0; i < job.n; i++)
			free(job.ptrs[i]);
		break;
	case JOB_FREE_BULK:
		free_bulk(job.n, job.ptrs);
		break;
	case JOB_MALLOC:
		job.got = 0;
		for (size_t i = 0; i < job.n; i++)
			if ((job.ptrs[i] = malloc(job.size)))
				job.got++;
		break;
	case JOB_MALLOC_BULK:
		job.got = malloc_bulk(job.size, job.n, job.ptrs);
		break;
	default:
		break;
	}
}

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&job.mu);
	for (;;) { /* lives as long as the process */
		while (job.kind == JOB_NONE)
			pthread_cond_wait(&job.cv, &job.mu);
		do_job(job.kind);
		job.kind = JOB_NONE;
		pthread_cond_broadcast(&job.cv);
	}
	return NULL;
}

/* A thread that does one job and exits (its thread cache is torn down while the blocks it
 * allocated live on). */
static void *oneshot_main(void *arg)
{
	do_job(*(enum job_kind *)arg);
	return NULL;
}

/* Runs the job on the helper thread, or on a fresh thread that then exits, and waits. */
static void run_job(enum job_kind kind, int fresh_thread)
{
	if (fresh_thread || !helper_ok) {
		pthread_t t;
		if (pthread_create(&t, NULL, oneshot_main, &kind) == 0)
			pthread_join(t, NULL);
		else
			do_job(kind);
		return;
	}
	pthread_mutex_lock(&job.mu);
	job.kind = kind;
	pthread_cond_broadcast(&job.cv);
	while (job.kind != JOB_NONE)
		pthread_cond_wait(&job.cv, &job.mu);
	pthread_mutex_unlock(&job.mu);
}

/* ---- the operations ---- */
enum op {
	OP_MALLOC, OP_CALLOC, OP_REALLOC, OP_MEMALIGN, OP_FREE, OP_MALLOC_BULK, OP_FREE_BULK,
	OP_CHECK, OP_REMOTE_FREE, OP_REMOTE_ALLOC, OP_EXITING_THREAD, OP_ERRORS, OP_MALLOC2,
	OP_FREE2, NOP
};

static void op_malloc(struct input *in, int s)
{
	size_t n = decode_size(in);
	free_slot(s);
	if (!room_for(n))
		return;
	void *p = malloc(n);
	if (!p)
		violation("malloc(%zu) returned NULL", n);
	adopt(s, p, n, 0, 0, "malloc");
}

static void op_calloc(struct input *in, int s)
{
	size_t n = decode_size(in);
	size_t elem = 1u << (u8(in) % 5); /* 1 .. 16 */
	size_t count = n / elem + 1;
	free_slot(s);
	if (!room_for(count * elem))
		return;
	void *p = calloc(count, elem);
	if (!p)
		violation("calloc(%zu, %zu) returned NULL", count, elem);
	adopt(s, p, count * elem, 0, count * elem, "calloc");
}

static void op_realloc(struct input *in, int s)
{
	size_t n = decode_size(in);
	struct slot *sl = &slots[s];
	if (!sl->p) {
		if (!room_for(n))
			return;
		void *p = realloc(NULL, n);
		if (!p)
			violation("realloc(NULL, %zu) returned NULL", n);
		adopt(s, p, n, 0, 0, "realloc(NULL)");
		return;
	}
	check_intact(s, "before realloc");
	if (n == 0) { /* glibc's contract: frees the block, returns NULL */
		void *old = release(s, "realloc to 0");
		void *p = realloc(old, 0);
		if (p)
			violation("realloc(%p, 0) returned %p, expected NULL", old, p);
		return;
	}
	if (!room_for(n + sl->usable))
		return;
	struct slot was = *sl;
	live_bytes -= sl->usable;
	sl->p = NULL; /* the old block may be reused by the new one */
	unsigned char *p = realloc(was.p, n);
	if (!p)
		violation("realloc(%p, %zu) returned NULL", (void *)was.p, n);
	size_t keep = was.req < n ? was.req : n;
	size_t bad = verify_block(p, was.usable, keep, was.seed);
	if (bad != SIZE_MAX)
		violation("realloc(%p [requested %zu], %zu) -> %p lost byte %zu of the %zu kept",
			  (void *)was.p, was.req, n, (void *)p, bad, keep);
	adopt(s, p, n, 0, 0, "realloc");
}

static void op_memalign(struct input *in, int s)
{
	size_t n = decode_size(in);
	unsigned v = u8(in);
	size_t align = (size_t)1 << (u8(in) % 22); /* 1 .. 2 MiB */
	free_slot(s);
	if (!room_for(n + align))
		return;
	void *p = NULL;
	size_t req = n, want = align;
	switch (v % 6) {
	case 0:
		p = memalign(align, n);
		break;
	case 1:
		p = aligned_alloc(align, n);
		break;
	case 2: {
		if (align < sizeof(void *))
			align = want = sizeof(void *);
		int rc = posix_memalign(&p, align, n);
		if (rc)
			violation("posix_memalign(%zu, %zu) failed: %d", align, n, rc);
		break;
	}
	case 3: /* an alignment that is not a power of two is rounded up (glibc 2.36) */
		align = (u16(in) % 8192) | 1;
		want = 1;
		while (want < align)
			want <<= 1;
		if (!room_for(n + want))
			return;
		p = memalign_any(align, n);
		break;
	case 4:
		want = page_size;
		p = valloc(n);
		break;
	default:
		want = page_size;
		req = n ? (n + page_size - 1) / page_size * page_size : page_size;
		if (!room_for(req))
			return;
		p = pvalloc(n);
		break;
	}
	if (!p)
		violation("aligned allocation (variant %u, align %zu, size %zu) returned NULL", v % 6,
			  align, n);
	adopt(s, p, req, want, 0, "memalign");
}

static void op_free(int s)
{
	free_slot(s);
}

/* A run of slots [s, s + n) inside the table. */
static size_t run_len(struct input *in, int s)
{
	size_t n = 1 + u8(in) % RUN_MAX;
	return n > (size_t)(NSLOT - s) ? (size_t)(NSLOT - s) : n;
}

static void op_malloc_bulk(struct input *in, int s)
{
	size_t size = decode_size(in);
	size_t n = run_len(in, s);
	for (size_t i = 0; i < n; i++)
		free_slot(s + (int)i);
	if (size > 256 * 1024)
		size = size % (256 * 1024); /* a run of 16 stays far below LIVE_MAX */
	if (!room_for(n * (size + 16)))
		return;
	void *ptrs[RUN_MAX];
	size_t got = malloc_bulk(size, n, ptrs);
	if (got != n)
		violation("malloc_bulk(%zu, %zu) returned %zu", size, n, got);
	for (size_t i = 0; i < n; i++) {
		if (!ptrs[i])
			violation("malloc_bulk(%zu, %zu): entry %zu is NULL", size, n, i);
		adopt(s + (int)i, ptrs[i], size, 0, 0, "malloc_bulk");
	}
}

static void op_free_bulk(struct input *in, int s)
{
	size_t n = run_len(in, s);
	void *ptrs[RUN_MAX];
	for (size_t i = 0; i < n; i++) /* empty slots give NULL entries, which are skipped */
		ptrs[i] = slots[s + i].p ? release(s + (int)i, "free_bulk") : NULL;
	free_bulk(n, ptrs);
}

static void op_check(int s)
{
	struct slot *sl = &slots[s];
	if (!sl->p)
		return;
	size_t u = malloc_usable_size(sl->p);
	if (u != sl->usable)
		violation("malloc_usable_size(%p) changed from %zu to %zu", (void *)sl->p, sl->usable,
			  u);
	check_intact(s, "check");
}

/* The helper thread (or a thread that then exits) frees a run of blocks, or allocates them. */
static void op_remote_free(struct input *in, int s, int fresh)
{
	size_t n = run_len(in, s);
	int bulk = u8(in) & 1;
	job.n = 0;
	for (size_t i = 0; i < n; i++)
		if (slots[s + i].p)
			job.ptrs[job.n++] = release(s + (int)i, "remote free");
	if (job.n)
		run_job(bulk ? JOB_FREE_BULK : JOB_FREE, fresh);
}

static void op_remote_alloc(struct input *in, int s, int fresh)
{
	size_t size = decode_size(in);
	size_t n = run_len(in, s);
	int bulk = u8(in) & 1;
	for (size_t i = 0; i < n; i++)
		free_slot(s + (int)i);
	if (size > 256 * 1024)
		size = size % (256 * 1024);
	if (!room_for(n * (size + 16)))
		return;
	job.n = n;
	job.size = size;
	run_job(bulk ? JOB_MALLOC_BULK : JOB_MALLOC, fresh);
	if (job.got != n)
		violation("%s(%zu) x %zu on another thread gave %zu blocks", bulk ? "malloc_bulk" :
			  "malloc", size, n, job.got);
	for (size_t i = 0; i < n; i++)
		adopt(s + (int)i, job.ptrs[i], size, 0, 0, "remote malloc");
}

/* The failure contracts: nothing is allocated, errno says why, live blocks are untouched. */
static void op_errors(struct input *in, int s)
{
	static volatile size_t ptrdiff_max = PTRDIFF_MAX; /* opaque: no compile-time size warning */
	size_t huge = ptrdiff_max + 1 + u16(in);
	void *p;
	switch (u8(in) % 6) {
	case 0:
		errno = 0;
		expect_fail(malloc(huge), ENOMEM, "malloc(huge)");
		break;
	case 1: {
		size_t elem = 2 + u8(in) % 7;
		errno = 0;
		expect_fail(calloc(SIZE_MAX / elem + 1, elem), ENOMEM, "calloc(overflowing)");
		break;
	}
	case 2:
		if (slots[s].p) {
			errno = 0;
			expect_fail(realloc(slots[s].p, huge), ENOMEM, "realloc(p, huge)");
			check_intact(s, "after a failed realloc");
		}
		break;
	case 3: {
		void *out = &p; /* must stay untouched */
		p = out;
		size_t align = u8(in) % 2 ? sizeof(void *) * 3 : sizeof(void *) / 2; /* bad ones */
		int rc = posix_memalign(&p, align, 16);
		if (rc != EINVAL)
			violation("posix_memalign(%zu) returned %d, expected EINVAL", align, rc);
		if (p != out)
			violation("posix_memalign(%zu) failed but wrote its result", align);
		break;
	}
	case 4:
		errno = 0;
		expect_fail(memalign_any((size_t)1 << 63 | 1, 16), EINVAL, "memalign(2^63 + 1)");
		break;
	default:
		errno = 0;
		expect_fail(aligned_alloc(64, huge), ENOMEM, "aligned_alloc(64, huge)");
		break;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	for (unsigned c = 0; c < NCLASS; c++)
		class_sizes[c] = sm_class_size(c);
	/* malloc must be slubmalloc's: its block lies in a region of ours, malloc(1) gets the
	 * 16-byte class (glibc: 24), and free_bulk takes it. */
	void *p = malloc(100), *q = malloc(1);
	if (!p || !region_is_ours((uintptr_t)p) || malloc_usable_size(q) != 16) {
		fprintf(stderr, "fuzz_ops: malloc is not slubmalloc's (%p, usable %zu): the harness "
			"must be linked with the engine\n", p, q ? malloc_usable_size(q) : 0);
		abort();
	}
	void *two[2] = { p, q };
	free_bulk(2, two);
	inject_init();
	helper_ok = pthread_create(&helper, NULL, helper_main, NULL) == 0;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	while (in.n) {
		unsigned op = u8(&in) % NOP;
		int s = (int)(u8(&in) % NSLOT);
		switch (op) {
		case OP_MALLOC:
		case OP_MALLOC2:
			op_malloc(&in, s);
			break;
		case OP_CALLOC:
			op_calloc(&in, s);
			break;
		case OP_REALLOC:
			op_realloc(&in, s);
			break;
		case OP_MEMALIGN:
			op_memalign(&in, s);
			break;
		case OP_FREE:
		case OP_FREE2:
			op_free(s);
			break;
		case OP_MALLOC_BULK:
			op_malloc_bulk(&in, s);
			break;
		case OP_FREE_BULK:
			op_free_bulk(&in, s);
			break;
		case OP_CHECK:
			op_check(s);
			break;
		case OP_REMOTE_FREE:
			op_remote_free(&in, s, 0);
			break;
		case OP_REMOTE_ALLOC:
			op_remote_alloc(&in, s, 0);
			break;
		case OP_EXITING_THREAD:
			if (u8(&in) & 1)
				op_remote_alloc(&in, s, 1);
			else
				op_remote_free(&in, s, 1);
			break;
		default:
			op_errors(&in, s);
			break;
		}
	}
	/* every input starts from an empty table */
	for (int s = 0; s < NSLOT; s++)
		free_slot(s);
	if (live_bytes)
		violation("shadow model lost track: %zu live bytes with no live slot", live_bytes);
	return 0;
}
