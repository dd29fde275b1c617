/* fork.h: the allocator across fork (fork.c; the rule: the lock order, at the top of
 * freelist.c). */
#ifndef SM_FORK_H
#define SM_FORK_H

#pragma GCC visibility push(hidden)

void sm_fork_register(void);              /* once, at init: the pthread_atfork handlers */

#pragma GCC visibility pop

#endif
