/* dlopen_lib.c: a library that init_order.c loads with dlopen: its constructor allocates, and
 * dl_churn() allocates and frees through whatever malloc the process uses. */
#include <stdlib.h>
#include <string.h>

static char *made_at_load;

__attribute__((constructor)) static void at_load(void)
{
	made_at_load = malloc(64);
	if (made_at_load)
		strcpy(made_at_load, "dlopen constructor");
}

__attribute__((visibility("default"))) const char *dl_loaded_text(void)
{
	return made_at_load;
}

/* Allocates n blocks of growing sizes, fills, checks and frees them; returns the number whose
 * contents survived, or -1 when an allocation failed. */
__attribute__((visibility("default"))) long dl_churn(long n)
{
	long ok = 0;
	for (long i = 0; i < n; i++) {
		size_t sz = 1 + (size_t)(i * 37 % 5000);
		unsigned char *p = malloc(sz);
		if (!p)
			return -1;
		memset(p, (int)(i & 0xff), sz);
		p = realloc(p, sz * 2);
		if (!p)
			return -1;
		ok += p[sz - 1] == (unsigned char)(i & 0xff);
		free(p);
	}
	return ok;
}
