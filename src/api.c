/* api.c: the public slubmalloc.h functions that are not part of the malloc family. */
#include "slubmalloc.h"

#include "diag/diag.h"
#include "platform.h"
#include "stats.h"

/* (slub_stats_get is in stats.c, next to the census it reads) */
SM_EXPORT void slub_stats_print(int fd)
{
	sm_stats_print(fd);
}

SM_EXPORT int slub_prof_dump(const char *path)
{
	return sm_prof_dump(path);
}
