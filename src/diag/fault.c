/* fault.c: a fault in one of the allocator's no-access areas is the program's bug, and is
 * reported as one: which area, which address, and the block it lies next to where one is
 * known. Then the program aborts.
 * The areas: KFENCE's pool (kfence.c reports those), the zero-size blocks (zero.c), a region's
 * pages that no slab has used yet (region.c), the guard pages of large blocks and freed debug
 * large blocks (large.c).
 * A fault anywhere else, and any signal a process sent, goes on to the handler the program had
 * before, or to its disposition, as if this handler were not there (platform/os.c).
 * It runs in a signal handler: it takes no lock and allocates nothing. Its reads of the
 * allocator's tables are racy, which is good enough for a report that ends in abort. */
#include <stdlib.h>

#include "diag.h"
#include "kfence.h"
#include "large.h"
#include "platform.h"
#include "region.h"
#include "report.h"
#include "zero.h"

SM_NORETURN static void report(const char *what, uintptr_t at, const char *detail,
			       uintptr_t block, size_t size)
{
	sm_write(2, "slubmalloc: ");
	sm_write(2, what);
	sm_write(2, " at ");
	sm_write_hex(2, at);
	sm_write(2, " (");
	sm_write(2, detail);
	if (block) {
		sm_write(2, " ");
		sm_write_hex(2, block);
		sm_write(2, ", size ");
		sm_write_num(2, size, 10);
	}
	sm_write(2, ")\n");
	abort();
}

static void on_fault(void *addr)
{
	uintptr_t a = (uintptr_t)addr, block;
	size_t size;
	if (sm_kfence_every)
		sm_kfence_fault(addr);
	if (sm_zero_has(addr))
		report("access to a zero-size block", a, "malloc(0) returns a block of no bytes", 0, 0);
	if (sm_region_untouched(a))
		report("out-of-bounds access", a, "slab pages from which no block was handed out yet",
		       0, 0);
	switch (sm_large_fault(a, &block, &size)) {
	case LF_BEFORE:
		report("out-of-bounds access", a, "the guard page before the large block", block, size);
	case LF_AFTER:
		report("out-of-bounds access", a, "the guard page after the large block", block, size);
	case LF_FREED:
		report("use after free", a, "a freed large block", block, size);
	}
}

void sm_fault_init(void)
{
	sm_os_on_fault(on_fault);
}
