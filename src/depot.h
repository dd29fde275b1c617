/* depot.h: the depot (depot.c): full stacks' objects passed between threads, in the classes
 * of 64 bytes and up. */
#ifndef SM_DEPOT_H
#define SM_DEPOT_H

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

bool sm_depot_put(unsigned cls, void **v, uint32_t n);          /* false: no room, or a class
								  * below a cache line */
uint32_t sm_depot_take(unsigned cls, void **out, uint32_t want);  /* how many */
uint32_t sm_depot_held(unsigned cls);
void sm_depot_drain(void);                                        /* all back to the slabs */
void sm_depot_lock_all(void);
void sm_depot_unlock_all(void);

#pragma GCC visibility pop

#endif
