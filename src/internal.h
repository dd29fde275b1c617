/* internal.h: for one commit, every header of the engine, so that the files which include it
 * build while the next commit gives each file the headers of the parts it uses, and removes
 * this one. Includes at the top only. */
#ifndef SM_INTERNAL_H
#define SM_INTERNAL_H

#include "alloc.h"
#include "background.h"
#include "bulk.h"
#include "config.h"
#include "depot.h"
#include "diag/backtrace.h"
#include "diag/debug.h"
#include "diag/diag.h"
#include "diag/kfence.h"
#include "diag/prof.h"
#include "engine.h"
#include "fork.h"
#include "freelist.h"
#include "harden.h"
#include "jemalloc/compat.h"
#include "jemalloc/defrag.h"
#include "jemalloc/mallctl.h"
#include "large.h"
#include "lock.h"
#include "options.h"
#include "region.h"
#include "report.h"
#include "sizeclass.h"
#include "slab.h"
#include "stack.h"
#include "stats.h"
#include "tcache.h"
#include "thread.h"
#include "trim.h"
#include "typed.h"
#include "types.h"
#include "zero.h"

#endif
