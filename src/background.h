/* background.h: SLUBMALLOC_BACKGROUND's thread, which purges on time (background.c), and the
 * poll that starts a forked child's. */
#ifndef SM_BACKGROUND_H
#define SM_BACKGROUND_H

#include <stdbool.h>

#include "platform.h"

#pragma GCC visibility push(hidden)

void sm_bg_start(void);  /* no engine lock held (pthread_create mallocs): at load, or sm_bg_poll */
void sm_bg_kick(void);   /* memory became pending (page_lock or large_lock held), or a flush */
void sm_bg_forked(void); /* fork's child handler */
bool sm_bg_running(void); /* started, not failed */
void sm_bg_thread_left(void); /* a thread's exit: the thread ends the process once it is alone */
extern int sm_bg_want;   /* a forked child wants its thread */
/* The slow paths of malloc and free, with no lock held: start a forked child's thread. */
static inline void sm_bg_poll(void)
{
	if (unlikely(__atomic_load_n(&sm_bg_want, __ATOMIC_RELAXED)))
		sm_bg_start();
}

#pragma GCC visibility pop

#endif
