/* check.h: the unit tests' one assertion macro: prints the failed condition with its location
 * and exits 1, so a failure is visible in tests/run.sh's output. */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                             \
			fprintf(stderr, "\n");                                    \
			exit(1);                                                  \
		}                                                                 \
	} while (0)
#endif
