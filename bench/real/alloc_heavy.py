"""Allocation-heavy Python program for bench/compare.sh (workload real_python).

Run with PYTHONMALLOC=malloc so that every Python object comes from malloc (the interpreter's
own small-object arena is bypassed) under the preloaded allocator. Deterministic (fixed seed);
exercises the object patterns of ordinary Python code: trees of small objects built and
dropped, dicts of strings, lists of tuples sorted by key, string building, a JSON round trip.
Validates its own results (exit status 3 on a mismatch) and prints one RESULT line.
"""
import json
import random
import sys
import time


class Node:
    __slots__ = ("left", "right", "value")

    def __init__(self, left, right, value):
        self.left = left
        self.right = right
        self.value = value


def make_tree(depth, value):
    if depth == 0:
        return Node(None, None, value)
    return Node(make_tree(depth - 1, 2 * value), make_tree(depth - 1, 2 * value + 1), value)


def check_tree(node):
    if node.left is None:
        return 1
    return 1 + check_tree(node.left) + check_tree(node.right)


def trees(rng, rounds):
    total = 0
    long_lived = make_tree(14, 1)
    for _ in range(rounds):
        depth = rng.randint(8, 12)
        total += check_tree(make_tree(depth, 1))
    return total + check_tree(long_lived)


def words(rng, count):
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "vo", "qua", "zel", "ph", "or"]
    counts = {}
    for _ in range(count):
        w = "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
        counts[w] = counts.get(w, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return len(counts), ranked[0][1]


def records(rng, count):
    rows = [(rng.random(), "id%07d" % i, [i, i * 2, str(i)]) for i in range(count)]
    rows.sort(key=lambda r: r[0])
    by_key = {r[1]: r for r in rows}
    doc = json.dumps([{"k": r[1], "v": r[0], "l": r[2]} for r in rows[: count // 4]])
    back = json.loads(doc)
    assert len(back) == count // 4 and back[0]["k"] in by_key
    parts = []
    for r in rows[::7]:
        parts.append("%s=%.3f;" % (r[1], r[0]))
    return len("".join(parts)), len(by_key)


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    rng = random.Random(20261129)
    t0 = time.perf_counter()
    n_tree = trees(rng, int(40 * scale))
    n_words, top = words(rng, int(300000 * scale))
    text_len, n_keys = records(rng, int(150000 * scale))
    t1 = time.perf_counter()
    if n_keys != int(150000 * scale) or n_tree <= 0 or top <= 0 or n_words <= 0:
        print("alloc_heavy.py: self-check failed", file=sys.stderr)
        sys.exit(3)
    print("RESULT name=real_python ms=%.1f tree_nodes=%d words=%d text=%d"
          % ((t1 - t0) * 1e3, n_tree, n_words, text_len))


if __name__ == "__main__":
    main()
