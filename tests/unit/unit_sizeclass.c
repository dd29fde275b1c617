/* unit_sizeclass.c: the size-class tables. For every size up to MAX_SMALL: the class holds it,
 * the class below does not (the smallest fit), class sizes are multiples of 16 and increasing,
 * rounding waste is at most 1/8 of the object above 128 bytes (and < 16 bytes below), the
 * fastpath table agrees with the computed class, and aligned classes really are aligned. */
#include "check.h"
#include "config.h"
#include "engine.h"
#include "sizeclass.h"

int main(void)
{
	sm_init();
	CHECK(sm_class_size(NCLASS - 1) == MAX_SMALL, "largest class %u", sm_class_size(NCLASS - 1));
	for (unsigned c = 0; c < NCLASS; c++) {
		CHECK(sm_class_size(c) % MIN_ALIGN == 0, "class %u size %u", c, sm_class_size(c));
		if (c)
			CHECK(sm_class_size(c) > sm_class_size(c - 1), "class %u not increasing", c);
		CHECK(sm_size_to_class(sm_class_size(c)) == c, "class %u does not map to itself", c);
	}
	double worst = 0;
	for (size_t n = 0; n <= MAX_SMALL; n++) {
		unsigned c = sm_size_to_class(n);
		CHECK(c < NCLASS, "size %zu -> class %u", n, c);
		CHECK(sm_class_size(c) >= n, "size %zu in class of %u", n, sm_class_size(c));
		CHECK(c == 0 || sm_class_size(c - 1) < n, "size %zu could use class %u", n, c - 1);
		CHECK(n == 0 || alloc_stack_for(n) == &sm_tcp->alloc_stack[c], "table says stack %ld for size %zu, not %u",
		      (long)(alloc_stack_for(n) - sm_tcp->alloc_stack), n, c);
		double waste = (double)(sm_class_size(c) - n) / sm_class_size(c);
		if (n > 128 && waste > worst)
			worst = waste;
		if (n <= 128)
			CHECK(sm_class_size(c) - n < 16 || n == 0, "size %zu wastes %u", n,
			      sm_class_size(c) - (unsigned)n);
	}
	CHECK(worst <= 0.125, "worst rounding waste above 128 B is %.3f", worst);
	for (size_t align = 32; align <= MAX_SMALL; align *= 2)
		for (size_t n = 1; n <= MAX_SMALL; n = n * 3 / 2 + 1) {
			unsigned c = sm_class_for_align(n, align);
			if (c == NCLASS)
				continue;
			CHECK(sm_class_size(c) % align == 0 && sm_class_size(c) >= n,
			      "align %zu size %zu -> %u", align, n, sm_class_size(c));
		}
	CHECK(sm_class_for_align(100, 4096) < NCLASS, "no class for 100 bytes aligned to 4096");
	printf("unit_sizeclass: %d classes, worst rounding waste above 128 B %.1f%%\n", NCLASS,
	       worst * 100);
	return 0;
}
