/* init_order.c: malloc before main and in constructors, and in libraries loaded with dlopen.
 * A constructor allocates with several functions before main runs; main checks those blocks,
 * then dlopens libdlopen_lib.so (next to this program), whose own constructor allocated, calls
 * into it, frees a block it made, and dlcloses it. Exit 0 when every check held. */
#include <dlfcn.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *early_text;
static void *early_aligned;
static int early_ok;

__attribute__((constructor(101))) static void early(void)
{
	early_text = malloc(32);
	int *z = calloc(100, sizeof(int));
	if (!early_text || !z || posix_memalign(&early_aligned, 256, 1000))
		return;
	strcpy(early_text, "made before main");
	int zero = 1;
	for (int i = 0; i < 100; i++)
		zero &= z[i] == 0;
	free(z);
	early_ok = zero && ((uintptr_t)early_aligned % 256) == 0;
}

int main(void)
{
	int fails = 0;
	if (!early_ok || strcmp(early_text, "made before main")) {
		fprintf(stderr, "FAIL: allocation in a constructor before main\n");
		fails++;
	}
	free(early_text);
	free(early_aligned);

	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 64);
	if (n <= 0) {
		fprintf(stderr, "FAIL: readlink /proc/self/exe\n");
		return 1;
	}
	exe[n] = 0;
	char path[4200];
	snprintf(path, sizeof path, "%s/libdlopen_lib.so", dirname(exe));
	for (int round = 0; round < 3; round++) {
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "FAIL: dlopen %s: %s\n", path, dlerror());
			return 1;
		}
		const char *(*text)(void) = (const char *(*)(void))dlsym(h, "dl_loaded_text");
		long (*churn)(long) = (long (*)(long))dlsym(h, "dl_churn");
		if (!text || !churn || !text() || strcmp(text(), "dlopen constructor")) {
			fprintf(stderr, "FAIL: the dlopened library's constructor allocation\n");
			fails++;
		} else {
			free((void *)text());
		}
		long ok = churn ? churn(20000) : -1;
		if (ok != 20000) {
			fprintf(stderr, "FAIL: dl_churn returned %ld of 20000\n", ok);
			fails++;
		}
		dlclose(h);
	}
	printf("init_order: %s\n", fails ? "FAILED" : "all checks passed");
	return fails != 0;
}
