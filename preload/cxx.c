/* cxx.c: C++ operator new and delete in every form (plain, array, nothrow, sized, aligned),
 * written in C under their mangled names, so the library needs no C++ runtime. A failed new
 * runs std::get_new_handler()'s handler and retries, then throws std::bad_alloc through
 * libstdc++'s own thrower; both are weak references, present whenever the program uses
 * libstdc++ (the only way to call these). Built with -fexceptions so a throw unwinds through. */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "fastpath.h"
#include "internal.h"

typedef void (*new_handler_fn)(void);
extern new_handler_fn cxx_get_new_handler(void) __asm__("_ZSt15get_new_handlerv")
	__attribute__((weak));
extern void cxx_throw_bad_alloc(void) __asm__("_ZSt17__throw_bad_allocv")
	__attribute__((weak, noreturn));

SM_COLD static void *new_failed(size_t n, size_t align, bool nothrow)
{
	for (;;) {
		new_handler_fn h = (!nothrow && cxx_get_new_handler) ? cxx_get_new_handler() : NULL;
		if (!h) {
			if (nothrow)
				return NULL;
			if (cxx_throw_bad_alloc)
				cxx_throw_bad_alloc();
			sm_fatal("operator new", NULL, "failed and std::bad_alloc cannot be thrown");
		}
		h();
		void *p = align ? sm_memalign(align, n) : sm_alloc_fast(n);
		if (p)
			return p;
	}
}

static inline void *new_plain(size_t n, bool nothrow)
{
	void *p = sm_alloc_fast(n);
	return likely(p) ? p : new_failed(n, 0, nothrow);
}

static inline void *new_aligned(size_t n, size_t align, bool nothrow)
{
	void *p = sm_memalign(align, n);
	return likely(p) ? p : new_failed(n, align, nothrow);
}

#define NEW(name, sym, args, call)                              \
	SM_EXPORT void *name args __asm__(sym);                 \
	SM_EXPORT void *name args { return call; }
#define DELETE(name, sym, args, call)                           \
	SM_EXPORT void name args __asm__(sym);                  \
	SM_EXPORT void name args { call; }

NEW(cxx_new, "_Znwm", (size_t n), new_plain(n, false))
NEW(cxx_new_array, "_Znam", (size_t n), new_plain(n, false))
NEW(cxx_new_nothrow, "_ZnwmRKSt9nothrow_t", (size_t n, const void *t), ((void)t, new_plain(n, true)))
NEW(cxx_new_array_nothrow, "_ZnamRKSt9nothrow_t", (size_t n, const void *t), ((void)t, new_plain(n, true)))
NEW(cxx_new_al, "_ZnwmSt11align_val_t", (size_t n, size_t al), new_aligned(n, al, false))
NEW(cxx_new_array_al, "_ZnamSt11align_val_t", (size_t n, size_t al), new_aligned(n, al, false))
NEW(cxx_new_al_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t", (size_t n, size_t al, const void *t),
    ((void)t, new_aligned(n, al, true)))
NEW(cxx_new_array_al_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t",
    (size_t n, size_t al, const void *t), ((void)t, new_aligned(n, al, true)))

DELETE(cxx_delete, "_ZdlPv", (void *p), sm_free_fast(p))
DELETE(cxx_delete_array, "_ZdaPv", (void *p), sm_free_fast(p))
DELETE(cxx_delete_sized, "_ZdlPvm", (void *p, size_t n), sm_free_sized_fast(p, n))
DELETE(cxx_delete_array_sized, "_ZdaPvm", (void *p, size_t n), sm_free_sized_fast(p, n))
DELETE(cxx_delete_nothrow, "_ZdlPvRKSt9nothrow_t", (void *p, const void *t), ((void)t, sm_free_fast(p)))
DELETE(cxx_delete_array_nothrow, "_ZdaPvRKSt9nothrow_t", (void *p, const void *t),
       ((void)t, sm_free_fast(p)))
DELETE(cxx_delete_al, "_ZdlPvSt11align_val_t", (void *p, size_t al), ((void)al, sm_free_fast(p)))
DELETE(cxx_delete_array_al, "_ZdaPvSt11align_val_t", (void *p, size_t al), ((void)al, sm_free_fast(p)))
DELETE(cxx_delete_sized_al, "_ZdlPvmSt11align_val_t", (void *p, size_t n, size_t al),
       ((void)al, sm_free_sized_fast(p, n)))
DELETE(cxx_delete_array_sized_al, "_ZdaPvmSt11align_val_t", (void *p, size_t n, size_t al),
       ((void)al, sm_free_sized_fast(p, n)))
DELETE(cxx_delete_al_nothrow, "_ZdlPvSt11align_val_tRKSt9nothrow_t",
       (void *p, size_t al, const void *t), ((void)al, (void)t, sm_free_fast(p)))
DELETE(cxx_delete_array_al_nothrow, "_ZdaPvSt11align_val_tRKSt9nothrow_t",
       (void *p, size_t al, const void *t), ((void)al, (void)t, sm_free_fast(p)))
