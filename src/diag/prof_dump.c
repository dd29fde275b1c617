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
 * %p in SLUBMALLOC_PROF_FILE is the pid. An automatic dump never writes over a file that
 * another process made: a wrapper (sh, timeout, env) that is preloaded too ends after its
 * child, and its profile goes beside the child's (open_own).
 * It allocates nothing: numbers are formatted into a buffer on the stack and written with
 * write(2). The counts are copied out of the table one stack at a time, under its lock, and
 * written without it. A child of fork has a table of its own: the parent's samples, then its
 * own, and its own pid in the default name. */
#include <errno.h>
#include <string.h>

#include "diag.h"
#include "lock.h"
#include "options.h"
#include "platform.h"
#include "prof.h"
#include "report.h"
#include "types.h"

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

/* base (its %p the pid, %% a %), or "slubmalloc.<pid>" when base is empty, then ".<seq>"
 * when seq, then ".heap" unless base was given and seq is 0. */
static void file_name(char *out, size_t cap, const char *base, uint64_t seq)
{
	struct out o = {.fd = -1};
	if (*base) {
		for (const char *p = base; *p; p++) {
			char c[2] = {*p, 0};
			if (p[0] == '%' && p[1] == 'p')
				put_num(&o, sm_os_pid(), 10), p++;
			else if (p[0] == '%' && p[1] == '%')
				put(&o, "%"), p++;
			else
				put(&o, c);
		}
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

#define NAME_CAP (sizeof sm_opt.prof_file + 64)

/* The file of an automatic dump (at exit, by interval): this process's own, never another's.
 * The default name (mine), once this process created it, is written again. A name that exists
 * and is not this process's (a wrapper's child wrote it, or an earlier run) stays: the profile
 * goes beside it, with the pid before its ".heap", and a line on stderr says where. An
 * interval's name is used once. */
static sm_lock_t own_lock; /* fork does not take it: a child starts with it free */

void sm_prof_dump_after_fork(void)
{
	sm_unlock(&own_lock);
}

static int open_own(const char *name, bool mine)
{
	static char asked[NAME_CAP], got[NAME_CAP]; /* the default name, and the file it went to */
	static int32_t owner;                        /* the pid that made got */
	char alt[NAME_CAP + 24];
	int32_t pid = sm_os_pid();
	sm_lock(&own_lock);
	int fd;
	if (mine && owner == pid && !strcmp(asked, name)) {
		fd = sm_os_open_log(got);
		sm_unlock(&own_lock);
		return fd;
	}
	const char *path = name;
	fd = sm_os_create_new(name);
	if (fd < 0 && errno == EEXIST) {
		struct out o = {.fd = -1};
		size_t len = strlen(name);
		bool heap = len > 5 && !strcmp(name + len - 5, ".heap");
		for (size_t i = 0; i < len - (heap ? 5 : 0); i++) {
			char c[2] = {name[i], 0};
			put(&o, c);
		}
		put(&o, ".");
		put_num(&o, (uint64_t)pid, 10);
		if (heap)
			put(&o, ".heap");
		memcpy(alt, o.buf, o.n < sizeof alt - 1 ? o.n : sizeof alt - 1);
		alt[o.n < sizeof alt - 1 ? o.n : sizeof alt - 1] = 0;
		path = alt;
		fd = sm_os_open_log(alt);
		if (fd >= 0) {
			sm_write(2, "slubmalloc: ");
			sm_write(2, name);
			sm_write(2, " is not this process's; its heap profile goes to ");
			sm_write(2, alt);
			sm_write(2, "\n");
		}
	}
	if (mine && fd >= 0 && strlen(name) < sizeof asked && strlen(path) < sizeof got) {
		owner = pid;
		strcpy(asked, name);
		strcpy(got, path);
	}
	sm_unlock(&own_lock);
	return fd;
}

static int dump_to(int fd)
{
	if (fd < 0)
		return -1;
	bool ok = write_profile(fd);
	sm_os_close(fd);
	return ok ? 0 : (errno = EIO, -1);
}

/* path: written there, as the caller asks. NULL: SLUBMALLOC_PROF_FILE's name, this process's
 * own (open_own). */
int sm_prof_dump(const char *path)
{
	if (!sm_opt.prof)
		return errno = ENOENT, -1;
	if (path && *path)
		return dump_to(sm_os_open_log(path));
	char name[NAME_CAP];
	file_name(name, sizeof name, sm_opt.prof_file, 0);
	return dump_to(open_own(name, true));
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
	char name[NAME_CAP];
	file_name(name, sizeof name, sm_opt.prof_file, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	int saved = errno;
	dump_to(open_own(name, false));
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
