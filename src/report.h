/* report.h: messages and fatal reports written with write(2), without allocating (report.c).
 * The engine and the per-CPU code share it; it depends only on the platform layer. */
#ifndef SM_REPORT_H
#define SM_REPORT_H

#include <stdint.h>

#include "platform.h"

struct cache; /* the engine's (types.h): sm_fatal_in names it */

#pragma GCC visibility push(hidden)
void sm_write(int fd, const char *s);   /* errno kept */
void sm_write_num(int fd, uint64_t v, int base);
void sm_write_num_pad(int fd, uint64_t v, int base, int width);
void sm_write_hex(int fd, uint64_t v);  /* "0x..." */
/* "slubmalloc: WHAT of 0xP DETAIL" on stderr, then abort(). */
SM_NORETURN void sm_fatal(const char *what, const void *p, const char *detail);
/* a stack of n return addresses, one line a frame (kfence.c's and debug.c's reports) */
void sm_write_stack(const char *what, uint32_t tid, void *const *bt, int n);
/* the same as sm_fatal, with "in cache NAME" for detail */
SM_NORETURN void sm_fatal_in(const char *what, const void *p, const struct cache *c);
#pragma GCC visibility pop

#endif
