/* engine.h: the engine's global state (engine.c) and sm_init, which sets it up once.
 * Invariant: sm_g is written only by sm_init, before sm_g.ready is set (release). */
#ifndef SM_ENGINE_H
#define SM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "platform.h"
#include "types.h"

#pragma GCC visibility push(hidden)

extern struct sm_global sm_g;
extern size_t sm_page_size;                    /* the OS page, read at init (engine.c) */
/* The shortest array the bulk calls' AVX2 paths take (bulk.c): 4 once init has found AVX2 (and
 * SLUBMALLOC_AVX2 is not 0); SIZE_MAX before init and without it. */
extern size_t sm_vec_min;

void sm_init(void);                       /* idempotent; safe to call from any slow path */

#pragma GCC visibility pop

/* The thread-local state is two words of initial-exec TLS, so that a copy loaded by dlopen
 * fits in glibc's spare static TLS. sm_tcp is the calling thread's cache: until the thread is
 * set up, sm_tc_new, and after its exit, sm_tc_dead. Both are read-only, with no room in any
 * stack, so every call on them takes the slow path (thread.c).
 * (outside the hidden block: clang, building an executable, then drops the reference's TLS
 * type when the address is only compared, and the link fails) */
extern __thread struct tcache *sm_tcp TLS_IE;
extern __thread uint8_t sm_in_unwind TLS_IE; /* inside the unwinder (backtrace.c) */
extern __thread struct cache *sm_typed_in TLS_IE; /* the typed cache of the call in progress */

#endif
