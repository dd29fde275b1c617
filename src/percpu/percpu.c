/* percpu.c: the per-CPU area allocator (the shape of the kernel's mm/percpu.c, with the fixed
 * stride of librseq's mempool). A chunk is one anonymous mapping: a header (this file's
 * bookkeeping), then pcpu_ncpus units of SLUB_PCPU_STRIDE bytes, unit c for CPU c. An
 * allocation is a run of 4-byte granules at the same offset in every unit; the pointer handed
 * out is unit 0's copy and CPU c's copy is c strides further (pcpu_ptr), so an object costs
 * size x CPUs with no padding, and copies of two CPUs are a stride apart (never one line).
 * Invariants (under chunks_lock): alloc bit i set <=> granule i is allocated (in every unit);
 * bound bit i set <=> an allocation starts at granule i, so an allocation ends at the next
 * bound bit or the next free granule; every free granule is zero in every unit (freed areas are
 * cleared, new chunks are fresh zero pages), so pcpu_alloc returns zeroed memory without
 * touching it; nfree counts free granules; no free granule lies below first_free. Chunks are
 * searched oldest first; a chunk other than the first is unmapped when it becomes empty.
 * Memory comes from sm_os_map, never from malloc; pages of a unit are touched only when used. */
#include <errno.h>
#include <string.h>

#include "percpu_internal.h"

#define GRAN_SHIFT 2
#define GRAN (1u << GRAN_SHIFT)
#define NGRAN ((uint32_t)(SLUB_PCPU_STRIDE >> GRAN_SHIFT)) /* granules per unit */
#define NWORDS (NGRAN / 64)

struct chunk {
	struct chunk *next;
	char *base;           /* unit 0 */
	size_t map_size;      /* the whole mapping, header included */
	uint32_t nfree;       /* free granules */
	uint32_t first_free;  /* no free granule below */
	uint64_t alloc[NWORDS];
	uint64_t bound[NWORDS];
};
#define HDR_SIZE ((sizeof(struct chunk) + 4095) & ~(size_t)4095)

static pthread_mutex_t chunks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk *chunks; /* oldest first */
static size_t nchunks;


static inline bool bit(const uint64_t *m, uint32_t i)
{
	return (m[i >> 6] >> (i & 63)) & 1;
}

/* The first index >= from whose bit equals want, or NGRAN. */
static uint32_t next_bit(const uint64_t *m, uint32_t from, bool want)
{
	if (from >= NGRAN)
		return NGRAN;
	uint32_t w = from >> 6;
	uint64_t x = want ? m[w] : ~m[w];
	x &= ~0ULL << (from & 63);
	for (;;) {
		if (x)
			return (w << 6) + (uint32_t)__builtin_ctzll(x);
		if (++w >= NWORDS)
			return NGRAN;
		x = want ? m[w] : ~m[w];
	}
}

static void set_range(uint64_t *m, uint32_t s, uint32_t n, bool v)
{
	for (uint32_t i = s; i < s + n;) {
		uint32_t off = i & 63, k = 64 - off;
		if (k > s + n - i)
			k = s + n - i;
		uint64_t mask = (k == 64 ? ~0ULL : ((1ULL << k) - 1)) << off;
		if (v)
			m[i >> 6] |= mask;
		else
			m[i >> 6] &= ~mask;
		i += k;
	}
}

/* First fit: the lowest start that is a multiple of step with n free granules, or -1. */
static long chunk_find(const struct chunk *c, uint32_t n, uint32_t step)
{
	uint32_t pos = c->first_free;
	while (pos < NGRAN) {
		uint32_t s = next_bit(c->alloc, pos, false);
		s = (s + step - 1) / step * step;
		if (s >= NGRAN || NGRAN - s < n)
			return -1;
		uint32_t e = next_bit(c->alloc, s, true);
		if (e - s >= n)
			return s;
		pos = e;
	}
	return -1;
}

static struct chunk *chunk_new(void)
{
	size_t units = (size_t)pcpu_ncpus * SLUB_PCPU_STRIDE;
	char *m = sm_os_map(HDR_SIZE + units);
	if (!m)
		return NULL;
	struct chunk *c = (struct chunk *)m;
	c->next = NULL;
	c->base = m + HDR_SIZE;
	c->map_size = HDR_SIZE + units;
	c->nfree = NGRAN;
	c->first_free = 0;
	return c; /* bitmaps: fresh zero pages */
}

SM_EXPORT void *pcpu_alloc(size_t size, size_t align)
{
	if (align == 0)
		align = GRAN;
	if (size == 0 || size > SLUB_PCPU_MAX_SIZE || (align & (align - 1)) ||
	    align > SLUB_PCPU_MAX_ALIGN) {
		errno = EINVAL;
		return NULL;
	}
	if (align < GRAN)
		align = GRAN;
	pcpu_setup();
	uint32_t n = (uint32_t)((size + GRAN - 1) >> GRAN_SHIFT);
	uint32_t step = (uint32_t)(align >> GRAN_SHIFT);

	pthread_mutex_lock(&chunks_lock);
	struct chunk *c, **tail = &chunks;
	long s = -1;
	for (c = chunks; c; tail = &c->next, c = c->next)
		if (c->nfree >= n && (s = chunk_find(c, n, step)) >= 0)
			break;
	if (!c) {
		c = chunk_new();
		if (!c) {
			pthread_mutex_unlock(&chunks_lock);
			errno = ENOMEM;
			return NULL;
		}
		*tail = c;
		nchunks++;
		s = chunk_find(c, n, step); /* n <= NGRAN, step divides NGRAN: found at 0 */
	}
	uint32_t st = (uint32_t)s;
	set_range(c->alloc, st, n, true);
	set_range(c->bound, st, 1, true);
	c->nfree -= n;
	if (st == c->first_free)
		c->first_free = next_bit(c->alloc, st + n, false);
	pthread_mutex_unlock(&chunks_lock);
	return c->base + ((size_t)st << GRAN_SHIFT);
}

SM_EXPORT void pcpu_free(void *p)
{
	if (!p)
		return;
	char *a = p;
	pthread_mutex_lock(&chunks_lock);
	struct chunk *c, **link = &chunks;
	for (c = chunks; c; link = &c->next, c = c->next)
		if (a >= c->base && a < c->base + SLUB_PCPU_STRIDE)
			break;
	size_t off = c ? (size_t)(a - c->base) : 0;
	if (!c || (off & (GRAN - 1)) || !bit(c->bound, (uint32_t)(off >> GRAN_SHIFT))) {
		pthread_mutex_unlock(&chunks_lock);
		sm_fatal("invalid pcpu_free", p, "(not the start of a per-CPU allocation)");
	}
	uint32_t s = (uint32_t)(off >> GRAN_SHIFT);
	uint32_t e1 = next_bit(c->bound, s + 1, true), e2 = next_bit(c->alloc, s + 1, false);
	uint32_t n = (e1 < e2 ? e1 : e2) - s;
	for (int cpu = 0; cpu < pcpu_ncpus; cpu++)
		memset(c->base + (size_t)cpu * SLUB_PCPU_STRIDE + off, 0, (size_t)n << GRAN_SHIFT);
	set_range(c->alloc, s, n, false);
	set_range(c->bound, s, 1, false);
	c->nfree += n;
	if (s < c->first_free)
		c->first_free = s;
	if (c->nfree == NGRAN && c != chunks) {
		*link = c->next;
		nchunks--;
		sm_os_unmap(c, c->map_size);
	}
	pthread_mutex_unlock(&chunks_lock);
}

size_t pcpu_chunk_count(void)
{
	pthread_mutex_lock(&chunks_lock);
	size_t n = nchunks;
	pthread_mutex_unlock(&chunks_lock);
	return n;
}

/* fork (src/fork.c): the chunk list whole in the child. */
void pcpu_chunks_lock(void)
{
	pthread_mutex_lock(&chunks_lock);
}

void pcpu_chunks_unlock(bool child)
{
	if (child) /* the forking thread held it: the child's copy starts unlocked */
		pthread_mutex_init(&chunks_lock, NULL);
	else
		pthread_mutex_unlock(&chunks_lock);
}
