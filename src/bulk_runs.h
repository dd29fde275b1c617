/* bulk_runs.h: free_bulk's loop over runs, included twice by bulk.c: with RUNS_VEC 0 (any
 * x86-64) and with RUNS_VEC 1, built for AVX2 and inlined into bulk.c's AVX2 functions, which
 * free_bulk jumps to when the CPU has it (sm_vec_min); that one checks four pointers at a
 * time, from the start of each run (malloc_bulk's AVX2 copy stores 32 bytes at those offsets,
 * so the loads are served by its stores; a load across several recent smaller stores would
 * wait for them to reach the cache), and first tries the whole array as one run (one_run).
 * RUNS_NAME(tc, src, end, typed) frees the pointers in [src, end) while every check passes,
 * calling nothing, and returns where it stopped: the first pointer it leaves to the slow path,
 * or end. With typed NULL, objects of the size classes go to the thread's stacks, as free()
 * would put them; with a typed cache (slub_cache_free_bulk: the caller has entered, and tc's
 * stacks serve it), every pointer must be an object of that cache, checked once per run, and
 * goes to its typed_free. A run ends at the first pointer whose free key is already there; the
 * others get it (keys_set, bulk.c; a typed cache's key is at its koff).
 * A run is a stretch of pointers into one slab, checked against the descriptor d of the first
 * one's page, whose read-only fields are read once per run. run_start (bulk.c) checks the
 * first pointer as free() does (ours, an object: a page of no slab fails it, so d is a slab's
 * and its objects >= 1) and picks the stack, free()'s choice, once per run; then
 * every pointer of the run, the first again, gets slab_index()'s test (exact for any
 * address: inside the slab and on an object boundary). A pointer that fails it ends the run;
 * when it is the run's first, the loop stops there and the caller's slow path reports it.
 * A pointer twice in the array, or one already on a stack, is its key's to catch, as in free():
 * the keys are set one after another, so the second copy finds the first one's.
 * The vector check works on 32-bit offsets (a slab spans less than 4 GiB): off < 2^32 and
 * rotr32((uint32)off * inv32, k) <= objects - 1 (a run's slab has objects >= 1), where inv32
 * (inverse's low half) is the inverse of size's odd part mod 2^32: the same divisibility test as
 * slab_index, in 32 bits. */

#if RUNS_VEC
/* Whether the four pointers o are objects of the run's slab. Per pointer, in 32-bit lanes:
 * the low lane gets rotr32((uint32)off * inv32, k), the high lane off's high half; both must be
 * at most lim's lanes (objects - 1, and 0). */
static inline __attribute__((always_inline, target("avx2"))) bool
group_ok(__m256i o, __m256i lov, __m256i invv, __m256i kv, __m256i lim)
{
	__m256i off = _mm256_sub_epi64(o, lov);
	__m256i x = _mm256_mul_epu32(off, invv);            /* low halves: (uint32)off * inv32 */
	x = _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 2, 0, 0)); /* each lane: x << 32 | x */
	__m256i t = _mm256_blend_epi32(_mm256_srlv_epi64(x, kv), off, 0xaa);
	__m256i ok = _mm256_cmpeq_epi32(_mm256_max_epu32(t, lim), lim);
	return _mm256_movemask_epi8(ok) == -1;
}
/* The 8 bytes at p in every lane: one load (vbroadcastsd), no shuffle port. */
static inline __attribute__((always_inline, target("avx2"))) __m256i bcast64(const void *p)
{
	return _mm256_castpd_si256(_mm256_broadcast_sd((const double *)p));
}
#define RUNS_ATTR inline __attribute__((always_inline, target("avx2")))

/* A run's slab, for group_ok: broadcasts straight from the descriptor (load ports, not
 * shuffles). */
struct run_vec {
	__m256i lov, invv, kv, lim;
};
static RUNS_ATTR struct run_vec run_vec_of(const struct slab *d)
{
	return (struct run_vec){bcast64(&d->start), bcast64(&d->inverse), _mm256_set1_epi64x(d->shift),
				_mm256_add_epi64(bcast64(&d->objects), _mm256_set1_epi64x(-1))};
}
/* Checks the four pointers at src and, if they pass, stores them at dst. A 32-byte load at
 * the offsets malloc_bulk stores at, so it is served by its stores (store forwarding). */
static RUNS_ATTR bool group_at(const struct run_vec *v, void *const *src, void **dst)
{
	__m256i o = _mm256_loadu_si256((const __m256i *)(const void *)src);
	if (!group_ok(o, v->lov, v->invv, v->kv, v->lim))
		return false;
	_mm256_storeu_si256((__m256i *)(void *)dst, o);
	return true;
}

/* The common case first: the n (>= 4) pointers at src as one run, all objects of the first
 * one's slab, with room for all of them on the stack. Checks every pointer as the runs do, in
 * groups of four (the last group overlaps the one before it when 4 does not divide n), and
 * stores each group above the stack's top as it goes. Then the keys: the run ends before the
 * first pointer whose key is already there. Returns how many it pushed
 * from src's start: n, or fewer (0 when a check failed), for the runs to go on from there. */
static RUNS_ATTR size_t one_run(struct tcache *tc, void **src, size_t n, struct cache *typed)
{
	struct slab *d;
	struct stack *b = run_start(tc, (uintptr_t)src[0], typed, &d);
	if (unlikely(!b))
		return 0;
	void **dst = b->top;
	if (unlikely(b->lim - dst < (ptrdiff_t)n))
		return 0;
	struct run_vec v = run_vec_of(d);
	size_t last = n - 4;
	for (size_t j = 0; j < last; j += 4)
		if (!group_at(&v, src + j, dst + j))
			return 0;
	if (!group_at(&v, src + last, dst + last))
		return 0;
	size_t k = keys_set(src, n, typed ? typed->koff : 8);
	b->top = dst + k;
	return k;
}
#else
#define RUNS_ATTR inline __attribute__((always_inline))
#endif

static RUNS_ATTR void **RUNS_NAME(struct tcache *tc, void **src, void **end,
				  struct cache *typed)
{
	while (src != end) {
		struct slab *d;
		struct stack *b = run_start(tc, (uintptr_t)*src, typed, &d);
		if (unlikely(!b))
			break; /* the slow path takes it from here */
		void **dst = b->top, **first = src;
		ptrdiff_t room = b->lim - dst;
		if (unlikely(room <= 0))
			break; /* full (flush), or a thread without a cache */
		uintptr_t lo = (uintptr_t)d->start;
		uint64_t inverse = d->inverse, bad_q_bits = d->bad_q_bits, objects = d->objects;
		unsigned k = d->shift;
		void **stop = end;
		uint32_t koff = typed ? typed->koff : 8;
		if (unlikely(end - src > room))
			stop = src + room;
#if RUNS_VEC
		/* groups of four from the run's first pointer */
		if (stop - src >= 4) {
			struct run_vec v = run_vec_of(d);
			size_t g = (size_t)(stop - src) / 4, j = 0;
			do {
				if (!group_at(&v, src + 4 * j, dst + 4 * j))
					break;
				size_t kept = keys_set(src + 4 * j, 4, koff);
				if (unlikely(kept != 4)) { /* the run ends before a key already there */
					src += 4 * j + kept;
					dst += 4 * j + kept;
					goto pushed;
				}
			} while (++j != g);
			src += 4 * j;
			dst += 4 * j;
		}
#endif
		for (; src != stop; src++) {
			void *o = *src;
			uint64_t q = ((uintptr_t)o - lo) * inverse; /* slab_index(), d's fields hoisted */
			if ((q & bad_q_bits) || (q >> k) >= objects)
				break;
			if (unlikely(free_key_maybe_set_at(o, koff)))
				break;
			free_key_set_at(o, koff);
			*dst++ = o;
		}
#if RUNS_VEC
	pushed:
#endif
		if (unlikely(src == first))
			break; /* its first pointer failed a check: the slow path reports it */
		b->top = dst;
	}
	return src;
}

#undef RUNS_ATTR
