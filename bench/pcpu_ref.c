/* pcpu_ref.c: per-CPU reference counts (struct pcpu_ref of slubmalloc.h) against a single
 * shared atomic counter and against per-thread counters.
 * 1. Throughput in the style of the kernel's semaphore scaling mails (seed 004): each thread
 *    takes and drops a reference in a loop for a fixed time;
 *    `<variant> Threads N: X get/put pairs in T secs` for N = 1, 2 (and 4, 8, 16 while the
 *    machine has that many CPUs). Variants: pcpu_ref (per-CPU mode, inline rseq fastpath),
 *    atomic (one shared counter, lock inc / lock dec), per-thread (each thread its own counter
 *    on its own line, plain inc / dec: the floor no shared reference count can beat).
 * 2. ns per get+put pair at 1 thread, next to a plain non-atomic increment pair (inc/dec of a
 *    memory word) and an uncontended atomic pair, measured in the same run.
 * 3. An application-shaped benchmark after tbench (seed 002: bigrefs on netdevice and
 *    dst_entry): worker threads serve requests; each request looks up a route in a shared
 *    table, takes a reference on the route and on its device, "sends" a packet (copies and
 *    checksums 256 bytes), drops both references. Atomic refcounts vs pcpu_ref, in requests/s.
 * Threads are pinned to distinct CPUs when there are enough (argument `nopin` disables it).
 * Usage: pcpu_ref [SECONDS (default 1)] [nopin]. Prints the two targets at the end. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slubmalloc.h"

enum variant { V_PCPU, V_ATOMIC, V_THREAD };
static const char *vname[] = { "pcpu_ref  ", "atomic    ", "per-thread" };

static double seconds = 1.0;
static int pin = 1, ncpu_avail, cpus[1024];
static atomic_int go, stop;

static struct pcpu_ref ref;
static struct {
	_Alignas(64) long count;
} shared;
struct pad_counter {
	_Alignas(64) long v;
	unsigned long pairs;
};
static struct pad_counter per_thread[64];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pin_self(int i, int nthreads)
{
	if (!pin || nthreads > ncpu_avail)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpus[i % ncpu_avail], &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static inline void plain_inc(long *p) { __asm__ __volatile__("incq %0" : "+m"(*p)); }
static inline void plain_dec(long *p) { __asm__ __volatile__("decq %0" : "+m"(*p)); }

struct targ {
	int id, nthreads;
	enum variant v;
	unsigned long pairs;
};

#define BATCH 1024
static void *pairs_thread(void *p)
{
	struct targ *a = p;
	pin_self(a->id, a->nthreads);
	long *mine = &per_thread[a->id].v;
	unsigned long n = 0;
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		switch (a->v) {
		case V_PCPU:
			for (int i = 0; i < BATCH; i++) {
				pcpu_ref_get(&ref);
				pcpu_ref_put(&ref);
			}
			break;
		case V_ATOMIC:
			for (int i = 0; i < BATCH; i++) {
				__atomic_fetch_add(&shared.count, 1, __ATOMIC_RELAXED);
				__atomic_fetch_sub(&shared.count, 1, __ATOMIC_RELEASE);
			}
			break;
		case V_THREAD:
			for (int i = 0; i < BATCH; i++) {
				plain_inc(mine);
				plain_dec(mine);
			}
			break;
		}
		n += BATCH;
	}
	a->pairs = n;
	return NULL;
}

/* Starts nthreads threads of fn, thread i on args + i * argsize, releases them together, lets
 * them run for `seconds`, stops and joins them; returns the elapsed seconds. */
static double run_threads(void *(*fn)(void *), void *args, size_t argsize, int nthreads)
{
	pthread_t t[64];
	atomic_store(&go, 0);
	atomic_store(&stop, 0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * argsize);
	usleep(20000);
	double t0 = now();
	atomic_store_explicit(&go, 1, memory_order_release);
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	return now() - t0;
}

/* Runs nthreads threads of variant v for `seconds`; returns pairs per second. */
static double run_pairs(enum variant v, int nthreads)
{
	struct targ a[64];
	for (int i = 0; i < nthreads; i++)
		a[i] = (struct targ){ .id = i, .nthreads = nthreads, .v = v };
	double dt = run_threads(pairs_thread, a, sizeof a[0], nthreads);
	unsigned long total = 0;
	for (int i = 0; i < nthreads; i++)
		total += a[i].pairs;
	printf("%s Threads %d: %lu get/put pairs in %.2f secs\n", vname[v], nthreads, total, dt);
	return (double)total / dt;
}

/* ns per pair, single thread, best of 5 runs of n pairs */
static double ns_per_pair(enum variant v, int atomic_pair)
{
	const long n = 50000000;
	long local = 0;
	double best = 1e9;
	for (int r = 0; r < 5; r++) {
		double t0 = now();
		if (v == V_PCPU) {
			for (long i = 0; i < n; i++) {
				pcpu_ref_get(&ref);
				pcpu_ref_put(&ref);
			}
		} else if (atomic_pair) {
			for (long i = 0; i < n; i++) {
				__atomic_fetch_add(&shared.count, 1, __ATOMIC_RELAXED);
				__atomic_fetch_sub(&shared.count, 1, __ATOMIC_RELEASE);
			}
		} else {
			for (long i = 0; i < n; i++) {
				plain_inc(&local);
				plain_dec(&local);
			}
		}
		double ns = (now() - t0) * 1e9 / (double)n;
		if (ns < best)
			best = ns;
	}
	return best;
}

/* ------------------------------ the tbench-shaped run ------------------------------ */

#define NROUTES 4
#define PKT 256
struct device {
	struct pcpu_ref pref;
	_Alignas(64) long refcnt; /* the atomic variant's count */
	char name[16];
	unsigned mtu;
};
struct route {
	struct pcpu_ref pref;
	_Alignas(64) long refcnt;
	uint32_t dst, mask;
	struct device *dev;
};
static struct device loopback;
static struct route routes[NROUTES];

static inline void route_get(struct route *r, int pc)
{
	if (pc) {
		pcpu_ref_get(&r->pref);
		pcpu_ref_get(&r->dev->pref);
	} else {
		__atomic_fetch_add(&r->refcnt, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&r->dev->refcnt, 1, __ATOMIC_RELAXED);
	}
}
static inline void route_put(struct route *r, int pc)
{
	if (pc) {
		pcpu_ref_put(&r->dev->pref);
		pcpu_ref_put(&r->pref);
	} else {
		__atomic_fetch_sub(&r->dev->refcnt, 1, __ATOMIC_RELEASE);
		__atomic_fetch_sub(&r->refcnt, 1, __ATOMIC_RELEASE);
	}
}

struct rarg {
	int id, nthreads, pc;
	unsigned long requests;
	uint32_t sink;
};

static inline __attribute__((always_inline)) unsigned long serve(struct rarg *a, int pc)
{
	unsigned char in[PKT], out[PKT];
	uint32_t seq = (uint32_t)a->id * 7919u, sum = 0;
	unsigned long n = 0;
	for (int i = 0; i < PKT; i++)
		in[i] = (unsigned char)(i * 31 + a->id);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int b = 0; b < 64; b++) {
			uint32_t dst = (seq++ * 2654435761u) >> 8;
			struct route *r = &routes[dst % NROUTES]; /* the lookup */
			route_get(r, pc);
			/* "transmit": copy the payload and checksum it */
			in[0] = (unsigned char)dst;
			memcpy(out, in, PKT);
			__asm__ __volatile__("" : : "r"(out) : "memory");
			for (int i = 0; i < PKT; i += 4)
				sum += (uint32_t)out[i] | (uint32_t)out[i + 1] << 8 |
				       (uint32_t)out[i + 2] << 16 | (uint32_t)out[i + 3] << 24;
			sum += r->dev->mtu;
			route_put(r, pc);
		}
		n += 64;
	}
	a->sink = sum;
	return n;
}

static void *request_thread(void *p)
{
	struct rarg *a = p;
	pin_self(a->id, a->nthreads);
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	a->requests = a->pc ? serve(a, 1) : serve(a, 0);
	return NULL;
}

static double run_requests(int pc, int nthreads)
{
	struct rarg a[64];
	for (int i = 0; i < nthreads; i++)
		a[i] = (struct rarg){ .id = i, .nthreads = nthreads, .pc = pc };
	double dt = run_threads(request_thread, a, sizeof a[0], nthreads);
	unsigned long total = 0;
	for (int i = 0; i < nthreads; i++)
		total += a[i].requests;
	double rps = (double)total / dt;
	printf("tbench-like %s Threads %d: %lu requests in %.2f secs = %.2f M requests/s\n",
	       pc ? "pcpu_ref" : "atomic  ", nthreads, total, dt, rps / 1e6);
	return rps;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "nopin"))
			pin = 0;
		else if (atof(argv[i]) > 0)
			seconds = atof(argv[i]);
	}
	cpu_set_t set;
	sched_getaffinity(0, sizeof set, &set);
	for (int c = 0; c < CPU_SETSIZE && ncpu_avail < 1024; c++)
		if (CPU_ISSET(c, &set))
			cpus[ncpu_avail++] = c;
	if (pcpu_ref_init(&ref, NULL, 0)) {
		fprintf(stderr, "pcpu_ref_init failed\n");
		return 1;
	}
	printf("pcpu_ref benchmark: %d usable CPUs (%d possible), %s mode, %.1f s per run, "
	       "threads %s\n", ncpu_avail, pcpu_nr_cpus(), pcpu_rseq_active() ? "rseq" : "fallback",
	       seconds, pin ? "pinned to distinct CPUs" : "not pinned");

	int nmax = ncpu_avail < 2 ? 2 : ncpu_avail;
	if (nmax > 16)
		nmax = 16;
	double tput[3][6] = { { 0 } };
	printf("\n# throughput: each thread takes and drops a reference in a loop\n");
	for (int v = 0; v < 3; v++) {
		int k = 0;
		for (int n = 1; n <= nmax; n *= 2, k++)
			tput[v][k] = run_pairs((enum variant)v, n);
	}

	printf("\n# single thread, ns per get+put pair (best of 5 x 50M)\n");
	pin_self(0, 1);
	double ns_pcpu = ns_per_pair(V_PCPU, 0);
	double ns_plain = ns_per_pair(V_THREAD, 0);
	double ns_atomic = ns_per_pair(V_ATOMIC, 1);
	printf("pcpu_ref get+put:              %.2f ns\n", ns_pcpu);
	printf("plain increment pair (inc/dec): %.2f ns\n", ns_plain);
	printf("atomic pair, uncontended:       %.2f ns\n", ns_atomic);
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int i = 0; i < ncpu_avail; i++)
		CPU_SET(cpus[i], &all);
	pthread_setaffinity_np(pthread_self(), sizeof all, &all);

	printf("\n# tbench-like: per request, a route lookup, references on the route and its "
	       "device, a %d-byte packet copied and checksummed\n", PKT);
	loopback.mtu = 65536;
	strcpy(loopback.name, "lo");
	pcpu_ref_init(&loopback.pref, NULL, 0);
	for (int i = 0; i < NROUTES; i++) {
		routes[i].dev = &loopback;
		routes[i].dst = 0x7f000000u + (uint32_t)i;
		routes[i].mask = 0xffffffffu;
		pcpu_ref_init(&routes[i].pref, NULL, 0);
	}
	double rps[2][6] = { { 0 } };
	{
		int k = 0;
		for (int n = 1; n <= nmax; n *= 2, k++) {
			rps[0][k] = run_requests(0, n);
			rps[1][k] = run_requests(1, n);
			printf("tbench-like Threads %d: pcpu_ref / atomic = %.2fx\n", n,
			       rps[1][k] / rps[0][k]);
		}
	}

	double ratio2 = tput[V_PCPU][1] / tput[V_ATOMIC][1];
	printf("\n# targets\n");
	printf("2 threads: pcpu_ref %.0f vs shared atomic %.0f pairs/s = %.1fx (target >= 5x): %s\n",
	       tput[V_PCPU][1], tput[V_ATOMIC][1], ratio2, ratio2 >= 5 ? "met" : "MISSED");
	printf("1 thread: pcpu_ref get+put %.2f ns (target <= 2 ns: %s); plain increment pair "
	       "%.2f ns, ratio %.2f (target <= 1.5: %s)\n", ns_pcpu, ns_pcpu <= 2.0 ? "met" : "missed",
	       ns_plain, ns_pcpu / ns_plain, ns_pcpu / ns_plain <= 1.5 ? "met" : "missed");
	pcpu_ref_kill(&ref);
	pcpu_ref_exit(&ref);
	return 0;
}
