/* options.h: the run-time options (options.c), the debug flags and the call forms.
 * Invariant: sm_opt is written only at init, before the engine is ready. */
#ifndef SM_OPTIONS_H
#define SM_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Run-time options (options.c): defaults, then the environment, read once at init. */
#define DBG_F 1u   /* consistency checks: full double-free detection */
#define DBG_Z 2u   /* red zones around objects, checked at free and in scans (debug.c) */
#define DBG_P 4u   /* poison free objects, checked when handed out again and in scans */
#define DBG_U 8u   /* record allocation and free call sites and threads */
#define DBG_Q 16u  /* quarantine: freed objects wait, and come back in random order */
#define DBG_I 32u  /* init: objects zeroed when handed out (and freed, without P) */
#define DBG_M 64u  /* mismatch: a block from new freed by delete[] (or free), and so on */
#define DBG_E 128u /* erase: a freed object reads as zeros (with P, zero is the poison) */
#define DBG_PROF 256u /* a profile cache (prof.c): no checks; each block is a sample */
/* The call that allocated or freed a block, for M. The C calls (malloc's family, free) are
 * FORM_C. The fastpaths pass the form to the slow paths only: it costs them nothing. */
enum form { FORM_C = 0, FORM_NEW = 1, FORM_NEW_ARRAY = 2 };
#define DBG_LETTERS "FZPUQIME" /* bit i is letter i */
#define DBG_ALL (DBG_F | DBG_Z | DBG_P | DBG_U | DBG_Q | DBG_I | DBG_M | DBG_E)
struct sm_options {
	int stats;                /* SLUBMALLOC_STATS */
	int verbose;              /* SLUBMALLOC_VERBOSE */
	int thp;                  /* SLUBMALLOC_THP */
	int avx2;                 /* SLUBMALLOC_AVX2: 0 keeps free_bulk's checks scalar */
	unsigned debug;           /* SLUBMALLOC_DEBUG flags */
	unsigned min_partial;     /* SLUBMALLOC_MIN_PARTIAL: empty slabs a cache keeps */
	uint32_t kfence;          /* SLUBMALLOC_KFENCE: sample one allocation in N; 0: off */
	int prof;                 /* SLUBMALLOC_PROF: the heap profiler (prof.c) */
	uint64_t prof_sample;     /* SLUBMALLOC_PROF_SAMPLE: mean bytes between samples */
	uint64_t prof_interval;   /* SLUBMALLOC_PROF_INTERVAL: a dump per this many bytes; 0: none */
	char prof_file[256];      /* SLUBMALLOC_PROF_FILE; empty: slubmalloc.<pid>.heap */
	uint64_t purge_delay_ns;  /* SLUBMALLOC_PURGE_DELAY_MS */
	int background;           /* SLUBMALLOC_BACKGROUND: a thread purges on time */
	char debug_caches[256];   /* SLUBMALLOC_DEBUG's cache list; empty: all */
	char stats_file[256];     /* SLUBMALLOC_STATS_FILE; empty: stderr */
};
extern struct sm_options sm_opt;

void sm_options_read(void);                /* init only: the environment -> sm_opt */
bool sm_options_debugs(const char *name);  /* is this cache in SLUBMALLOC_DEBUG's list? */
void sm_options_print(void);               /* SLUBMALLOC_VERBOSE=1 */

#pragma GCC visibility pop

#endif
