/* platform.h: the platform layer's contract. Everything the engine and the per-CPU code need
 * from the compiler, the CPU and the kernel is declared here, and nowhere else.
 * The CPU part is inline, in arch_x86_64.h or arch_aarch64.h (the 16-byte CAS, the spin hint,
 * CPU features).
 * The OS part lives in os.c and rseq.c, the only files that make system calls.
 * Contract of the OS calls:
 *   - none allocates, takes a lock or is a cancellation point (raw system calls where libc's
 *     wrapper is one);
 *   - a call that fails returns NULL, false or -1, with errno as the kernel set it;
 *   - sizes are multiples of the OS page and addresses are page-aligned, unless a call says
 *     otherwise. */
#ifndef SM_PLATFORM_H
#define SM_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#if defined(__x86_64__)
#include "arch_x86_64.h"
#elif defined(__aarch64__)
#include "arch_aarch64.h"
#else
#error "slubmalloc builds for x86-64 and aarch64"
#endif

/* ---- the compiler ---- */
#define SM_EXPORT __attribute__((visibility("default")))
#define SM_COLD __attribute__((noinline, cold))
#define SM_NORETURN __attribute__((noreturn))
#define TLS_IE __attribute__((tls_model("initial-exec")))

#pragma GCC visibility push(hidden)

/* ---- memory (os.c) ---- */
void *sm_os_map(size_t size);                       /* zeroed, read-write */
void *sm_os_map_aligned(size_t size, size_t align); /* align: a power of two >= the page */
void *sm_os_reserve(size_t size);                   /* address space only: every access faults */
bool sm_os_protect(void *p, size_t size, bool rw);  /* read-write, or no access at all; false:
						     * failed (ENOMEM: too many mappings) */
void sm_os_unmap(void *p, size_t size);
bool sm_os_purge(void *p, size_t size);             /* the pages go back; the range stays and
						     * reads as zero. false: they stayed, as
						     * they were (locked: mlockall) */
size_t sm_os_resident(const void *p, size_t size);  /* bytes of [p, p + size) in memory (mincore) */
void *sm_os_remap(void *p, size_t old, size_t size); /* may move (whole page tables where it
						      * can); the pages move along */
void sm_os_hugepages(void *p, size_t size, bool on);  /* allow or refuse transparent huge pages */
size_t sm_os_page_size(void);                       /* sysconf's: 4, 16 or 64 KiB */
void sm_os_cpu_init(void);                          /* CPU features the arch header reads
						     * (aarch64: LSE atomics) */

/* ---- files and messages (os.c) ---- */
bool sm_os_write(int fd, const void *buf, size_t n);              /* all of it, or false */
ssize_t sm_os_read_file(const char *path, char *buf, size_t size); /* small files; NUL-ended */
int sm_os_open_log(const char *path);  /* for writing, created or truncated, close-on-exec */
int sm_os_create_new(const char *path); /* the same, only if it does not exist (else EEXIST) */
int sm_os_dup(int fd);                 /* a close-on-exec copy, numbered 3 or more */
void sm_os_close(int fd);
bool sm_os_copy_file(const char *path, int fd); /* all of a /proc file onto fd */

/* ---- code ---- */
/* os.c: from's first instruction becomes a jump to to (the kernel's static keys, in user
 * space), its bytes kept in saved; false: not done, from unchanged. sm_os_patch_undo writes
 * them back. No other thread may run the code at from meanwhile. */
#if defined(__x86_64__)
#define SM_PATCH_LEN 5 /* jmp rel32 */
#else
#define SM_PATCH_LEN 4 /* b imm26 */
#endif
bool sm_os_patch_jump(void *from, const void *to, uint8_t saved[SM_PATCH_LEN]);
bool sm_os_patch_undo(void *at, const uint8_t saved[SM_PATCH_LEN]);

/* ---- faults and stacks ---- */
/* os.c: on a SIGSEGV or SIGBUS that the kernel raised for a fault, call h(faulting address)
 * first. When h returns, and for a signal sent by a process, the signal goes on as if this
 * handler were not there: to the handler the program had before, or its disposition. */
void sm_os_on_fault(void (*h)(void *addr));
/* unwind.c: up to max return addresses of the calling thread, the innermost skip frames left
 * out; returns how many. from: NULL, or __builtin_frame_address(0) of a function the caller
 * was called from: the walk may start at that function's return address (cfi.c does). */
int sm_os_backtrace(void **out, int max, int skip, const void *from);
/* cfi.c: the same from cached frame rules (x86-64), for callers that serialize their calls;
 * -1: a frame it does not handle (libgcc's unwinder does) */
int sm_cfi_backtrace(void **out, int max, int skip, const void *from);
/* unwind.c: the file of the module ip lies in, and ip's offset from its base; NULL: none */
const char *sm_os_module(const void *ip, uintptr_t *offset);

/* ---- threads and time (os.c) ---- */
void sm_os_yield(void);
uint32_t sm_os_tid(void);
uint32_t sm_os_pid(void);
uint64_t sm_os_now_ns(void);           /* monotonic, coarse */
void sm_os_random(void *buf, size_t n); /* not for cryptography: hardening keys */
/* membarrier(PRIVATE_EXPEDITED): the first call registers and says whether it works; then each
 * sm_os_barrier_all() runs a full barrier on every running thread of the process. */
bool sm_os_barrier_register(void);
void sm_os_barrier_all(void);
/* A detached thread that runs fn, every signal blocked, named name (15 characters at most).
 * One thread at a time. The only call of this layer that allocates (pthread_create): the
 * caller holds no engine lock, since those mallocs come back into the engine. */
bool sm_os_thread_start(void (*fn)(void), const char *name);
/* The process's threads that have not ended (/proc/self/status: a leader that ended waits as
 * a zombie, and is not counted, and *leader_ended says so), or -1 when it cannot be read. */
int sm_os_live_threads(bool *leader_ended);
bool sm_os_thread_is_main(void); /* the calling thread is the process's first (its leader) */
/* Ends the process as its last thread's end does in glibc: exit(status), atexit handlers and
 * stdio's flush included. */
_Noreturn void sm_os_exit(int status);
/* Sleep while *word is val: until sm_os_wake(word), at most timeout_ns (0: no limit). */
void sm_os_wait(int *word, int val, uint64_t timeout_ns);
void sm_os_wake(int *word);

/* ---- rseq and the CPU number, for the per-CPU code (rseq.c) ---- */
extern int pcpu_ncpus;               /* possible CPUs, set by pcpu_setup() */
void pcpu_setup(void);               /* once: CPU count, then rseq with membarrier, or the
				      * fallback */
int pcpu_fallback_cpu(void);         /* sched_getcpu(), within [0, pcpu_ncpus) */
void pcpu_grace_period(void);        /* rseq mode: membarrier(PRIVATE_EXPEDITED_RSEQ) */
void pcpu_rseq_check_thread(void);   /* rseq mode: abort if this thread has no rseq area */

#pragma GCC visibility pop

#endif
