/* unwind.c: the calling thread's stack, as return addresses: from cfi.c's cached walker
 * where it can (x86-64), else from libgcc's DWARF unwinder (_Unwind_Backtrace). Programs and
 * libraries built without frame pointers unwind too.
 * libgcc finds frame tables through _dl_find_object and allocates nothing for them.
 * Callers guard against re-entry: a malloc made from inside the unwinder must not unwind.
 * sm_os_module names the module an address lies in, for reports (dladdr: no allocation). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <unwind.h>

#include "platform.h"

struct walk {
	void **out;
	int n, max, skip;
};

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);
	if (!ip)
		return _URC_END_OF_STACK;
	if (w->skip > 0) {
		w->skip--;
		return _URC_NO_REASON;
	}
	w->out[w->n++] = (void *)ip;
	return w->n == w->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

int sm_os_backtrace(void **out, int max, int skip, const void *from)
{
	if (max <= 0)
		return 0;
	int n = sm_cfi_backtrace(out, max, from ? skip : skip + 1, from); /* (this function) */
	if (n >= 0)
		return n;
	/* Early in a static program's start, before the loader's tables are set up, libgcc's
	 * unwinder would abort: no frames then. */
	struct dl_find_object o;
	if (_dl_find_object((void *)(uintptr_t)sm_os_backtrace, &o) != 0)
		return 0;
	struct walk w = {out, 0, max, skip + 1};
	_Unwind_Backtrace(step, &w);
	return w.n;
}

const char *sm_os_module(const void *ip, uintptr_t *offset)
{
	Dl_info info;
	if (!dladdr(ip, &info) || !info.dli_fbase)
		return NULL;
	*offset = (uintptr_t)ip - (uintptr_t)info.dli_fbase;
	return info.dli_fname && *info.dli_fname ? info.dli_fname : "(the program)";
}
