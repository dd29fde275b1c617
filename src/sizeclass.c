/* sizeclass.c: size <-> class.
 * Classes are 16..128 in steps of 16, then 8 classes per power of two up to 128 KiB: 88 in all.
 * Every class size is a multiple of 16. Above 128 bytes no request wastes more than 1/9 of its
 * object to rounding.
 * sm_stack_at[] maps each size to the offset, in struct tcache, of its class's allocation
 * stack. It only speeds the fastpath up.
 * Until sm_sizeclass_init() has run it reads 0 everywhere, which is alloc_stack[0]. That stack
 * is empty until the slow path has set the thread up and run init.
 * With SLUBMALLOC_STATS=1 it points at alloc_stack[NCLASS], which is always empty. Every malloc
 * then takes the slow path, where it is counted. The fastpath's code is the same either way. */
#include "config.h"
#include "sizeclass.h"
#include "types.h"

uint16_t sm_stack_at[CLASS_INDEX_MAX];

unsigned sm_size_to_class(size_t size)
{
	if (size <= 128)
		return size <= 16 ? 0 : (unsigned)((size + 15) >> 4) - 1;
	/* 128 < size <= MAX_SMALL: 2^l < size <= 2^(l+1), eight steps of 2^(l-3) */
	unsigned l = 63 - (unsigned)__builtin_clzll((unsigned long long)size - 1);
	unsigned step = (unsigned)((size - 1 - (1UL << l)) >> (l - 3));
	return NCLASS_TINY + (l - 7) * CLASSES_PER_DOUBLING + step;
}

unsigned sm_class_size(unsigned cls)
{
	if (cls < NCLASS_TINY)
		return 16 * (cls + 1);
	unsigned k = cls - NCLASS_TINY, l = 7 + k / CLASSES_PER_DOUBLING;
	return (1U << l) + (k % CLASSES_PER_DOUBLING + 1) * (1U << (l - 3));
}

/* The smallest class whose size is at least size and a multiple of align (objects then start
 * at aligned addresses, since slabs start on 64 KiB boundaries). NCLASS when there is none. */
unsigned sm_class_for_align(size_t size, size_t align)
{
	if (size > MAX_SMALL || align > SPAGE_SIZE)
		return NCLASS;
	if (size < align)
		size = align;
	for (unsigned c = sm_size_to_class(size); c < NCLASS; c++)
		if (sm_class_size(c) % align == 0)
			return c;
	return NCLASS;
}

/* Entry i is for sizes up to (i + 1) * 16: class c's entries run up to its size / 16. A fill per
 * class, with no division per entry: this runs at every process start. */
void sm_sizeclass_init(bool counted)
{
	unsigned i = 0;
	for (unsigned c = 0; c < NCLASS; c++) {
		unsigned cls = counted ? NCLASS : c, end = sm_class_size(c) / MIN_ALIGN;
		uint16_t at = (uint16_t)(offsetof(struct tcache, alloc_stack) + cls * sizeof(struct stack));
		for (; i < end; i++)
			sm_stack_at[i] = at;
	}
}
