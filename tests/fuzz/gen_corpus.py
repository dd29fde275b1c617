#!/usr/bin/env python3
"""gen_corpus.py: writes the seed corpus of tests/fuzz/fuzz_ops into tests/fuzz/corpus/ (or the
directory given as argv[1]): a few dozen small inputs, each a named scenario that reaches one
part of the harness (every operation, every size category and class boundaries, realloc chains,
bulk runs, remote and exiting-thread operations, the failure contracts) plus mixed sequences.
The encoding mirrors fuzz_ops.c (enum op, decode_size, the op_* readers); keep them in step.
Deterministic: the same files every run. Existing files of the directory are replaced."""
import os
import random
import sys

# enum op in fuzz_ops.c
MALLOC, CALLOC, REALLOC, MEMALIGN, FREE, MALLOC_BULK, FREE_BULK, CHECK, REMOTE_FREE, \
    REMOTE_ALLOC, EXITING_THREAD, ERRORS, MALLOC2, FREE2 = range(14)
NCLASS = 88
MAX_SMALL = 131072


def class_size(c):
    """sm_class_size(): 16..128 by 16, then 8 classes per power of two up to 128 KiB."""
    if c < 8:
        return 16 * (c + 1)
    k = c - 8
    lg = 7 + k // 8
    return (1 << lg) + (k % 8 + 1) * (1 << (lg - 3))


# ---- sizes, as decode_size() reads them ----
def tiny(n):          # 0 .. 32
    return [0, n]


def small(n):         # 1 .. 4096
    return [2, (n - 1) & 0xFF, (n - 1) >> 8]


def boundary(cls, d):  # class size + d, d in -1, 0, +1
    return [3, cls, d + 1]


def medium(n):        # 1 .. 32768
    return [4, (n - 1) & 0xFF, (n - 1) >> 8]


def upto_small(n):    # 1 .. MAX_SMALL + 8192
    x = n - 1
    return [5, x & 0xFF, (x >> 8) & 0xFF, x >> 16]


def near_max(k):      # MAX_SMALL - 32 + k
    return [6, k]


def large(n):         # MAX_SMALL + 1 + 4x: up to 4 MiB (range selector 5: the widest)
    x = (n - MAX_SMALL - 1) // 4
    return [7, 5, x & 0xFF, (x >> 8) & 0xFF, x >> 16]


# ---- operations ----
def malloc(s, sz):
    return [MALLOC, s] + sz


def calloc(s, sz, elem_log=0):
    return [CALLOC, s] + sz + [elem_log]


def realloc(s, sz):
    return [REALLOC, s] + sz


def memalign(s, sz, variant, align_log, odd=0):
    b = [MEMALIGN, s] + sz + [variant, align_log]
    return b + ([odd & 0xFF, odd >> 8] if variant == 3 else [])


def free(s):
    return [FREE, s]


def malloc_bulk(s, sz, n):
    return [MALLOC_BULK, s] + sz + [n - 1]


def free_bulk(s, n):
    return [FREE_BULK, s, n - 1]


def check(s):
    return [CHECK, s]


def remote_free(s, n, bulk):
    return [REMOTE_FREE, s, n - 1, bulk]


def remote_alloc(s, sz, n, bulk):
    return [REMOTE_ALLOC, s] + sz + [n - 1, bulk]


def exiting_alloc(s, sz, n, bulk):
    return [EXITING_THREAD, s, 1] + sz + [n - 1, bulk]


def exiting_free(s, n, bulk):
    return [EXITING_THREAD, s, 0, n - 1, bulk]


def errors(s, variant, extra=0):
    return [ERRORS, s, 0, 0, variant, extra]


def seeds():
    out = {}
    out["malloc_tiny"] = sum((malloc(i, tiny(i % 33)) for i in range(40)), []) + \
        sum((free(i) for i in range(0, 40, 2)), [])
    out["malloc_small"] = sum((malloc(i, small(1 + i * 97)) for i in range(32)), []) + \
        sum((check(i) for i in range(32)), [])
    for lo in (0, 30, 60):
        seq = []
        for k, c in enumerate(range(lo, min(lo + 30, NCLASS))):
            for d in (-1, 0, 1):
                seq += malloc((k * 3 + d + 1) % 64, boundary(c, d))
        out["class_boundaries_%02d" % lo] = seq
    out["near_max_small"] = sum((malloc(i, near_max(i)) for i in range(64)), [])
    out["medium"] = sum((malloc(i, medium(1000 * i + 17)) for i in range(32)), []) + \
        sum((free(i) for i in range(32)), [])
    out["large"] = sum((malloc(i, large(MAX_SMALL + 1 + i * 200000)) for i in range(12)), []) + \
        sum((free(i) for i in range(0, 12, 3)), []) + \
        sum((malloc(i, large(MAX_SMALL + 4097 + i * 100000)) for i in range(0, 12, 3)), [])
    mix = [tiny(0), tiny(9), small(50), medium(7000), upto_small(40000), near_max(33),
           large(MAX_SMALL + 5000), boundary(20, 1)]
    out["calloc_mix"] = sum((calloc(i, mix[i % len(mix)], i % 5) for i in range(28)), [])
    out["calloc_recycled"] = sum((malloc(i, small(4000)) + free(i) + calloc(i, small(4000), 2)
                                  for i in range(16)), []) + \
        malloc(20, large(3 << 20)) + free(20) + calloc(20, large(3 << 20), 4)
    out["realloc_grow"] = malloc(5, tiny(1)) + sum(
        (realloc(5, sz) for sz in (tiny(24), small(200), small(4000), medium(30000),
                                   upto_small(100000), near_max(40), large(1 << 20),
                                   large(3 << 20))), [])
    out["realloc_shrink"] = malloc(7, large(4 << 20)) + sum(
        (realloc(7, sz) for sz in (large(2 << 20), large(MAX_SMALL + 1), near_max(0),
                                   medium(20000), small(3000), small(100), tiny(8), tiny(0))), [])
    out["realloc_null_and_zero"] = realloc(3, small(300)) + realloc(3, tiny(0)) + \
        realloc(3, small(10)) + realloc(3, small(4096)) + free(3)
    out["realloc_interleaved"] = sum((malloc(i, small(64)) for i in range(10)), []) + sum(
        (realloc(i % 10, small(64 + 40 * i)) + malloc(10 + i, small(64)) for i in range(20)), [])
    for v in range(6):
        out["memalign_v%d" % v] = sum((memalign(i, [tiny(0), small(100), medium(5000),
                                                     upto_small(70000), large(300000)][i % 5],
                                                v, i % 22, 1 + 37 * i) for i in range(22)), [])
    out["memalign_zero_size"] = sum((memalign(i, tiny(0), i % 3, 5 + i) for i in range(17)), [])
    out["bulk_roundtrip"] = malloc_bulk(0, small(48), 16) + free_bulk(0, 16) + \
        malloc_bulk(16, medium(9000), 16) + free_bulk(16, 16) + \
        malloc_bulk(32, tiny(0), 16) + free_bulk(30, 16)
    out["bulk_classes"] = sum((malloc_bulk((c * 5) % 60, boundary(c, 0), 1 + c % 16) +
                               free_bulk((c * 5 + 2) % 60, 8) for c in range(0, NCLASS, 3)), [])
    out["bulk_mixed_free"] = sum((malloc(i, small(16 * (i + 1))) for i in range(16)), []) + \
        malloc_bulk(16, small(32), 16) + free_bulk(8, 16) + sum((free(i) for i in range(32)), [])
    out["bulk_large"] = malloc_bulk(0, large(200000), 4) + free_bulk(0, 4) + \
        malloc_bulk(4, upto_small(MAX_SMALL + 100), 3) + free_bulk(4, 3)
    out["remote_free"] = sum((malloc(i, small(24 + 8 * i)) for i in range(32)), []) + \
        remote_free(0, 16, 0) + remote_free(16, 16, 1) + \
        sum((malloc(i, small(24 + 8 * i)) for i in range(32)), [])
    out["remote_alloc"] = remote_alloc(0, small(48), 16, 0) + remote_alloc(16, medium(5000), 16, 1) + \
        sum((free(i) for i in range(32)), []) + remote_alloc(32, tiny(16), 16, 1) + \
        free_bulk(32, 16)
    out["remote_pingpong"] = sum((remote_alloc(i % 48, small(32), 8, i & 1) +
                                  remote_free((i * 3) % 48, 8, (i >> 1) & 1) +
                                  malloc((i * 7) % 64, small(32)) for i in range(20)), [])
    out["exiting_threads"] = sum((exiting_alloc(i * 8 % 64, small(40 + i), 8, i & 1) for i in
                                  range(8)), []) + sum((free(i) for i in range(64)), []) + \
        sum((malloc(i, small(100)) for i in range(16)), []) + exiting_free(0, 16, 1)
    out["errors"] = sum((errors(i, v, e) for i, (v, e) in
                         enumerate([(0, 0), (1, 0), (1, 5), (3, 0), (3, 1), (4, 0), (5, 0)])), []) + \
        malloc(9, small(77)) + errors(9, 2) + malloc(10, large(1 << 20)) + errors(10, 2) + check(9) + \
        check(10)
    out["free2_malloc2"] = sum(([MALLOC2, i] + small(i * 60 + 1) + [FREE2, (i * 5) % 64]
                                for i in range(40)), [])
    # mixed sequences from a fixed PRNG: every op, sizes from every category
    rng = random.Random(20261129)
    makers = [
        lambda s: malloc(s, rng.choice(SIZES)()), lambda s: calloc(s, rng.choice(SIZES)(), rng.randrange(5)),
        lambda s: realloc(s, rng.choice(SIZES)()), lambda s: memalign(s, rng.choice(SIZES)(),
                                                                     rng.randrange(6), rng.randrange(22),
                                                                     rng.randrange(65536)),
        lambda s: free(s), lambda s: malloc_bulk(s, rng.choice(SIZES)(), rng.randrange(1, 17)),
        lambda s: free_bulk(s, rng.randrange(1, 17)), lambda s: check(s),
        lambda s: remote_free(s, rng.randrange(1, 17), rng.randrange(2)),
        lambda s: remote_alloc(s, rng.choice(SIZES)(), rng.randrange(1, 17), rng.randrange(2)),
        lambda s: errors(s, rng.randrange(6), rng.randrange(256)),
    ]
    for k in range(10):
        seq = []
        for _ in range(rng.randrange(20, 60)):
            seq += rng.choice(makers)(rng.randrange(64))
        out["mixed_%02d" % k] = seq
    return out


SIZES = [lambda: tiny(random.randrange(33)), lambda: small(random.randrange(1, 4097)),
         lambda: boundary(random.randrange(NCLASS), random.randrange(-1, 2)),
         lambda: medium(random.randrange(1, 32769)),
         lambda: upto_small(random.randrange(1, MAX_SMALL + 8193)),
         lambda: near_max(random.randrange(64)),
         lambda: large(random.randrange(MAX_SMALL + 1, 4 << 20))]


def main():
    random.seed(7)
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    os.makedirs(outdir, exist_ok=True)
    for f in os.listdir(outdir):
        os.remove(os.path.join(outdir, f))
    total = 0
    for name, data in sorted(seeds().items()):
        b = bytes(x & 0xFF for x in data)
        total += len(b)
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(b)
    print("%d seeds, %d bytes, in %s" % (len(os.listdir(outdir)), total, outdir))


if __name__ == "__main__":
    main()
