/* cfrac_like: single-thread small-object churn with the size mix of a bignum program (the
 * family of the cfrac benchmark). It runs the core of the continued-fraction factoring method
 * on a fixed set of pseudo-random 80..100-bit numbers N: the continued fraction expansion of
 * sqrt(N), the convergents A(k) mod N, trial division of every Q(k) over a factor base (each
 * division allocates its quotient, as in a naive bignum library), and relations (smooth Q(k),
 * or smooth but for one large prime, paired through a hash table) kept until N is done.
 * Every bignum is an immutable malloc'd limb array, so each step allocates and frees dozens of
 * 12..40-byte temporaries (bignums and division scratch arrays), among longer-lived relations
 * (40 bytes), exponent vectors (48 bytes) and a 4 KiB hash table per N.
 * Measures: the time of that churn (lower is better; compare.sh times the whole process).
 * Validation: bignum headers are checked on every use, every 4th step checks the identity
 * A(k-1)^2 = (-1)^k Q(k) (mod N), and every relation is re-verified at the end (exit 3 on error).
 * Usage: cfrac_like [NUMBERS [STEPS_PER_NUMBER]]
 * Prints: RESULT name=cfrac ms=... steps=... relations=... allocs=... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define DEFAULT_NUMBERS 48
#define DEFAULT_STEPS 12000
#define FACTOR_BASE 48     /* primes p (2 and odd p with N a square mod p) */
#define HASH_BUCKETS 512   /* partial relations, keyed by their large prime */
#define BN_MAGIC 0x6c696d62u

/* An immutable natural number: n limbs base 2^32, little-endian, no leading zero limb. */
typedef struct bn {
	uint32_t magic; /* BN_MAGIC ^ n, checked when freed */
	uint32_t n;
	uint32_t limb[];
} bn;

/* A relation A^2 = sign * prod(p_i^e_i) * lp (mod N); lp is 1, a large prime, or its square. */
typedef struct relation {
	struct relation *next;
	bn *a;             /* A mod N */
	uint8_t *exps;     /* FACTOR_BASE exponents, malloc'd */
	uint64_t lp;
	int sign;          /* +1 or -1 */
} relation;

static unsigned long allocs;
static unsigned long checks_failed;

/* ------------------------------------------------------------------ bignums */

static bn *bn_alloc(uint32_t n)
{
	allocs++;
	return xmalloc_or_die(sizeof(bn) + (size_t)(n ? n : 1) * sizeof(uint32_t));
}

static bn *bn_fin(bn *r, uint32_t n)
{
	while (n > 0 && r->limb[n - 1] == 0)
		n--;
	r->n = n;
	r->magic = BN_MAGIC ^ n;
	return r;
}

#define BN_MAX_LIMBS 64 /* far above anything this program makes */

/* Every operation checks its operands' headers: a corrupted bignum is reported, not used. */
static inline const bn *bn_check(const bn *a)
{
	if (a->magic != (BN_MAGIC ^ a->n) || a->n > BN_MAX_LIMBS ||
	    (a->n > 0 && a->limb[a->n - 1] == 0))
		fatal(EXIT_CORRUPT, "corrupted bignum at %p", (const void *)a);
	return a;
}

static void bn_free(bn *a)
{
	if (a == NULL)
		return;
	bn_check(a);
	a->magic = 0;
	free(a);
}

static bn *bn_from_u64(uint64_t v)
{
	bn *r = bn_alloc(2);
	r->limb[0] = (uint32_t)v;
	r->limb[1] = (uint32_t)(v >> 32);
	return bn_fin(r, 2);
}

static bn *bn_copy(const bn *a)
{
	bn_check(a);
	bn *r = bn_alloc(a->n);
	memcpy(r->limb, a->limb, a->n * sizeof(uint32_t));
	return bn_fin(r, a->n);
}

static int bn_cmp(const bn *a, const bn *b)
{
	bn_check(a);
	bn_check(b);
	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	for (uint32_t i = a->n; i-- > 0;)
		if (a->limb[i] != b->limb[i])
			return a->limb[i] < b->limb[i] ? -1 : 1;
	return 0;
}

static int bn_is_u64(const bn *a, uint64_t v)
{
	uint64_t x = a->n == 0 ? 0 : a->limb[0];
	if (a->n > 2)
		return 0;
	if (a->n == 2)
		x |= (uint64_t)a->limb[1] << 32;
	return x == v;
}

static unsigned bn_bits(const bn *a)
{
	if (a->n == 0)
		return 0;
	unsigned bits = 32 * (a->n - 1);
	for (uint32_t top = a->limb[a->n - 1]; top != 0; top >>= 1)
		bits++;
	return bits;
}

static bn *bn_add(const bn *a, const bn *b)
{
	bn_check(a);
	bn_check(b);
	if (a->n < b->n) {
		const bn *t = a;
		a = b;
		b = t;
	}
	bn *r = bn_alloc(a->n + 1);
	uint64_t carry = 0;
	for (uint32_t i = 0; i < a->n; i++) {
		carry += (uint64_t)a->limb[i] + (i < b->n ? b->limb[i] : 0);
		r->limb[i] = (uint32_t)carry;
		carry >>= 32;
	}
	r->limb[a->n] = (uint32_t)carry;
	return bn_fin(r, a->n + 1);
}

/* a - b, a >= b */
static bn *bn_sub(const bn *a, const bn *b)
{
	bn_check(a);
	bn_check(b);
	if (b->n > a->n)
		fatal(EXIT_CORRUPT, "bignum subtraction underflow (corrupted operand)");
	bn *r = bn_alloc(a->n);
	int64_t borrow = 0;
	for (uint32_t i = 0; i < a->n; i++) {
		int64_t t = (int64_t)a->limb[i] - (i < b->n ? b->limb[i] : 0) - borrow;
		borrow = t < 0;
		r->limb[i] = (uint32_t)t;
	}
	if (borrow)
		fatal(EXIT_CORRUPT, "bignum subtraction underflow (corrupted operand)");
	return bn_fin(r, a->n);
}

static bn *bn_mul(const bn *a, const bn *b)
{
	bn_check(a);
	bn_check(b);
	uint32_t n = a->n + b->n;
	bn *r = bn_alloc(n);
	memset(r->limb, 0, (n ? n : 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < a->n; i++) {
		uint64_t carry = 0;
		for (uint32_t j = 0; j < b->n; j++) {
			carry += (uint64_t)a->limb[i] * b->limb[j] + r->limb[i + j];
			r->limb[i + j] = (uint32_t)carry;
			carry >>= 32;
		}
		r->limb[i + b->n] = (uint32_t)carry;
	}
	return bn_fin(r, n);
}

static uint32_t bn_mod_u32(const bn *a, uint32_t d)
{
	bn_check(a);
	uint64_t rem = 0;
	for (uint32_t i = a->n; i-- > 0;)
		rem = ((rem << 32) | a->limb[i]) % d;
	return (uint32_t)rem;
}

static bn *bn_div_u32(const bn *a, uint32_t d, uint32_t *rem_out)
{
	bn_check(a);
	bn *q = bn_alloc(a->n);
	uint64_t rem = 0;
	for (uint32_t i = a->n; i-- > 0;) {
		uint64_t cur = (rem << 32) | a->limb[i];
		q->limb[i] = (uint32_t)(cur / d);
		rem = cur % d;
	}
	*rem_out = (uint32_t)rem;
	return bn_fin(q, a->n);
}

static unsigned leading_zeros32(uint32_t x)
{
	unsigned n = 0;
	if (x == 0)
		fatal(EXIT_CORRUPT, "bignum with a zero top limb (corrupted)");
	while (!(x & 0x80000000u)) {
		x <<= 1;
		n++;
	}
	return n;
}

/* q = a / b, r = a % b (either output may be NULL); Knuth's algorithm D on 32-bit limbs. */
static void bn_divmod(const bn *a, const bn *b, bn **q_out, bn **r_out)
{
	uint32_t m = a->n, n = b->n;
	bn *q, *r;
	if (n == 0)
		fatal(EXIT_CORRUPT, "bignum division by zero (corrupted operand)");
	if (bn_cmp(a, b) < 0) {
		q = bn_from_u64(0);
		r = bn_copy(a);
	} else if (n == 1) {
		uint32_t rem;
		q = bn_div_u32(a, b->limb[0], &rem);
		r = bn_from_u64(rem);
	} else {
		unsigned s = leading_zeros32(b->limb[n - 1]);
		/* normalized copies: temporaries, as a bignum library would allocate them */
		uint32_t *vn = xmalloc_or_die(n * sizeof(uint32_t));
		uint32_t *un = xmalloc_or_die((m + 1) * sizeof(uint32_t));
		allocs += 2;
		for (uint32_t i = n - 1; i > 0; i--)
			vn[i] = (uint32_t)(((uint64_t)b->limb[i] << s) | ((uint64_t)b->limb[i - 1] >> (32 - s)));
		vn[0] = b->limb[0] << s;
		un[m] = (uint32_t)((uint64_t)a->limb[m - 1] >> (32 - s));
		for (uint32_t i = m - 1; i > 0; i--)
			un[i] = (uint32_t)(((uint64_t)a->limb[i] << s) | ((uint64_t)a->limb[i - 1] >> (32 - s)));
		un[0] = a->limb[0] << s;

		q = bn_alloc(m - n + 1);
		for (int64_t j = (int64_t)(m - n); j >= 0; j--) {
			uint64_t num = ((uint64_t)un[j + n] << 32) | un[j + n - 1];
			uint64_t qhat = num / vn[n - 1];
			uint64_t rhat = num % vn[n - 1];
			while (qhat >= (1ULL << 32) || qhat * vn[n - 2] > ((rhat << 32) | un[j + n - 2])) {
				qhat--;
				rhat += vn[n - 1];
				if (rhat >= (1ULL << 32))
					break;
			}
			int64_t borrow = 0, t;
			for (uint32_t i = 0; i < n; i++) {
				uint64_t p = qhat * vn[i];
				t = (int64_t)un[i + j] - borrow - (int64_t)(p & 0xffffffffu);
				un[i + j] = (uint32_t)t;
				borrow = (int64_t)(p >> 32) - (t >> 32);
			}
			t = (int64_t)un[j + n] - borrow;
			un[j + n] = (uint32_t)t;
			q->limb[j] = (uint32_t)qhat;
			if (t < 0) {
				q->limb[j]--;
				uint64_t carry = 0;
				for (uint32_t i = 0; i < n; i++) {
					carry += (uint64_t)un[i + j] + vn[i];
					un[i + j] = (uint32_t)carry;
					carry >>= 32;
				}
				un[j + n] += (uint32_t)carry;
			}
		}
		bn_fin(q, m - n + 1);
		r = bn_alloc(n);
		for (uint32_t i = 0; i < n; i++)
			r->limb[i] = (uint32_t)(((uint64_t)un[i] >> s) | ((uint64_t)un[i + 1] << (32 - s)));
		bn_fin(r, n);
		free(vn);
		free(un);
	}
	if (q_out)
		*q_out = q;
	else
		bn_free(q);
	if (r_out)
		*r_out = r;
	else
		bn_free(r);
}

static bn *bn_mod(const bn *a, const bn *m)
{
	bn *r;
	bn_divmod(a, m, NULL, &r);
	return r;
}

static bn *bn_div(const bn *a, const bn *b)
{
	bn *q;
	bn_divmod(a, b, &q, NULL);
	return q;
}

static bn *bn_shr1(const bn *a)
{
	bn_check(a);
	bn *r = bn_alloc(a->n);
	for (uint32_t i = 0; i < a->n; i++)
		r->limb[i] = (a->limb[i] >> 1) | (i + 1 < a->n ? a->limb[i + 1] << 31 : 0);
	return bn_fin(r, a->n);
}

/* floor(sqrt(a)) by Newton's iteration from a power of two above the root. */
static bn *bn_isqrt(const bn *a)
{
	unsigned half = (bn_bits(a) + 1) / 2;
	bn *x = bn_alloc(half / 32 + 1);
	memset(x->limb, 0, (half / 32 + 1) * sizeof(uint32_t));
	x->limb[half / 32] = 1u << (half % 32);
	bn_fin(x, half / 32 + 1);
	for (unsigned iter = 0;; iter++) {
		if (iter > 2 * BN_MAX_LIMBS * 32)
			fatal(EXIT_CORRUPT, "square root does not converge (corrupted bignum)");
		bn *q = bn_div(a, x);
		bn *s = bn_add(x, q);
		bn *y = bn_shr1(s);
		bn_free(q);
		bn_free(s);
		if (bn_cmp(y, x) >= 0) {
			bn_free(y);
			return x;
		}
		bn_free(x);
		x = y;
	}
}

static bn *bn_mulmod(const bn *a, const bn *b, const bn *m)
{
	bn *p = bn_mul(a, b);
	bn *r = bn_mod(p, m);
	bn_free(p);
	return r;
}

/* ------------------------------------------------------------------ number theory helpers */

/* b^e mod m for m < 2^32, so every product fits in 64 bits. */
static uint32_t powmod_u32(uint32_t b, uint32_t e, uint32_t m)
{
	uint64_t r = 1 % m, x = b % m;
	while (e) {
		if (e & 1)
			r = r * x % m;
		x = x * x % m;
		e >>= 1;
	}
	return (uint32_t)r;
}

static int is_prime_u32(uint32_t n)
{
	if (n < 2)
		return 0;
	for (uint32_t d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

/* Picks the factor base of N: 2, then odd primes p with N a nonzero square mod p. */
static void factor_base(const bn *n, uint32_t *fb)
{
	unsigned count = 0;
	fb[count++] = 2;
	for (uint32_t p = 3; count < FACTOR_BASE; p += 2) {
		if (!is_prime_u32(p))
			continue;
		uint32_t r = bn_mod_u32(n, p);
		if (r != 0 && powmod_u32(r, (p - 1) / 2, p) == 1)
			fb[count++] = p;
	}
}

/* ------------------------------------------------------------------ relations */

static relation *relation_new(const bn *a, const uint8_t *exps, uint64_t lp, int sign)
{
	relation *rel = xmalloc_or_die(sizeof(*rel));
	rel->exps = xmalloc_or_die(FACTOR_BASE);
	allocs += 2;
	memcpy(rel->exps, exps, FACTOR_BASE);
	rel->a = bn_copy(a);
	rel->lp = lp;
	rel->sign = sign;
	rel->next = NULL;
	return rel;
}

static void relation_free(relation *rel)
{
	bn_free(rel->a);
	free(rel->exps);
	free(rel);
}

/* Recomputes A^2 and sign * prod(p^e) * lp modulo N; returns 1 if they agree. */
static int relation_ok(const relation *rel, const bn *n, const uint32_t *fb)
{
	bn *lhs = bn_mulmod(rel->a, rel->a, n);
	bn *rhs = bn_from_u64(1);
	for (unsigned i = 0; i < FACTOR_BASE; i++) {
		for (unsigned e = 0; e < rel->exps[i]; e++) {
			bn *p = bn_from_u64(fb[i]);
			bn *t = bn_mulmod(rhs, p, n);
			bn_free(p);
			bn_free(rhs);
			rhs = t;
		}
	}
	bn *lp = bn_from_u64(rel->lp);
	bn *t = bn_mulmod(rhs, lp, n);
	bn_free(lp);
	bn_free(rhs);
	rhs = t;
	if (rel->sign < 0 && rhs->n != 0) {
		t = bn_sub(n, rhs);
		bn_free(rhs);
		rhs = t;
	}
	int ok = bn_cmp(lhs, rhs) == 0;
	bn_free(lhs);
	bn_free(rhs);
	return ok;
}

/* ------------------------------------------------------------------ the cfrac loop */

struct totals {
	unsigned long steps, full, partial, combined;
};

static void run_number(const bn *n, unsigned long steps, struct totals *tot)
{
	uint32_t fb[FACTOR_BASE];
	uint8_t exps[FACTOR_BASE];
	factor_base(n, fb);
	uint64_t lp_max = (uint64_t)fb[FACTOR_BASE - 1] * fb[FACTOR_BASE - 1];

	relation **partials = calloc(HASH_BUCKETS, sizeof(*partials));
	if (partials == NULL)
		fatal(EXIT_SYSTEM, "calloc failed");
	relation *fulls = NULL;

	bn *a0 = bn_isqrt(n);
	bn *m = bn_from_u64(0);
	bn *d = bn_from_u64(1);
	bn *a = bn_copy(a0);
	bn *prev = bn_from_u64(1); /* A(k-2) mod N */
	bn *cur = bn_mod(a0, n);   /* A(k-1) mod N */

	for (unsigned long k = 1; k <= steps; k++) {
		/* m' = d a - m;  d' = (N - m'^2) / d;  a' = (a0 + m') / d' */
		bn *da = bn_mul(d, a);
		bn *m1 = bn_sub(da, m);
		bn *mm = bn_mul(m1, m1);
		bn *num = bn_sub(n, mm);
		bn *d1 = bn_div(num, d);
		bn *s = bn_add(a0, m1);
		bn *a1 = bn_div(s, d1);
		bn_free(da);
		bn_free(mm);
		bn_free(num);
		bn_free(s);
		int sign = (k & 1) ? -1 : 1;

		if ((k & 3) == 0) { /* A(k-1)^2 = (-1)^k Q(k) (mod N) */
			bn *lhs = bn_mulmod(cur, cur, n);
			bn *rhs = sign > 0 ? bn_copy(d1) : bn_sub(n, d1);
			if (bn_cmp(lhs, rhs) != 0)
				checks_failed++;
			bn_free(lhs);
			bn_free(rhs);
		}

		/* trial division of Q(k) = d1 over the factor base */
		bn *q = bn_copy(d1);
		memset(exps, 0, sizeof(exps));
		for (unsigned i = 0; i < FACTOR_BASE && !bn_is_u64(q, 1); i++) {
			for (;;) {
				uint32_t rem;
				bn *t = bn_div_u32(q, fb[i], &rem);
				if (rem != 0) {
					bn_free(t);
					break;
				}
				bn_free(q);
				q = t;
				exps[i]++;
			}
		}
		if (q->n <= 2) {
			uint64_t rest = q->n == 0 ? 0 : q->limb[0];
			if (q->n == 2)
				rest |= (uint64_t)q->limb[1] << 32;
			if (rest == 1) {
				relation *rel = relation_new(cur, exps, 1, sign);
				rel->next = fulls;
				fulls = rel;
				tot->full++;
			} else if (rest < lp_max) {
				relation **slot = &partials[rest % HASH_BUCKETS];
				relation *match = *slot;
				while (match != NULL && match->lp != rest)
					match = match->next;
				if (match == NULL) {
					relation *rel = relation_new(cur, exps, rest, sign);
					rel->next = *slot;
					*slot = rel;
					tot->partial++;
				} else { /* two partials with one large prime make a full relation */
					uint8_t sum[FACTOR_BASE];
					for (unsigned i = 0; i < FACTOR_BASE; i++)
						sum[i] = (uint8_t)(exps[i] + match->exps[i]);
					bn *prod = bn_mulmod(cur, match->a, n);
					relation *rel = relation_new(prod, sum, rest * rest, sign * match->sign);
					bn_free(prod);
					rel->next = fulls;
					fulls = rel;
					tot->combined++;
				}
			}
		}
		bn_free(q);

		/* A(k) = a' A(k-1) + A(k-2) (mod N) */
		bn *t1 = bn_mul(a1, cur);
		bn *t2 = bn_add(t1, prev);
		bn *next = bn_mod(t2, n);
		bn_free(t1);
		bn_free(t2);
		bn_free(prev);
		prev = cur;
		cur = next;
		bn_free(m);
		bn_free(d);
		bn_free(a);
		m = m1;
		d = d1;
		a = a1;
		tot->steps++;
		if (d->n == 0)
			fatal(EXIT_CORRUPT, "Q(k) became zero (corrupted bignum)");
	}

	/* verify and free every relation */
	while (fulls != NULL) {
		relation *rel = fulls;
		fulls = rel->next;
		if (!relation_ok(rel, n, fb))
			checks_failed++;
		relation_free(rel);
	}
	for (unsigned b = 0; b < HASH_BUCKETS; b++) {
		while (partials[b] != NULL) {
			relation *rel = partials[b];
			partials[b] = rel->next;
			if (!relation_ok(rel, n, fb))
				checks_failed++;
			relation_free(rel);
		}
	}
	free(partials);
	bn_free(a0);
	bn_free(m);
	bn_free(d);
	bn_free(a);
	bn_free(prev);
	bn_free(cur);
}

int main(int argc, char **argv)
{
	bench_name = "cfrac_like";
	if (argc > 3)
		fatal(EXIT_USAGE, "usage: cfrac_like [NUMBERS [STEPS_PER_NUMBER]]");
	unsigned long numbers = arg_ulong(argc, argv, 1, DEFAULT_NUMBERS, 1, 1000000);
	unsigned long steps = arg_ulong(argc, argv, 2, DEFAULT_STEPS, 1, 100000000);

	uint64_t rng = 0xcfac0001;
	struct totals tot = { 0, 0, 0, 0 };
	uint64_t t0 = now_ns();
	for (unsigned long i = 0; i < numbers; i++) {
		/* N: odd, 80..100 bits, not a perfect square (checked below) */
		unsigned bits = 80 + (unsigned)(i % 21);
		bn *n = bn_alloc(4);
		uint64_t lo = rng_next(&rng) | 1;
		uint64_t hi = rng_next(&rng) & ((1ULL << (bits - 64)) - 1);
		hi |= 1ULL << (bits - 65);
		n->limb[0] = (uint32_t)lo;
		n->limb[1] = (uint32_t)(lo >> 32);
		n->limb[2] = (uint32_t)hi;
		n->limb[3] = (uint32_t)(hi >> 32);
		bn_fin(n, 4);
		bn *r = bn_isqrt(n);
		bn *rr = bn_mul(r, r);
		int square = bn_cmp(rr, n) == 0;
		bn_free(r);
		bn_free(rr);
		if (!square)
			run_number(n, steps, &tot);
		bn_free(n);
	}
	uint64_t t1 = now_ns();

	if (checks_failed != 0)
		fatal(EXIT_CORRUPT, "%lu identity or relation checks failed (corrupted bignums)",
		      checks_failed);
	printf("RESULT name=cfrac ms=%.1f steps=%lu relations=%lu partials=%lu allocs=%lu "
	       "ns_per_step=%.1f\n",
	       (double)(t1 - t0) / 1e6, tot.steps, tot.full + tot.combined, tot.partial, allocs,
	       (double)(t1 - t0) / (double)tot.steps);
	return 0;
}
