#!/usr/bin/env bash
# sized_delete.sh: C++ delete + new of a 32-byte struct (bench/cxx_delete.cc) under every
# allocator, built two ways: with g++'s default sized delete (operator delete(void*, size_t))
# and with -fno-sized-deallocation (operator delete(void*)). Each run is one process pinned to
# the last CPU; a round runs both builds under every allocator, in a rotating order. Prints the
# median TSC cycles per delete + new of each, and per allocator the median of the paired
# ratios sized / plain (same round): what the size argument costs or saves.
#
# Usage: bench/sized_delete.sh [--rounds N] [--iters N] [--no-install]
# Environment: BUILD_DIR (default build), SLUBMALLOC_LIB, JEMALLOC_LIB, MIMALLOC_LIB, TCMALLOC_LIB.
set -euo pipefail
unset LD_PRELOAD

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/peers.sh
. "$ROOT/bench/peers.sh"
set_build_dir
note() { echo "sized_delete: $*" >&2; }
die() {
	note "$*"
	exit 1
}

ROUNDS=7 ITERS=20000000 INSTALL=1
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=${2:-} && shift ;;
	--iters) ITERS=${2:-} && shift ;;
	--no-install) INSTALL=0 ;;
	*) die "unknown argument '$1' (usage: bench/sized_delete.sh [--rounds N] [--iters N] [--no-install])" ;;
	esac
	shift
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ && "$ITERS" =~ ^[1-9][0-9]*$ ]] || die "--rounds and --iters take positive integers"

install_packages meson ninja-build gcc g++ libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev python3
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3) || die "python3 not found"; fi
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/slub-sized.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT

build_release preload/libslubmalloc.so bench/cxx_delete bench/cxx_delete_unsized
ALLOCATORS=(glibc jemalloc mimalloc tcmalloc slubmalloc)
locate_allocators

CPU=$(($(nproc) - 1))
note "$ROUNDS rounds x ${#AVAIL[@]} allocators x 2 builds, $ITERS iterations, CPU $CPU"
for ((r = 0; r < ROUNDS; r++)); do
	order=("${AVAIL[@]:r%NA}" "${AVAIL[@]:0:r%NA}")
	for a in "${order[@]}"; do
		for prog in cxx_delete cxx_delete_unsized; do
			pre=${LIB[$a]}
			[ "$pre" = none ] && pre=
			LD_PRELOAD=$pre taskset -c "$CPU" "$BUILD_ABS/bench/$prog" "$ITERS" |
				sed -n "s/^RESULT name=cxx_delete .*cycles_per_op=\([0-9.]*\).*/$r $a $prog \1/p" \
					>>"$TMPD/runs" || die "$prog under $a failed"
		done
	done
done

"$PY" - "$TMPD/runs" "${AVAIL[@]}" <<'EOF'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    r, a, prog, c = line.split()
    runs[(r, a, prog)] = float(c)
print("TSC cycles per delete + new (median), and sized / plain (median of paired ratios)")
print("| allocator | sized delete | plain delete | sized / plain |")
print("|---|---|---|---|")
for a in sys.argv[2:]:
    rs = sorted({k[0] for k in runs if k[1] == a})
    s = [runs[(r, a, "cxx_delete")] for r in rs]
    p = [runs[(r, a, "cxx_delete_unsized")] for r in rs]
    ratio = st.median(x / y for x, y in zip(s, p))
    print(f"| {a} | {st.median(s):.2f} ({min(s):.2f}-{max(s):.2f}) | "
          f"{st.median(p):.2f} ({min(p):.2f}-{max(p):.2f}) | {100 * ratio:.1f}% |")
EOF
