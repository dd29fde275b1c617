/* os.c: the OS half of the platform layer (platform.h has the contract). With rseq.c, the
 * only file that makes system calls: memory, files, threads, time, random bytes, membarrier.
 * Each call is a thin wrapper, but sm_os_remap, which places a moved range. Nothing here
 * allocates, but sm_os_thread_start (pthread_create). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "platform.h"

void *sm_os_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The range [a, a + size) exactly, where nothing is mapped yet; NULL otherwise. */
static void *map_at(uintptr_t a, size_t size)
{
	void *p = mmap((void *)a, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if ((uintptr_t)p != a) { /* a kernel before 4.17 took the flag as a hint */
		munmap(p, size);
		return NULL;
	}
	return p;
}

/* Unmaps the parts of the mapping [p, p + span) outside [a, a + size) (inside it). */
static void trim_to(char *p, size_t span, char *a, size_t size)
{
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + span > a + size)
		munmap(a + size, (size_t)(p + span - (a + size)));
}

/* size bytes aligned to align (a power of two >= the OS page). The kernel places mappings
 * top down, so the next one often lies right below the last: size bytes there first; else
 * size + align bytes, trimmed at both ends; and when the address space cannot spare that
 * (RLIMIT_AS), the aligned ranges on either side of a plain mapping. */
void *sm_os_map_aligned(size_t size, size_t align)
{
	char *p = sm_os_map(size);
	if (!p)
		return NULL;
	uintptr_t down = (uintptr_t)p & ~(uintptr_t)(align - 1);
	if ((uintptr_t)p == down)
		return p;
	munmap(p, size);
	size_t span = size + align;
	if (span < size)
		return errno = ENOMEM, NULL;
	p = sm_os_map(span);
	if (!p) {
		int err = errno;
		void *q = map_at(down, size);
		if (!q)
			q = map_at(down + align, size);
		if (!q)
			errno = err;
		return q;
	}
	char *a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	trim_to(p, span, a, size);
	return a;
}

void *sm_os_reserve(size_t size)
{
	void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

bool sm_os_protect(void *p, size_t size, bool rw)
{
	return mprotect(p, size, rw ? PROT_READ | PROT_WRITE : PROT_NONE) == 0;
}

void sm_os_unmap(void *p, size_t size)
{
	munmap(p, size);
}

bool sm_os_purge(void *p, size_t size)
{
	return madvise(p, size, MADV_DONTNEED) == 0;
}

/* mincore, a chunk at a time (its vector is on the stack). p is page-aligned. A chunk is
 * small enough for one vector byte per 4 KiB: qemu-user with a guest page above the host's
 * (-p) passes the call on, and the host kernel writes a byte per host page (the count
 * is then an estimate). */
size_t sm_os_resident(const void *p, size_t size)
{
	size_t page = sm_os_page_size(), n = 0;
	unsigned char vec[1024];
	for (size_t off = 0; off < size;) {
		size_t len = size - off < sizeof vec * 4096 ? size - off : sizeof vec * 4096;
		if (mincore((char *)p + off, len, vec) == 0)
			for (size_t i = 0; i < (len + page - 1) / page; i++)
				n += vec[i] & 1;
		off += len;
	}
	return n * page;
}

/* Transparent huge pages for [p, p + size): allowed (MADV_HUGEPAGE) or refused, so that a
 * system set to "always" does not turn sparse slab pages into resident 2 MiB ones. */
void sm_os_hugepages(void *p, size_t size, bool on)
{
	madvise(p, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

/* One page table maps 2 MiB (x86-64; arm64 with 4 KiB pages). */
#define PT_SPAN ((size_t)2 << 20)

/* In place when the kernel can. Else, from 2 * PT_SPAN up, to an address at the same offset
 * within a PT_SPAN as p: the kernel then moves whole page tables, not entry by entry. Under a
 * hypervisor that shadows page tables, the first write of each page moved entry by entry
 * costs about half a page fault. errno stays as it was unless the call fails. */
void *sm_os_remap(void *p, size_t old, size_t size)
{
	int e = errno;
	void *q = mremap(p, old, size, 0);
	if (q != MAP_FAILED)
		return q;
	errno = e;
	if (old >= 2 * PT_SPAN && size <= SIZE_MAX - PT_SPAN) {
		char *r = sm_os_reserve(size + PT_SPAN);
		if (r) {
			char *d = r + (((uintptr_t)p - (uintptr_t)r) & (PT_SPAN - 1));
			q = mremap(p, old, size, MREMAP_MAYMOVE | MREMAP_FIXED, d);
			if (q != MAP_FAILED) {
				trim_to(r, size + PT_SPAN, d, size);
				return q;
			}
			munmap(r, size + PT_SPAN);
		}
		errno = e;
	}
	q = mremap(p, old, size, MREMAP_MAYMOVE);
	return q == MAP_FAILED ? NULL : q;
}

/* n bytes of code written at at: the text page is made writable for the write and
 * executable-only-again after it. Only while no other thread runs that code (the caller's
 * rule). false: the kernel refused (W^X policies). */
static bool write_code(void *at, const void *code, size_t n)
{
	uintptr_t page = sm_os_page_size(), a = (uintptr_t)at;
	uintptr_t lo = a & ~(page - 1), hi = (a + n - 1 + page) & ~(page - 1);
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC))
		return false;
	memcpy(at, code, n);
	mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
	__builtin___clear_cache((char *)at, (char *)at + n);
	return true;
}

/* A jump at from to to, written over from's first instruction bytes, which go to saved
 * (SM_PATCH_LEN of them) for sm_os_patch_undo. false: too far, or the kernel refused. */
bool sm_os_patch_jump(void *from, const void *to, uint8_t saved[SM_PATCH_LEN])
{
#if defined(__x86_64__)
	intptr_t rel = (intptr_t)to - ((intptr_t)from + 5);
	if (rel != (int32_t)rel)
		return false;
	uint8_t code[SM_PATCH_LEN] = {0xe9}; /* jmp rel32 */
	int32_t r32 = (int32_t)rel;
	memcpy(code + 1, &r32, 4);
#elif defined(__aarch64__)
	intptr_t d = (intptr_t)to - (intptr_t)from;
	if ((d & 3) || d < -(1 << 27) || d >= (1 << 27))
		return false;
	uint32_t insn = 0x14000000u | ((uint32_t)(d >> 2) & 0x03ffffffu); /* b imm26 */
	uint8_t code[SM_PATCH_LEN];
	memcpy(code, &insn, 4);
#endif
	memcpy(saved, from, SM_PATCH_LEN);
	return write_code(from, code, SM_PATCH_LEN);
}

bool sm_os_patch_undo(void *at, const uint8_t saved[SM_PATCH_LEN])
{
	return write_code(at, saved, SM_PATCH_LEN);
}

/* SIGSEGV and SIGBUS. Ours owns a signal only when the kernel raised it for a fault
 * (si_code > 0) and the hook owns the address: then the hook reports and aborts. Any other
 * signal is passed on as if our handler were not there:
 * - a signal sent by a process (kill, raise, sigqueue: si_code <= 0) carries no address, so
 *   the hook never sees it;
 * - a handler the program had before ours runs with the same arguments, under its own mask
 *   and SA_RESETHAND, SA_NODEFER;
 * - SIG_IGN ignores a sent signal; a fault is never ignored, as the kernel does;
 * - SIG_DFL: the default action is put back and the signal sent again, with its siginfo, to
 *   this thread. It is blocked here, so it arrives when this handler returns, and kills. */
static void (*fault_hook)(void *addr);
static struct sigaction fault_old[2]; /* SIGSEGV's and SIGBUS's handlers before ours */

static void set_default(int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	bool sent = si->si_code <= 0;
	if (!sent)
		fault_hook(si->si_addr);
	const struct sigaction *old = &fault_old[sig == SIGBUS];
	if (old->sa_handler == SIG_IGN && sent)
		return;
	if (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN) {
		set_default(sig);
		if (syscall(SYS_rt_tgsigqueueinfo, syscall(SYS_getpid), syscall(SYS_gettid), sig,
			    si) != 0 && sent)
			syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig);
		return; /* a fault not sent again comes again on return */
	}
	if (old->sa_flags & SA_RESETHAND)
		set_default(sig);
	pthread_sigmask(SIG_BLOCK, &old->sa_mask, NULL);
	if (old->sa_flags & SA_NODEFER) {
		sigset_t self;
		sigemptyset(&self);
		sigaddset(&self, sig);
		pthread_sigmask(SIG_UNBLOCK, &self, NULL);
	}
	if (old->sa_flags & SA_SIGINFO)
		old->sa_sigaction(sig, si, ctx);
	else
		old->sa_handler(sig);
}

void sm_os_on_fault(void (*h)(void *addr))
{
	fault_hook = h;
	struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &fault_old[0]);
	sigaction(SIGBUS, &sa, &fault_old[1]);
}

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ATOMICS
#define HWCAP_ATOMICS (1 << 8)
#endif
int sm_cpu_lse;

void sm_os_cpu_init(void)
{
	sm_cpu_lse = (getauxval(AT_HWCAP) & HWCAP_ATOMICS) != 0;
}
#else
void sm_os_cpu_init(void)
{
}
#endif

size_t sm_os_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Files are read and written with raw system calls: libc's open, read, write and close are
 * cancellation points, and a thread cancelled in one would leave the caller's locks held. */

/* n bytes to fd, retried when a signal or a short write cuts them; false on an error. */
bool sm_os_write(int fd, const void *buf, size_t n)
{
	const char *s = buf;
	while (n > 0) {
		long w = syscall(SYS_write, fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		s += w, n -= (size_t)w;
	}
	return true;
}

/* Up to size - 1 bytes of a small file (/proc, /sys), NUL-terminated; the length, or -1. */
ssize_t sm_os_read_file(const char *path, char *buf, size_t size)
{
	int saved = errno;
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	long n = -1;
	if (fd >= 0) {
		do
			n = syscall(SYS_read, (int)fd, buf, size - 1);
		while (n < 0 && errno == EINTR);
		syscall(SYS_close, (int)fd);
	}
	errno = saved;
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

int sm_os_open_log(const char *path)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			    0644);
}

int sm_os_create_new(const char *path)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path,
			    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

void sm_os_close(int fd)
{
	syscall(SYS_close, fd);
}

/* The whole of file path (a /proc file: its size is unknown until read) onto fd. */
bool sm_os_copy_file(const char *path, int fd)
{
	int saved = errno;
	long in = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	bool ok = in >= 0;
	char buf[4096];
	while (ok) {
		long n = syscall(SYS_read, (int)in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ok = n == 0;
			break;
		}
		ok = sm_os_write(fd, buf, (size_t)n);
	}
	if (in >= 0)
		syscall(SYS_close, (int)in);
	errno = saved;
	return ok;
}

int sm_os_dup(int fd)
{
	return (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
}

void sm_os_yield(void)
{
	sched_yield();
}

uint32_t sm_os_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

uint32_t sm_os_pid(void)
{
	return (uint32_t)getpid();
}

bool sm_os_barrier_register(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void sm_os_barrier_all(void)
{
	syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

static void (*thread_fn)(void);
static const char *thread_name;

static void *thread_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, thread_name, 0, 0, 0);
	thread_fn();
	return NULL;
}

bool sm_os_thread_start(void (*fn)(void), const char *name)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	if (pthread_attr_init(&attr))
		return false;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	thread_fn = fn;
	thread_name = name;
	sigfillset(&all); /* the new thread inherits the mask: no signal of the program's lands there */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&t, &attr, thread_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return e == 0;
}

int sm_os_live_threads(bool *leader_ended)
{
	char buf[4096];
	*leader_ended = false;
	if (sm_os_read_file("/proc/self/status", buf, sizeof buf) < 0)
		return -1;
	const char *p = strstr(buf, "\nThreads:"), *st = strstr(buf, "\nState:");
	if (!p || !st)
		return -1;
	for (p += 9; *p == ' ' || *p == '\t'; p++)
		;
	int n = 0;
	while (*p >= '0' && *p <= '9')
		n = n * 10 + (*p++ - '0');
	for (st += 7; *st == ' ' || *st == '\t'; st++)
		;
	if (*st == 'Z') { /* the leader ended (pthread_exit) and waits as a zombie for the rest */
		*leader_ended = true;
		n--;
	}
	return n > 0 ? n : -1;
}

bool sm_os_thread_is_main(void)
{
	return syscall(SYS_gettid) == getpid();
}

_Noreturn void sm_os_exit(int status)
{
	exit(status);
}

void sm_os_wait(int *word, int val, uint64_t timeout_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ULL),
			      .tv_nsec = (long)(timeout_ns % 1000000000ULL)};
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, timeout_ns ? &ts : NULL, NULL, 0);
}

void sm_os_wake(int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

uint64_t sm_os_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The kernel's 16 random bytes given to every process (AT_RANDOM), mixed with the clock. */
void sm_os_random(void *buf, size_t n)
{
	const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
	uint64_t x = sm_os_now_ns() ^ (uintptr_t)buf;
	unsigned char *out = buf;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		out[i] = (unsigned char)(x ^ (r ? r[i % 16] : 0));
	}
}
