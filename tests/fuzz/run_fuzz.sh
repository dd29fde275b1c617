#!/usr/bin/env bash
# tests/fuzz/run_fuzz.sh SECONDS: builds the harness if needed (tests/fuzz/build.sh), then fuzzes
# for SECONDS (default 60) starting from a copy of the committed seed corpus tests/fuzz/corpus/,
# in a temporary directory: the committed corpus is never written. Half of the time in the
# default mode, a third under SLUBMALLOC_DEBUG=1 (every check: red zones, poison, quarantine,
# zeroing, form mismatch, guarded large blocks), the rest under SLUBMALLOC_KFENCE=20. Prints the harness's final
# statistics, among them stat::number_of_executed_units. Exit status: 0 when the run ended
# without a crash, non-zero on any crash / shadow-model violation / engine report / timeout /
# build failure. On failure the crashing input and the full log are kept in build-fuzz/
# (fuzz-artifacts/, fuzz.log) and the reproduction command is printed.
#
# tests/fuzz/run_fuzz.sh --selftest: proves each check of the harness can fire. For every fault
# mode of FUZZ_OPS_INJECT (a corrupted byte, a live block handed out twice, a dirty calloc
# block, a usable size one byte short, a misaligned block) it replays one seed of the corpus
# with the fault planted and requires a crash whose message names that check. PASS/FAIL per
# mode; exits non-zero unless all fire.
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
dir=${FUZZ_BUILD_DIR:-build-fuzz}

selftest=0
secs=60
case "${1:-}" in
--selftest) selftest=1 ;;
'') ;;
*[!0-9]* | 0)
    echo "usage: $0 SECONDS | --selftest" >&2
    exit 2
    ;;
*) secs=$1 ;;
esac

bin=$(bash tests/fuzz/build.sh 2>"${TMPDIR:-/tmp}/fuzz_build.$$.log" | tail -n 1)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "run_fuzz: build failed:" >&2
    tail -n 30 "${TMPDIR:-/tmp}/fuzz_build.$$.log" >&2
    rm -f "${TMPDIR:-/tmp}/fuzz_build.$$.log"
    exit 2
fi
rm -f "${TMPDIR:-/tmp}/fuzz_build.$$.log"
bin=$root/$bin

work=$(mktemp -d "${TMPDIR:-/tmp}/slub_fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r tests/fuzz/corpus "$work/corpus"
mkdir -p "$work/artifacts"

if [ "$selftest" = 1 ]; then
    # mode : the seed it replays (one with plenty of chances to plant it) : the text its
    # violation message must contain
    modes=("corrupt:malloc_small:corrupted at byte" "overlap:malloc_small:overlaps live block"
           "calloc:calloc_recycled:not zero" "usable:malloc_small:< requested"
           "align:malloc_small:is not aligned")
    nfail=0
    for m in "${modes[@]}"; do
        mode=${m%%:*} rest=${m#*:}
        seed=${rest%%:*} want=${rest#*:}
        FUZZ_OPS_INJECT=$mode timeout -k 5 120 "$bin" -artifact_prefix="$work/artifacts/" \
            "$work/corpus/$seed" >"$work/$mode.log" 2>&1
        rc=$?
        line=$(grep -m1 'fuzz_ops: VIOLATION' "$work/$mode.log")
        if [ "$rc" != 0 ] && printf '%s' "$line" | grep -qF -- "$want"; then
            echo "PASS selftest $mode (exit $rc): $line"
        else
            echo "FAIL selftest $mode (exit $rc; expected a violation containing '$want')"
            grep -E 'VIOLATION|slubmalloc:|runtime error' "$work/$mode.log" | head -n 5 | sed 's/^/    | /'
            nfail=$((nfail + 1))
        fi
    done
    echo "selftest: $((${#modes[@]} - nfail)) of ${#modes[@]} fault modes detected"
    [ "$nfail" = 0 ]
    exit
fi

log=$work/fuzz.log
rc=0
dsecs=$((secs / 3 ? secs / 3 : 1)) ksecs=$((secs / 6 ? secs / 6 : 1))
for pass in "default:$((secs - dsecs - ksecs > 0 ? secs - dsecs - ksecs : 1))" "debug:$dsecs" \
    "kfence:$ksecs"; do
    name=${pass%%:*} t=${pass#*:}
    env=(env -u SLUBMALLOC_DEBUG -u SLUBMALLOC_KFENCE)
    [ "$name" = debug ] && env+=(SLUBMALLOC_DEBUG=1)
    [ "$name" = kfence ] && env+=(SLUBMALLOC_KFENCE=20)
    echo "run_fuzz: $bin for ${t}s ($name mode) over a copy of tests/fuzz/corpus ($(find tests/fuzz/corpus -type f | wc -l) seeds)"
    timeout -k 10 $((t + 120)) "${env[@]}" "$bin" -max_total_time="$t" -print_final_stats=1 \
        -max_len=2048 -timeout=30 -rss_limit_mb=2048 -artifact_prefix="$work/artifacts/" \
        "$work/corpus" >"$log" 2>&1
    rc=$?
    grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)" "$log" | sed 's/^/  /'
    grep -E '^stat::' "$log" | sed 's/^/  /'
    [ "$rc" = 0 ] && grep -q '^stat::number_of_executed_units' "$log" || break
done
if [ "$rc" = 0 ] && grep -q '^stat::number_of_executed_units' "$log"; then
    echo "run_fuzz: ok, $(find "$work/corpus" -type f | wc -l) inputs in the working corpus"
    exit 0
fi
keep=$root/$dir
rm -rf "$keep/fuzz-artifacts"
mkdir -p "$keep/fuzz-artifacts"
cp "$work"/artifacts/* "$keep/fuzz-artifacts/" 2>/dev/null
cp "$log" "$keep/fuzz.log"
echo "run_fuzz: FAILED (exit code $rc)"
grep -E 'fuzz_ops: VIOLATION|slubmalloc:|runtime error|ERROR: libFuzzer|SUMMARY' "$log" | head -n 10 | sed 's/^/  | /'
for a in "$keep"/fuzz-artifacts/*; do
    [ -e "$a" ] && echo "  reproduce: $bin ${a#"$root"/}"
done
echo "  full log: ${keep#"$root"/}/fuzz.log"
exit 1
