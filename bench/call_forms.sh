#!/usr/bin/env bash
# call_forms.sh: bench/bulk's fallback loop (malloc n objects, then free them; per object, TSC
# cycles) under slubmalloc and mimalloc, with the program's calls made four ways: both through
# the GOT (-fno-plt), both through the PLT (Debian's default), and one of each. It shows how the
# way a program calls malloc and free moves each allocator's figure, apart from the allocator.
# Every run is one helper process (bench/bulk_fallback*, pinned to the last CPU); a round runs
# every form and placement of the loop (bulk_common.h: BULK_PLACED) under both allocators, back
# to back, in alternating order. Prints, per bulk size and form, the median cycles of each and
# the median of the paired ratios slubmalloc / mimalloc (same round, form and placement).
#
# Usage: bench/call_forms.sh [--rounds N] [--size BYTES] [--no-install]
#   --rounds N     rounds (default 5); --size: object size (default 64, bench/bulk's)
# Needs gcc (the mixed forms use its noplt attribute). Environment: BUILD_DIR (default build),
# SLUBMALLOC_LIB, MIMALLOC_LIB.
set -euo pipefail
unset LD_PRELOAD

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/peers.sh
. "$ROOT/bench/peers.sh"
set_build_dir
note() { echo "call_forms: $*" >&2; }
die() {
	note "$*"
	exit 1
}

ROUNDS=5 SIZE=64 INSTALL=1
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=${2:-} && shift ;;
	--size) SIZE=${2:-} && shift ;;
	--no-install) INSTALL=0 ;;
	*) die "unknown argument '$1' (usage: bench/call_forms.sh [--rounds N] [--size BYTES] [--no-install])" ;;
	esac
	shift
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ "$SIZE" =~ ^[1-9][0-9]*$ ]] || die "--size must be a positive integer"

install_packages meson ninja-build gcc libmimalloc-dev python3
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3) || die "python3 not found"; fi
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/slub-forms.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT

FORMS=(bulk_fallback bulk_fallback_plt bulk_fallback_gotmalloc bulk_fallback_gotfree)
build_release preload/libslubmalloc.so "${FORMS[@]/#/bench/}"
ALLOCATORS=(mimalloc slubmalloc)
locate_allocators
[ "$NA" = 2 ] || die "needs mimalloc and slubmalloc (${SKIPPED[*]})"

CPU=$(($(nproc) - 1))
note "$ROUNDS rounds x 4 forms x 4 placements x 2 allocators, size $SIZE, CPU $CPU"
for ((r = 0; r < ROUNDS; r++)); do
	for place in 0 1 2 3; do
		for form in "${FORMS[@]}"; do
			order=(mimalloc slubmalloc)
			(((r + place) % 2)) && order=(slubmalloc mimalloc)
			for a in "${order[@]}"; do
				LD_PRELOAD=${LIB[$a]} taskset -c "$CPU" "$BUILD_ABS/bench/$form" "$SIZE" 2097152 3 "$place" |
					sed -n "s/^FALLBACK /$r $place $form $a /p" >>"$TMPD/runs" ||
					die "$form under $a failed"
			done
		done
	done
done

"$PY" - "$TMPD/runs" <<'EOF'
import statistics as st, sys
from collections import defaultdict
cyc = {}
for line in open(sys.argv[1]):
    r, place, form, alloc, n, c, _ = line.split()
    cyc[(r, place, form, alloc, int(n[2:]))] = float(c.split('=')[1])
forms = [("bulk_fallback", "both GOT (-fno-plt)"), ("bulk_fallback_plt", "both PLT"),
         ("bulk_fallback_gotmalloc", "malloc GOT, free PLT"), ("bulk_fallback_gotfree", "malloc PLT, free GOT")]
ns = sorted({k[4] for k in cyc})
print("cycles per object (malloc + free), slubmalloc / mimalloc, and the median paired ratio")
print("| n | " + " | ".join(f for _, f in forms) + " |")
print("|---|" + "---|" * len(forms))
worst = defaultdict(float)
for n in ns:
    cells = []
    for form, _ in forms:
        keys = [k for k in cyc if k[2] == form and k[3] == "slubmalloc" and k[4] == n]
        ours = [cyc[k] for k in keys]
        mi = [cyc[(k[0], k[1], form, "mimalloc", n)] for k in keys]
        ratio = st.median(o / m for o, m in zip(ours, mi))
        worst[form] = max(worst[form], ratio)
        cells.append(f"{st.median(ours):.2f} / {st.median(mi):.2f} ({100 * ratio:.1f}%)")
    print(f"| {n} | " + " | ".join(cells) + " |")
print("worst ratio per form: " + ", ".join(f"{f} {100 * worst[k]:.1f}%" for k, f in forms))
EOF
