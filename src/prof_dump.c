/* prof_dump.c: the heap profile, in gperftools' heap-profile text format, which
 * google-pprof, pprof and flame-graph tools read:
 *     heap profile: <in use: objects>: <bytes> [<allocated: objects>: <bytes>] @ heap_v2/<R>
 *     <objects>: <bytes> [<objects>: <bytes>] @ 0x<pc> 0x<pc> ...      (one line per stack)
 *     (empty line)
 *     MAPPED_LIBRARIES:
 *     <the contents of /proc/self/maps>
 * The figures are the sampled ones. heap_v2/R tells the readers that a request of n bytes was
 * sampled with probability 1 - e^(-n/R), so they scale each line by 1 / (1 - e^(-avg/R)).
 * Written at exit (a destructor) to SLUBMALLOC_PROF_FILE, by default slubmalloc.<pid>.heap in
 * the working directory; by slub_prof_dump(path) at any time; and with
 * SLUBMALLOC_PROF_INTERVAL=B, about every B bytes allocated, to <file>.<n>.heap.
 * It allocates nothing: numbers are formatted into a buffer on the stack and written with
 * write(2). The counts are copied out of the table one stack at a time, under its lock, and
 * written without it. A child of fork has a table of its own: the parent's samples, then its
 * own, and its own pid in the default name. */
#include <errno.h>

#include "internal.h"

struct out {
	int fd;
	bool ok;
	size_t n;
	char buf[4096];
};

static void flush(struct out *o)
{
	if (o->n && !sm_os_write(o->fd, o->buf, o->n))
		o->ok = false;
	o->n = 0;
}

static void put(struct out *o, const char *s)
{
	for (; *s; s++) {
		if (o->n == sizeof o->buf)
			flush(o);
		o->buf[o->n++] = *s;
	}
}

static void put_num(struct out *o, uint64_t v, int base)
{
	char d[24];
	int k = 0;
	do
		d[k++] = "0123456789abcdef"[v % (unsigned)base];
	while ((v /= (unsigned)base));
	char s[24];
	for (int i = 0; i < k; i++)
		s[i] = d[k - 1 - i];
	s[k] = 0;
	put(o, s);
}

static void put_counts(struct out *o, uint64_t n1, uint64_t b1, uint64_t n2, uint64_t b2)
{
	put_num(o, n1, 10);
	put(o, ": ");
	put_num(o, b1, 10);
	put(o, " [");
	put_num(o, n2, 10);
	put(o, ": ");
	put_num(o, b2, 10);
	put(o, "]");
}

static uint64_t pos(int64_t v)
{
	return v > 0 ? (uint64_t)v : 0;
}

/* The profile onto fd; false when a write failed. */
static bool write_profile(int fd)
{
	struct out o = {.fd = fd, .ok = true};
	uint32_t n = sm_prof_nstacks();
	uint64_t t[4] = {0, 0, 0, 0};
	struct prof_stack s;
	for (uint32_t id = 1; id <= n; id++) {
		sm_prof_counts(id, &s);
		t[0] += pos(s.inuse_n), t[1] += pos(s.inuse_bytes);
		t[2] += s.alloc_n, t[3] += s.alloc_bytes;
	}
	put(&o, "heap profile: ");
	put_counts(&o, t[0], t[1], t[2], t[3]);
	put(&o, " @ heap_v2/");
	put_num(&o, sm_opt.prof_sample, 10);
	put(&o, "\n");
	for (uint32_t id = 1; id <= n; id++) {
		sm_prof_counts(id, &s);
		put_counts(&o, pos(s.inuse_n), pos(s.inuse_bytes), s.alloc_n, s.alloc_bytes);
		put(&o, " @");
		for (uint32_t i = 0; i < s.depth; i++) {
			put(&o, " 0x");
			put_num(&o, (uintptr_t)s.pc[i], 16);
		}
		put(&o, "\n");
	}
	put(&o, "\nMAPPED_LIBRARIES:\n");
	flush(&o);
	return o.ok && sm_os_copy_file("/proc/self/maps", fd);
}

/* base, or "slubmalloc.<pid>" when base is empty, then ".<seq>" when seq, then ".heap"
 * unless base was given and seq is 0. */
static void file_name(char *out, size_t cap, const char *base, uint64_t seq)
{
	struct out o = {.fd = -1};
	if (*base) {
		put(&o, base);
	} else {
		put(&o, "slubmalloc.");
		put_num(&o, sm_os_pid(), 10);
	}
	if (seq) {
		put(&o, ".");
		put_num(&o, seq, 10);
	}
	if (!*base || seq)
		put(&o, ".heap");
	size_t n = o.n < cap - 1 ? o.n : cap - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = o.buf[i];
	out[n] = 0;
}

int sm_prof_dump(const char *path)
{
	if (!sm_opt.prof)
		return errno = ENOENT, -1;
	char name[sizeof sm_opt.prof_file + 32];
	if (!path || !*path) {
		file_name(name, sizeof name, sm_opt.prof_file, 0);
		path = name;
	}
	int fd = sm_os_open_log(path);
	if (fd < 0)
		return -1;
	bool ok = write_profile(fd);
	sm_os_close(fd);
	return ok ? 0 : (errno = EIO, -1);
}

/* SLUBMALLOC_PROF_INTERVAL: each sample stands for R bytes allocated on average, so a dump
 * every interval / R samples. */
void sm_prof_after_sample(void)
{
	static uint64_t samples, seq;
	if (!sm_opt.prof_interval)
		return;
	uint64_t every = sm_opt.prof_interval / sm_opt.prof_sample;
	uint64_t n = __atomic_add_fetch(&samples, 1, __ATOMIC_RELAXED);
	if (n % (every ? every : 1))
		return;
	char name[sizeof sm_opt.prof_file + 32];
	file_name(name, sizeof name, sm_opt.prof_file, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	int saved = errno;
	sm_prof_dump(name);
	errno = saved;
}

__attribute__((destructor)) static void dump_at_exit(void)
{
	if (sm_opt.prof) {
		int saved = errno;
		if (sm_prof_dump(NULL) < 0) {
			sm_write(2, "slubmalloc: warning: the heap profile could not be written\n");
		}
		errno = saved;
	}
}
