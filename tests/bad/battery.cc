/* battery: the classic heap bugs, one per run, each at three sizes (8 bytes: a small class;
 * 4 KiB: a page-sized class; 256 KiB: a large block). `battery list` prints the case names;
 * `battery NAME` runs one. tests/bad/battery.sh runs them all under an allocator and counts.
 * A case that survives its bug prints one line on stdout and exits 0:
 *   NOT_CAUGHT <why>  the program found what an attacker hopes for (its write landed in a live
 *                     block, the freed block came straight back, old bytes were readable, ...);
 *   HARMLESS <why>    the allocator made the bug harmless (memory zeroed or poisoned, the freed
 *                     block not handed back at once, the attacker's pointer never returned).
 * An abort or a fault (the allocator reported it, or a guard page stopped it) ends the run by a
 * signal: the runner counts that as caught.
 * Not linked with an allocator; built with -O0 -fno-builtin, and the bad pointers pass through
 * volatile objects, so that every bad access stays in the binary. */
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <alloca.h>
#include <unistd.h>

namespace {

void *hide(void *p)
{
	void *volatile v = p;
	return v;
}

size_t hide_size(size_t n)
{
	volatile size_t v = n;
	return v;
}

void (*volatile free_v)(void *) = free;
void *(*volatile memcpy_v)(void *, const void *, size_t) = memcpy;
void *(*volatile memmove_v)(void *, const void *, size_t) = memmove;
void *(*volatile memset_v)(void *, int, size_t) = memset;
extern "C" void *__memcpy_chk(void *, const void *, size_t, size_t);
void *(*volatile memcpy_chk_v)(void *, const void *, size_t, size_t) = __memcpy_chk;

int verdict(bool bad, const char *why_bad, const char *why_ok)
{
	printf("%s %s\n", bad ? "NOT_CAUGHT" : "HARMLESS", bad ? why_bad : why_ok);
	return 0;
}

int survived(const char *what)
{
	return verdict(true, what, "");
}

const size_t MIB = 1 << 20;
unsigned char src_bytes[MIB]; /* memcpy's source for the 1 MiB overflows */
alignas(64) unsigned char target[(256 << 10) + 64]; /* the attacker's chosen address */

/* ---- overflow and underflow: k bytes past the end or before the start, then free ---- */
int overrun(size_t n, size_t k, bool under, bool by_memcpy)
{
	unsigned char *p = (unsigned char *)hide(malloc(n));
	unsigned char *at = under ? p - k : p + n;
	memset(src_bytes, 'A', k);
	if (by_memcpy) {
		memcpy_v(at, src_bytes, k);
	} else {
		for (size_t i = 0; i < k; i++)
			((volatile unsigned char *)at)[i] = 'A';
	}
	free_v(p);
	void *q = malloc(n); /* a second call, for allocators that check a neighbour */
	free_v(q);
	return survived(under ? "underflow went unnoticed" : "overflow went unnoticed");
}

/* ---- the same with no free afterwards: only a check at the write or at exit sees them ---- */
enum { BY_HAND, BY_MEMCPY, BY_MEMMOVE, BY_MEMSET, BY_MEMCPY_CHK, NWAYS };
const char *const way_name[NWAYS] = {"direct", "memcpy", "memmove", "memset", "memcpy_chk"};

/* k bytes past the end (from inside the block: n + k bytes from its start), or before the
 * start (k bytes ending at it); the program then exits. A call (memcpy, ...) must be caught
 * at the call: the program leaves by _exit, so no check at exit sees it. */
int overrun_nofree(size_t n, size_t k, bool under, int way)
{
	unsigned char *p = (unsigned char *)hide(malloc(n));
	unsigned char *at = under ? p - k : p;
	size_t len = under ? k : n + k;
	memset(src_bytes, 'A', k);
	switch (way) {
	case BY_MEMCPY: memcpy_v(at, src_bytes, len); break;
	case BY_MEMMOVE: memmove_v(at, src_bytes, len); break;
	case BY_MEMSET: memset_v(at, 'A', len); break;
	case BY_MEMCPY_CHK: memcpy_chk_v(at, src_bytes, len, (size_t)-1); break;
	default:
		for (size_t i = under ? 0 : n; i < len; i++)
			((volatile unsigned char *)at)[i] = 'A';
	}
	survived(under ? "an underflow with no free went unnoticed"
		       : "an overflow with no free went unnoticed");
	if (way != BY_HAND)
		_exit(0);
	return 0;
}

/* ---- use after free ---- */
/* A write after free that no later malloc or free reaches: the program exits. */
int uaf_write_nofree(size_t n)
{
	unsigned char *p = (unsigned char *)hide(malloc(n));
	free_v(p);
	for (size_t i = 0; i < 8; i++)
		((volatile unsigned char *)p)[i] = 'A';
	return survived("a write after free went unnoticed");
}


/* The freed block's first word set to an address the attacker chose: does a malloc return it? */
int uaf_write(size_t n)
{
	void **p = (void **)hide(malloc(n));
	free_v(p);
	p[0] = target;
	p[1] = target;
	void *a = malloc(n), *b = malloc(n), *c = malloc(n);
	bool hit = a == (void *)target || b == (void *)target || c == (void *)target;
	return verdict(hit, "malloc returned the attacker's address",
		       "malloc never returned the attacker's address");
}

/* Write through the stale pointer after a malloc of the same size: does it land in the block's
 * new owner? */
int uaf_write_between(size_t n)
{
	unsigned char *p = (unsigned char *)hide(malloc(n));
	free_v(p);
	unsigned char *q = (unsigned char *)malloc(n);
	memset(q, 0, n);
	memset_v(p, 'A', 16);
	bool hit = q[0] == 'A';
	return verdict(hit, "the stale write landed in the new owner's block",
		       "the new owner's block kept its bytes");
}

/* ---- zero-size blocks ---- */
int zero_read()
{
	volatile unsigned char *p = (unsigned char *)hide(malloc(0));
	unsigned char c = p[0];
	(void)c;
	return survived("a zero-size block was readable");
}

int zero_write()
{
	unsigned char *p = (unsigned char *)hide(malloc(0));
	memset_v(p, 'A', 16);
	free_v(p);
	void *q = malloc(0);
	free_v(q);
	return survived("16 bytes written to a zero-size block went unnoticed");
}

int zero_uaf_read()
{
	volatile unsigned char *p = (unsigned char *)hide(malloc(0));
	free_v((void *)p);
	unsigned char c = p[0];
	(void)c;
	return survived("a freed zero-size block was readable");
}

/* ---- reuse: is the block freed last handed back at once? ---- */
int reuse(size_t n, bool smaller, bool by_realloc)
{
	size_t m = smaller ? (n > 8 ? n / 2 : 4) : n;
	void *o = by_realloc ? malloc(1) : nullptr;
	void *p = hide(malloc(n));
	free_v(p);
	void *q = by_realloc ? realloc(o, m) : malloc(m);
	return verdict(q == p, "the freed block came straight back",
		       "the freed block was not handed back at once");
}

/* ---- memory contents ---- */
int not_zeroed(size_t n)
{
	unsigned char *p = (unsigned char *)hide(malloc(n));
	memset(p, 0xaa, n);
	free_v(p);
	unsigned char *q = (unsigned char *)malloc(n);
	bool seen = false;
	for (size_t i = 0; i < n; i++)
		seen |= q[i] == 0xaa;
	return verdict(seen, "malloc handed out an old block's bytes", "no old bytes handed out");
}

/* Reads of a freed block: are its old bytes left (not_cleared), or, with zeros, does it read
 * as anything but zeros (uaf_read_zero: zero on free)? */
int read_freed(size_t n, bool zeros)
{
	unsigned char *p = (unsigned char *)hide(malloc(n));
	memset(p, 0xaa, n);
	free_v(p);
	size_t seen = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = ((volatile unsigned char *)p)[i];
		seen += zeros ? b != 0 : b == 0xaa;
	}
	if (zeros)
		return verdict(seen > 0, "a freed block read as other than zeros",
			       "the freed block read as zeros");
	return verdict(seen > 0, "a freed block's bytes stayed readable", "freed bytes were cleared");
}

/* ---- double free ---- */
int double_now(size_t n)
{
	void *p = hide(malloc(n));
	free_v(p);
	free_v(p);
	return survived("double free went unnoticed");
}

int double_interleaved(size_t n)
{
	void *a = hide(malloc(n)), *b = malloc(n);
	free_v(a);
	free_v(b);
	free_v(a);
	return survived("free(a); free(b); free(a) went unnoticed");
}

int double_delayed(size_t n)
{
	void *p = hide(malloc(n));
	void *other[20];
	free_v(p);
	for (int i = 0; i < 20; i++) /* another size: p itself is not handed out again */
		other[i] = malloc(64);
	for (int i = 0; i < 20; i++)
		free(other[i]);
	free_v(p);
	return survived("a delayed double free went unnoticed");
}

/* The block is freed, handed out again and freed by its new owner; then the stale pointer is
 * freed once more. */
int double_reused(size_t n)
{
	void *p = hide(malloc(n));
	free_v(p);
	void *q = malloc(n);
	free_v(q);
	free_v(p);
	return survived("a double free after reuse went unnoticed");
}

/* ---- invalid free ---- */
int bad_free(size_t n, int kind)
{
	char *p = (char *)hide(malloc(n));
	void *bad = nullptr;
	switch (kind) {
	case 0: bad = p + (n >= 32 ? 16 : n / 2); break; /* just inside */
	case 1: bad = p + n; break;                       /* just past */
	case 2: bad = p + (1ul << 30); break;             /* far from any block */
	case 3: bad = p + 1; break;                       /* unaligned */
	}
	free_v(bad);
	return survived("an invalid free went unnoticed");
}

int free_stack()
{
	char buf[64];
	free_v(buf + 16);
	return survived("free of a stack address went unnoticed");
}

int free_alloca()
{
	free_v(hide(alloca(64)));
	return survived("free of an alloca block went unnoticed");
}

/* ---- C++ ---- */
int delete_new_array_char()
{
	char *p = (char *)hide(new char[64]);
	delete p;
	return survived("delete of a new[] block went unnoticed");
}

int delete_new_array_string()
{
	std::string *p = (std::string *)hide(new std::string[4]);
	delete p;
	return survived("delete of a new std::string[] went unnoticed");
}

int delete_array_new_char()
{
	char *p = (char *)hide(new char);
	delete[] p;
	return survived("delete[] of a new block went unnoticed");
}

int delete_array_new_string()
{
	std::string *p = (std::string *)hide(new std::string("slubmalloc"));
	delete[] p;
	return survived("delete[] of a new std::string went unnoticed");
}

/* `delete (struct of 72 bytes *)new char[n]`: the sized delete says 72 bytes. */
struct s72 {
	char bytes[72];
};

int sized_delete_type(size_t n)
{
	s72 *p = (s72 *)hide(new char[n]);
	delete p;
	return survived("a sized delete of the wrong type went unnoticed");
}

int sized_delete(size_t n, bool larger)
{
	void *p = hide(::operator new(n));
	::operator delete(p, hide_size(larger ? 2 * n + 64 : n / 4));
	return survived("a sized delete with the wrong size went unnoticed");
}

/* ---- the rest ---- */
int huge_malloc()
{
	errno = 0;
	void *p = malloc(hide_size(SIZE_MAX / 2));
	return verdict(p != nullptr || errno != ENOMEM, "malloc(SIZE_MAX / 2) did not fail with ENOMEM",
		       "NULL with ENOMEM");
}

int exec_heap()
{
	unsigned char *p = (unsigned char *)hide(malloc(64));
	p[0] = 0xc3; /* ret */
	((void (*)())(void *)p)();
	return survived("code on the heap ran");
}

} // namespace

int main(int argc, char **argv)
{
	static const struct {
		const char *tag;
		size_t n;
	} sizes[] = {{"8", 8}, {"4k", 4096}, {"256k", 256 << 10}};
	static const struct {
		const char *tag;
		size_t k;
	} amounts[] = {{"1", 1}, {"32", 32}, {"1m", MIB}};
	std::string names[256];
	int (*runs[256])(size_t, size_t, int);
	size_t ns[256], ks[256];
	int modes[256];
	int total = 0;
	auto add = [&](std::string name, int (*run)(size_t, size_t, int), size_t n, size_t k,
		       int mode) {
		names[total] = name;
		runs[total] = run;
		ns[total] = n, ks[total] = k, modes[total] = mode;
		total++;
	};
	for (auto &s : sizes) {
		std::string z = std::string("_") + s.tag;
		for (auto &a : amounts) {
			for (int m = 0; m < 4; m++) /* bit 0: underflow, bit 1: memcpy */
				add(std::string(m & 1 ? "underflow_" : "overflow_") + a.tag +
					    (m & 2 ? "_memcpy" : "_direct") + z,
				    [](size_t n, size_t k, int m) {
					    return overrun(n, k, m & 1, m & 2);
				    },
				    s.n, a.k, m);
		}
		for (auto &a : amounts) {
			if (a.k == MIB)
				continue;
			for (int m = 0; m < 2 * NWAYS; m++) /* bit 0: underflow, m / 2: the way */
				add(std::string(m & 1 ? "underflow_" : "overflow_") + a.tag + "_" +
					    way_name[m / 2] + "_nofree" + z,
				    [](size_t n, size_t k, int m) {
					    return overrun_nofree(n, k, m & 1, m / 2);
				    },
				    s.n, a.k, m);
		}
		add("uaf_write_nofree" + z, [](size_t n, size_t, int) { return uaf_write_nofree(n); },
		    s.n, 0, 0);
		add("uaf_read_zero" + z, [](size_t n, size_t, int) { return read_freed(n, true); }, s.n,
		    0, 0);
		add("sized_delete_type" + z, [](size_t n, size_t, int) { return sized_delete_type(n); },
		    s.n, 0, 0);
		add("uaf_write" + z, [](size_t n, size_t, int) { return uaf_write(n); }, s.n, 0, 0);
		add("uaf_write_after_malloc" + z,
		    [](size_t n, size_t, int) { return uaf_write_between(n); }, s.n, 0, 0);
		for (int m = 0; m < 4; m++) /* bit 0: smaller, bit 1: realloc */
			add(std::string("reuse_") + (m & 2 ? "realloc" : "malloc") +
				    (m & 1 ? "_smaller" : "_same") + z,
			    [](size_t n, size_t, int m) { return reuse(n, m & 1, m & 2); }, s.n, 0,
			    m);
		add("not_zeroed" + z, [](size_t n, size_t, int) { return not_zeroed(n); }, s.n, 0, 0);
		add("not_cleared" + z, [](size_t n, size_t, int) { return read_freed(n, false); }, s.n, 0,
		    0);
		add("double_free_now" + z, [](size_t n, size_t, int) { return double_now(n); }, s.n,
		    0, 0);
		add("double_free_interleaved" + z,
		    [](size_t n, size_t, int) { return double_interleaved(n); }, s.n, 0, 0);
		add("double_free_delayed" + z,
		    [](size_t n, size_t, int) { return double_delayed(n); }, s.n, 0, 0);
		add("double_free_reused" + z, [](size_t n, size_t, int) { return double_reused(n); },
		    s.n, 0, 0);
		static const char *bad[] = {"inside", "past", "far", "unaligned"};
		for (int m = 0; m < 4; m++)
			add(std::string("invalid_free_") + bad[m] + z,
			    [](size_t n, size_t, int m) { return bad_free(n, m); }, s.n, 0, m);
		for (int m = 0; m < 2; m++)
			add(std::string("sized_delete_") + (m ? "larger" : "smaller") + z,
			    [](size_t n, size_t, int m) { return sized_delete(n, m); }, s.n, 0, m);
	}
	add("zero_read", [](size_t, size_t, int) { return zero_read(); }, 0, 0, 0);
	add("zero_write", [](size_t, size_t, int) { return zero_write(); }, 0, 0, 0);
	add("zero_uaf_read", [](size_t, size_t, int) { return zero_uaf_read(); }, 0, 0, 0);
	add("invalid_free_stack", [](size_t, size_t, int) { return free_stack(); }, 0, 0, 0);
	add("invalid_free_alloca", [](size_t, size_t, int) { return free_alloca(); }, 0, 0, 0);
	add("delete_new_array_char", [](size_t, size_t, int) { return delete_new_array_char(); },
	    0, 0, 0);
	add("delete_new_array_string",
	    [](size_t, size_t, int) { return delete_new_array_string(); }, 0, 0, 0);
	add("delete_array_new_char", [](size_t, size_t, int) { return delete_array_new_char(); },
	    0, 0, 0);
	add("delete_array_new_string",
	    [](size_t, size_t, int) { return delete_array_new_string(); }, 0, 0, 0);
	add("huge_malloc", [](size_t, size_t, int) { return huge_malloc(); }, 0, 0, 0);
	add("exec_heap", [](size_t, size_t, int) { return exec_heap(); }, 0, 0, 0);

	if (argc == 2 && strcmp(argv[1], "list") == 0) {
		for (int i = 0; i < total; i++)
			puts(names[i].c_str());
		return 0;
	}
	for (int i = 0; argc == 2 && i < total; i++) {
		if (names[i] == argv[1]) {
			fflush(stdout);
			setvbuf(stdout, nullptr, _IONBF, 0);
			return runs[i](ns[i], ks[i], modes[i]);
		}
	}
	fprintf(stderr, "usage: battery list | battery CASE\n");
	return 2;
}
