/* cxx.c: C++ operator new and delete in every form (plain, array, nothrow, sized, aligned),
 * written in C under their mangled names, so the library needs no C++ runtime. Each is one
 * call into the engine (fastpath.h; a failed new: alloc.c). The plain and nothrow forms pass
 * which they are (enum form) for SLUBMALLOC_DEBUG's M; the aligned ones pass FORM_C, as
 * aligned allocations are made by memalign's path. Built with -fexceptions, so that a
 * std::bad_alloc thrown from a failed new unwinds through. */
#include <stdbool.h>
#include <stddef.h>

#include "diag/diag.h"
#include "fastpath.h"
#include "options.h"
#include "platform.h"
#include "types.h"

#define NEW(name, sym, args, call)                              \
	SM_EXPORT void *name args __asm__(sym);                 \
	SM_EXPORT void *name args { return call; }
#define DELETE(name, sym, args, call)                           \
	SM_EXPORT void name args __asm__(sym);                  \
	SM_EXPORT void name args { call; }

NEW(cxx_new, "_Znwm", (size_t n), sm_new(n, false, FORM_NEW))
NEW(cxx_new_array, "_Znam", (size_t n), sm_new(n, false, FORM_NEW_ARRAY))
NEW(cxx_new_nothrow, "_ZnwmRKSt9nothrow_t", (size_t n, const void *t),
    ((void)t, sm_new(n, true, FORM_NEW)))
NEW(cxx_new_array_nothrow, "_ZnamRKSt9nothrow_t", (size_t n, const void *t),
    ((void)t, sm_new(n, true, FORM_NEW_ARRAY)))
NEW(cxx_new_al, "_ZnwmSt11align_val_t", (size_t n, size_t al), sm_new_aligned(n, al, false))
NEW(cxx_new_array_al, "_ZnamSt11align_val_t", (size_t n, size_t al), sm_new_aligned(n, al, false))
NEW(cxx_new_al_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t", (size_t n, size_t al, const void *t),
    ((void)t, sm_new_aligned(n, al, true)))
NEW(cxx_new_array_al_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t",
    (size_t n, size_t al, const void *t), ((void)t, sm_new_aligned(n, al, true)))

/* With SLUBMALLOC_PROF=1, the plain and nothrow forms jump to these (sm_prof_entries). */
static void *new_prof(size_t n)
{
	return sm_new_prof(n, false, FORM_NEW);
}

static void *new_array_prof(size_t n)
{
	return sm_new_prof(n, false, FORM_NEW_ARRAY);
}

static void *new_nothrow_prof(size_t n, const void *t)
{
	(void)t;
	return sm_new_prof(n, true, FORM_NEW);
}

static void *new_array_nothrow_prof(size_t n, const void *t)
{
	(void)t;
	return sm_new_prof(n, true, FORM_NEW_ARRAY);
}

SM_SELF_SYM(new_self, cxx_new, "_Znwm");
SM_SELF_SYM(new_array_self, cxx_new_array, "_Znam");
SM_SELF_SYM(new_nothrow_self, cxx_new_nothrow, "_ZnwmRKSt9nothrow_t");
SM_SELF_SYM(new_array_nothrow_self, cxx_new_array_nothrow, "_ZnamRKSt9nothrow_t");

/* Patched with malloc's (override.c). */
void *const sm_cxx_prof_entry[4][2] = {
	{(void *)new_self, (void *)new_prof},
	{(void *)new_array_self, (void *)new_array_prof},
	{(void *)new_nothrow_self, (void *)new_nothrow_prof},
	{(void *)new_array_nothrow_self, (void *)new_array_nothrow_prof},
};

DELETE(cxx_delete, "_ZdlPv", (void *p), sm_free_fast_form(p, FORM_NEW))
DELETE(cxx_delete_array, "_ZdaPv", (void *p), sm_free_fast_form(p, FORM_NEW_ARRAY))
DELETE(cxx_delete_sized, "_ZdlPvm", (void *p, size_t n), sm_free_sized_fast(p, n, FORM_NEW))
DELETE(cxx_delete_array_sized, "_ZdaPvm", (void *p, size_t n),
       sm_free_sized_fast(p, n, FORM_NEW_ARRAY))
DELETE(cxx_delete_nothrow, "_ZdlPvRKSt9nothrow_t", (void *p, const void *t),
       ((void)t, sm_free_fast_form(p, FORM_NEW)))
DELETE(cxx_delete_array_nothrow, "_ZdaPvRKSt9nothrow_t", (void *p, const void *t),
       ((void)t, sm_free_fast_form(p, FORM_NEW_ARRAY)))
DELETE(cxx_delete_al, "_ZdlPvSt11align_val_t", (void *p, size_t al), ((void)al, sm_free_fast(p)))
DELETE(cxx_delete_array_al, "_ZdaPvSt11align_val_t", (void *p, size_t al), ((void)al, sm_free_fast(p)))
DELETE(cxx_delete_sized_al, "_ZdlPvmSt11align_val_t", (void *p, size_t n, size_t al),
       ((void)al, sm_free_aligned_sized_fast(p, n)))
DELETE(cxx_delete_array_sized_al, "_ZdaPvmSt11align_val_t", (void *p, size_t n, size_t al),
       ((void)al, sm_free_aligned_sized_fast(p, n)))
DELETE(cxx_delete_al_nothrow, "_ZdlPvSt11align_val_tRKSt9nothrow_t",
       (void *p, size_t al, const void *t), ((void)al, (void)t, sm_free_fast(p)))
DELETE(cxx_delete_array_al_nothrow, "_ZdaPvSt11align_val_tRKSt9nothrow_t",
       (void *p, size_t al, const void *t), ((void)al, (void)t, sm_free_fast(p)))
