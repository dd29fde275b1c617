/* free_chunks.h: the unit tests' way of sending a set of objects back to their slabs as a
 * thread's flush does: in chunks of 1 to max (sm_free_array), each object keyed first, as free()
 * keys what it pushes. The objects must be in use for their slabs: each goes back once. */
#ifndef UNIT_FREE_CHUNKS_H
#define UNIT_FREE_CHUNKS_H
#include <stddef.h>
#include <stdint.h>

#include "harden.h"
#include "tcache.h"

static inline void free_chunks(void **v, int n, int max, uint64_t (*rand64)(void))
{
	for (int i = 0; i < n;) {
		int k = 1 + (int)(rand64() % (uint64_t)max);
		k = k < n - i ? k : n - i;
		for (int j = i; j < i + k; j++)
			free_key_set(v[j]);
		sm_free_array(v + i, (size_t)k);
		i += k;
	}
}
#endif
