/* debug.h: what the profiler needs of the debug caches (debug.c): its samples are debug
 * blocks. */
#ifndef SM_DIAG_DEBUG_H
#define SM_DIAG_DEBUG_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

void sm_debug_set_prof(void *p, uint32_t id); /* p (a debug block) is sample id */

#pragma GCC visibility pop

#endif
