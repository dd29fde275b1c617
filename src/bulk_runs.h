/* bulk_runs.h: free_bulk's loop over runs, included twice by bulk.c: with RUNS_VEC 0 (any
 * x86-64) and with RUNS_VEC 1, built for AVX2 and inlined into bulk.c's AVX2 functions, which
 * free_bulk jumps to when the CPU has it (sm_vec_min); that one checks four pointers at a
 * time, from the start of each run (malloc_bulk's AVX2 copy stores 32 bytes at those offsets,
 * so the loads are served by its stores; a load across several recent smaller stores would
 * wait for them to reach the cache).
 * RUNS_NAME(tc, src, end, typed) frees the pointers in [src, end) while every check passes,
 * calling nothing, and returns where it stopped: the first pointer it leaves to the slow path,
 * or end. With typed
 * NULL, objects of the size classes go to the thread's bins, as free() would put them; with a
 * typed cache (slub_cache_free_bulk: the caller has entered, and tc's bins serve it), every
 * pointer must be an object of that cache, checked once per run, and goes to its tfbin.
 * A run is a stretch of pointers into one slab, checked against the descriptor d of the first
 * one's page, whose read-only fields are read once per run (after is_object() of the first
 * pointer: a page of no slab fails it, so d is a slab's and its objects >= 1):
 *   - the object index (slab_index's test, exact: inside the slab and on an object boundary);
 *   - a pointer equal to the one before it (for the first, the bin's top: slots[-1] is a NULL
 *     guard) is a double free;
 *   a pointer that fails a check ends the run; when it is the run's first, the loop stops
 *   there and the caller's slow path reports it;
 *   - the owner check and the choice of bin are free()'s (fastpath.h), once per run.
 * The vector check works on 32-bit offsets (a slab spans less than 4 GiB): off < 2^32 and
 * rotr32((uint32)off * inv32, k) <= objects - 1 (a run's slab has objects >= 1), where inv32
 * (inv's low half) is the inverse of size's odd part mod 2^32: the same divisibility test as
 * slab_index, in 32 bits. */

#if RUNS_VEC
/* Whether the four pointers o are objects of the run's slab, each unlike the one before it
 * (prev: the pointer before o's first, then o's first three). Per pointer, in 32-bit lanes:
 * the low lane gets rotr32((uint32)off * inv32, k), the high lane off's high half; both must be
 * at most lim's lanes (objects - 1, and 0). */
static inline __attribute__((always_inline, target("avx2"))) bool
group_ok(__m256i o, __m256i prev, __m256i lov, __m256i invv, __m256i kv, __m256i lim)
{
	__m256i off = _mm256_sub_epi64(o, lov);
	__m256i x = _mm256_mul_epu32(off, invv);            /* low halves: (uint32)off * inv32 */
	x = _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 2, 0, 0)); /* each lane: x << 32 | x */
	__m256i t = _mm256_blend_epi32(_mm256_srlv_epi64(x, kv), off, 0xaa);
	__m256i ok = _mm256_cmpeq_epi32(_mm256_max_epu32(t, lim), lim);
	ok = _mm256_andnot_si256(_mm256_cmpeq_epi64(o, prev), ok);
	return _mm256_movemask_epi8(ok) == -1;
}
/* The 8 bytes at p in every lane: one load (vbroadcastsd), no shuffle port. */
static inline __attribute__((always_inline, target("avx2"))) __m256i bcast64(const void *p)
{
	return _mm256_castpd_si256(_mm256_broadcast_sd((const double *)p));
}
#define RUNS_ATTR inline __attribute__((always_inline, target("avx2")))

/* The common case first: the n (>= 4) pointers at src as one run, all objects of the first
 * one's slab, with room for all of them on the bin. Checks every pointer as the runs do, in
 * groups of four (the last group overlaps the one before it when 4 does not divide n), and
 * stores each group above the bin's top as it goes: returns true with the top moved past
 * them, or false with the top unchanged (the stores above it are no objects of the bin),
 * for the runs to take the array from its start. */
static RUNS_ATTR bool one_run(struct tcache *tc, void **src, size_t n, struct cache *typed)
{
	uintptr_t a = (uintptr_t)src[0];
	if (unlikely(!region_is_ours(a)))
		return false;
	struct slab *d = page_desc(a);
	if (unlikely(!is_object(d, a)))
		return false; /* also: d is no slab's (its fbtp, objects mean nothing) */
	struct bin *b;
	if (typed) {
		if (unlikely(d->cache != typed))
			return false;
		b = &tc->tfbin[typed->id];
	} else {
		b = fbin_of(d);
	}
	void **dst = b->top;
	if (unlikely(b->lim - dst < (ptrdiff_t)n))
		return false;
	__m256i lov = bcast64(&d->start);
	__m256i invv = bcast64(&d->inv);
	__m256i kv = _mm256_set1_epi64x(d->shift);
	__m256i lim = _mm256_add_epi64(bcast64(&d->objects), _mm256_set1_epi64x(-1));
	__m256i before = bcast64(&dst[-1]); /* the bin's top: slots[-1] is a NULL guard */
	size_t j = 0;
	for (;;) {
		__m256i o = _mm256_loadu_si256((const __m256i *)(const void *)(src + j));
		__m256i prev = _mm256_blend_epi32(
			_mm256_permute4x64_epi64(o, _MM_SHUFFLE(2, 1, 0, 0)), before, 3);
		if (!group_ok(o, prev, lov, invv, kv, lim))
			return false;
		_mm256_storeu_si256((__m256i *)(void *)(dst + j), o);
		if (j + 4 == n)
			break;
		j = j + 8 <= n ? j + 4 : n - 4;
		before = bcast64(&src[j - 1]);
	}
	b->top = dst + n;
	return true;
}
#else
#define RUNS_ATTR inline __attribute__((always_inline))
#endif

static RUNS_ATTR void **RUNS_NAME(struct tcache *tc, void **src, void **end,
				  struct cache *typed)
{
	while (src != end) {
		uintptr_t a = (uintptr_t)*src;
		if (unlikely(!region_is_ours(a)))
			break; /* NULL, large, or not ours */
		struct slab *d = page_desc(a);
		if (unlikely(!is_object(d, a)))
			break; /* d is no slab's (its fbtp, objects mean nothing), or a is no object */
		struct bin *b;
		if (typed) {
			if (unlikely(d->cache != typed))
				break; /* not an object of this cache (or of no slab) */
			b = &tc->tfbin[typed->id];
		} else {
			b = fbin_of(d); /* free()'s choice: fbin, or rbin (tc is the caller's) */
		}
		void **dst = b->top, **first = src;
		ptrdiff_t room = b->lim - dst;
		if (unlikely(room <= 0))
			break; /* full (flush), or a thread without a cache */
		uintptr_t lo = (uintptr_t)d->start;
		uint64_t inv = d->inv, objects = d->objects;
		unsigned k = d->shift;
		void **stop = end;
		if (unlikely(end - src > room))
			stop = src + room;
		void *top = dst[-1];
#if RUNS_VEC
		/* groups of four from the run's first pointer: 32-byte loads at the offsets
		 * malloc_bulk stores at, so they are served by its stores (store forwarding) */
		if (stop - src >= 4) {
			/* broadcasts straight from the descriptor (load ports, not shuffles) */
			__m256i lov = bcast64(&d->start);
			__m256i invv = bcast64(&d->inv);
			__m256i kv = _mm256_set1_epi64x(k);
			__m256i lim = _mm256_add_epi64(bcast64(&d->objects), _mm256_set1_epi64x(-1));
			size_t g = (size_t)(stop - src) / 4, j = 0;
			do {
				__m256i o = _mm256_loadu_si256(
					(const __m256i *)(const void *)(src + 4 * j));
				/* the pointer before the group: the bin's top, then a load (an
				 * 8-byte load inside one of malloc_bulk's 32-byte stores) */
				__m256i before = bcast64(j ? &src[4 * j - 1] : &dst[-1]);
				__m256i prev = _mm256_blend_epi32(
					_mm256_permute4x64_epi64(o, _MM_SHUFFLE(2, 1, 0, 0)), before, 3);
				if (!group_ok(o, prev, lov, invv, kv, lim))
					break;
				_mm256_storeu_si256((__m256i *)(void *)(dst + 4 * j), o);
			} while (++j != g);
			src += 4 * j;
			dst += 4 * j;
			top = dst[-1];
		}
#endif
		for (; src != stop; src++) {
			void *o = *src;
			uint64_t q = ((uintptr_t)o - lo) * inv;
			if (((q >> k) | (q << ((64 - k) & 63))) >= objects || o == top)
				break;
			*dst++ = top = o;
		}
		if (unlikely(src == first))
			break; /* its first pointer failed a check: the slow path reports it */
		b->top = dst;
	}
	return src;
}

#undef RUNS_ATTR
