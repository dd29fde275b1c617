/* rseq.c: the per-CPU half of the platform layer (platform.h): the number of possible CPUs,
 * the once-made choice between the rseq fastpaths and the fallback, membarrier registration
 * and the grace period, and the fallback's CPU number.
 * The choice (slub_pcpu_rseq) is made once, by pcpu_setup(), before any per-CPU area exists:
 * rseq mode needs glibc's rseq registration (__rseq_size > 0, cpu_id >= 0 in this thread) and
 * membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) to succeed; anything else selects
 * the fallback, which needs neither. glibc registers rseq for every thread it creates, before
 * user code runs, so a thread without a registered area in rseq mode is an error (reported). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "slubmalloc.h"

#include "platform.h"

SM_EXPORT int slub_pcpu_rseq; /* read by the inline code of slubmalloc.h */
int pcpu_ncpus = 1;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

static void warn(const char *msg)
{
	static const char pre[] = "slubmalloc: ";
	sm_os_write(2, pre, sizeof pre - 1);
	sm_os_write(2, msg, strlen(msg));
	sm_os_write(2, "\n", 1);
}

/* The highest CPU number in /sys/devices/system/cpu/possible ("0-3,8-11"), plus one; 0 if
 * it cannot be read. No allocation, no stdio. */
static int possible_cpus(void)
{
	char buf[512];
	if (sm_os_read_file("/sys/devices/system/cpu/possible", buf, sizeof buf) <= 0)
		return 0;
	long max = -1, v = 0;
	int digits = 0;
	for (const char *s = buf;; s++) {
		if (*s >= '0' && *s <= '9') {
			if (v < 1000000)
				v = v * 10 + (*s - '0');
			digits = 1;
			continue;
		}
		if (digits && v > max)
			max = v;
		v = 0, digits = 0;
		if (!*s)
			break;
	}
	return (int)(max + 1);
}

static int this_thread_rseq_cpu(void)
{
	int c;
#if defined(__x86_64__)
	__asm__ __volatile__("movl %%fs:4(%1), %0" : "=r"(c) : "r"(__rseq_offset));
#else
	c = -1; /* the rseq sections are x86-64's: elsewhere the fallback, chosen at run time */
#endif
	return c;
}

static long membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

static void setup(void)
{
	int n = possible_cpus();
	long conf = sysconf(_SC_NPROCESSORS_CONF); /* (reads /sys; no allocation) */
	if (conf > n && conf < 1000000)
		n = (int)conf;
	pcpu_ncpus = n > 0 ? n : 1;

	int ok = __rseq_size >= 16 && this_thread_rseq_cpu() >= 0;
	if (ok) {
		long q = membarrier(MEMBARRIER_CMD_QUERY);
		ok = q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) &&
		     membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
	}
	__atomic_store_n(&slub_pcpu_rseq, ok, __ATOMIC_RELEASE);
}

void pcpu_setup(void)
{
	pthread_once(&setup_once, setup);
}

/* Every thread of the process that is inside an rseq critical section when this is called
 * has it restarted, and every thread has passed a full memory barrier, before it returns. */
void pcpu_grace_period(void)
{
	for (int tries = 0;; tries++) {
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) == 0)
			return;
		if (errno == EINTR || errno == EAGAIN)
			continue;
		/* a forked child may not inherit the registration: register it again */
		if (errno == EPERM && tries < 3 &&
		    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0)
			continue;
		warn("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) failed; "
			  "a per-CPU mode switch cannot be made safe");
		abort();
	}
}

void pcpu_rseq_check_thread(void)
{
	if (this_thread_rseq_cpu() < 0) {
		warn("this thread has no registered rseq area, but the per-CPU "
			  "fastpaths are in rseq mode");
		abort();
	}
}

int pcpu_fallback_cpu(void)
{
	int c = sched_getcpu();
	if (c < 0)
		c = 0;
	if (c >= pcpu_ncpus)
		c %= pcpu_ncpus;
	return c;
}
