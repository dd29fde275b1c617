#!/usr/bin/env bash
# tests/cross.sh aarch64: the engine on aarch64, cross-built with Debian's gcc-aarch64-linux-gnu
# (meson cross file tests/cross/aarch64.txt, into build-aarch64) and run under qemu-user
# (qemu-user-static). Installs what it needs with apt-get when run as root.
# qemu-aarch64-static -p N makes the guest's page N bytes (sysconf reports it): the tests run
# at 4, 16 and 64 KiB. qemu-user has no rseq (ENOSYS) while membarrier works, so the per-CPU
# code takes its fallback. The default CPU model has LSE (caspal); -cpu cortex-a53 is an
# ARMv8.0 core without it, where the 16-byte CAS must take its ldaxp/stlxp loop (an LSE
# instruction there is SIGILL).
# Not run here: tests that exec themselves (qemu-user cannot exec a guest binary without
# binfmt_misc) and those that judge the RSS (qemu's own memory counts in it). The unit tests'
# `enomem` case is skipped: qemu-user does not enforce RLIMIT_AS on the guest; so is
# unit_bulk's random_vs_single, a timed comparison too slow under emulation.
# Every test runs at the three page sizes; the longer ones at 16 KiB only (CI's time).
# Last line: `N passed, M failed`.
set -u
arch=${1:-aarch64}
if [ "$arch" != aarch64 ]; then
    echo "cross.sh: only aarch64 is known"
    exit 2
fi
cd "$(dirname "$0")/.." || exit 2
need=(aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu aarch64-linux-gnu-g++:g++-aarch64-linux-gnu
      qemu-aarch64-static:qemu-user-static meson:meson ninja:ninja-build)
missing=()
for pair in "${need[@]}"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null 2>&1
        apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || echo "warning: apt-get install failed"
    else
        echo "warning: missing: ${missing[*]}"
    fi
fi
build=build-aarch64
log=$build/test-logs
npass=0 nfail=0
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --cross-file tests/cross/aarch64.txt --buildtype=release \
        -Dbenchmarks=false >/dev/null 2>&1 || { echo "FAIL cross setup"; echo "0 passed, 1 failed"; exit 1; }
fi
if ! ninja -C "$build" >"$build/ninja.log" 2>&1; then
    tail -n 20 "$build/ninja.log"
    echo "FAIL cross build"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "cross build: ok ($(file -b "$build/preload/libslubmalloc.so" | cut -d, -f1-2))"
mkdir -p "$log"
lib=$PWD/$build/preload/libslubmalloc.so

# qtest NAME PAGE CPU PRELOAD(0/1) PROGRAM ARGS...
qtest() {
    local name=$1 page=$2 cpu=$3 preload=$4
    shift 4
    local q=(qemu-aarch64-static -L /usr/aarch64-linux-gnu -p "$page" -cpu "$cpu"
             -E SLUBMALLOC_AVX2=0 -E UNIT_PCPU_FALLBACK_CHILD=1
             -E SLUB_TEST_SKIP=enomem:random_vs_single)
    [ "$preload" = 1 ] && q+=(-E "LD_PRELOAD=$lib" -E SLUBMALLOC_EXPECT=1 -E "SLUBMALLOC_LIB=$lib")
    local label="$name [page $((page / 1024)) KiB, $cpu]" out="$log/$name-$page-$cpu.log"
    local t0=$SECONDS
    if timeout -k 10 600 "${q[@]}" "$@" >"$out" 2>&1; then
        echo "PASS $label ($((SECONDS - t0))s)"
        npass=$((npass + 1))
    else
        echo "FAIL $label (exit code $?)"
        grep -m 5 -E 'FAIL|failed' "$out" | sed 's/^/    | /'
        tail -n 3 "$out" | sed 's/^/    | /'
        nfail=$((nfail + 1))
    fi
}

u=$build/tests/unit
for page in 4096 16384 65536; do
    for t in unit_cas unit_sizeclass unit_slab unit_tcache; do
        qtest "$t" "$page" max 0 "$u/$t"
    done
    qtest api_contract "$page" max 1 "$build/tests/preload/api_contract"
done
qtest stress_mt 16384 max 1 "$build/tests/preload/stress_mt"
# the rest at 16 KiB, the page of Apple's and some Ampere kernels
for t in unit_bulk unit_bulk_mt unit_typed unit_typed_mt unit_chains unit_sweep unit_gate unit_pcpu_alloc unit_pcpu_counter unit_pcpu_ref; do
    qtest "$t" 16384 max 0 "$u/$t"
done
qtest cxx_new 16384 max 1 "$build/tests/preload/cxx_new"
qtest fork_plain 16384 max 1 "$build/tests/preload/fork_plain" 20
# an ARMv8.0 core: no LSE, so the ldaxp/stlxp CAS
qtest unit_cas 4096 cortex-a53 0 "$u/unit_cas"
qtest stress_mt 4096 cortex-a53 1 "$build/tests/preload/stress_mt"
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
