#!/usr/bin/env bash
# tests/sanitize.sh [tsan] [ubsan]: the engine under ThreadSanitizer and UBSan (default: both).
# Configures (once) and builds, with only the targets of tests/unit/meson.build:
#   build-tsan:  clang -fsanitize=thread. TSan defines malloc itself and calls it while it
#                initialises, so there the engine's entry points are renamed slubt_malloc, ...
#                (preload/meson.build) and the tests, compiled with the same renames, call them;
#                the 16-byte CAS is an __atomic builtin TSan sees (src/platform/arch_x86_64.h).
#   build-ubsan: gcc -fsanitize=undefined -fno-sanitize-recover=all (the first UB aborts).
# Then runs every unit_* test of each build and stress_mt_linked (tests/preload/stress_mt.c linked with
# the engine) at a reduced scale, twice: the second time with SLUBMALLOC_BACKGROUND=1 and a
# purge delay of 1 ms, so that the background thread purges while the threads run.
# Checked first (nm): a test's malloc calls reach the engine.
# A test passes only if it exits 0 AND no sanitizer report was written: reports go to files of
# their own (log_path), appended to the test's log, since some tests capture their stderr or
# their children's (a report made there would be swallowed) and children may _exit(0).
# Under TSan three cases are left out (tsan_skip): enomem of unit_bulk and unit_typed measure
# RSS under an RLIMIT_AS cap (TSan's shadow memory counts in both), and glibc_extras of
# unit_stats frees memory that libc allocated (open_memstream), which under TSan is TSan's.
# Output: `PASS kind/name (secs)` or `FAIL kind/name (why)` with the reports' SUMMARY lines;
# last line `N passed, M failed`; exit status non-zero on any failure. Logs: build-*/sanitize-logs/.
# Env: SLUB_SANITIZE_TIMEOUT (per test, default 300 s), SLUB_SANITIZE_STRESS (stress_mt scale,
# default 0.02 under TSan, 0.1 under UBSan).
set -u
cd "$(dirname "$0")/.." || exit 2
root=$PWD
per_test_timeout=${SLUB_SANITIZE_TIMEOUT:-300}
kinds=("$@")
[ "${#kinds[@]}" = 0 ] && kinds=(tsan ubsan)
npass=0 nfail=0
# test:case pairs not run under TSan (see the top comment)
tsan_skip=(unit_bulk:enomem unit_typed:enomem unit_stats:glibc_extras)

fail() { # name why [logfile]
    echo "FAIL $1 ($2)"
    if [ -n "${3:-}" ] && [ -s "$3" ]; then
        grep -E 'SUMMARY: (ThreadSanitizer|UndefinedBehaviorSanitizer)|runtime error:|ThreadSanitizer: CHECK|CHECK\(|^FAIL' "$3" |
            sed -e 's/ (pid=[0-9]*)//' -e 's/(BuildId: [0-9a-f]*)//' | sort | uniq -c | sort -rn |
            head -n 12 | sed -e 's/^/    | /'
        echo "    (full output: ${3#"$root"/})"
    fi
    nfail=$((nfail + 1))
}

# configure KIND DIR: meson setup with the sanitizer's options (only when DIR is not set up)
configure() {
    local kind=$1 dir=$2
    [ -f "$dir/build.ninja" ] && return 0
    rm -rf "$dir"
    if [ "$kind" = tsan ]; then
        CC=clang meson setup "$dir" --buildtype=release -Db_sanitize=thread -Db_lundef=false \
            -Dc_args=-g
    else
        CC=gcc meson setup "$dir" --buildtype=release -Db_sanitize=undefined \
            -Dc_args='-g -fno-sanitize-recover=all' -Dc_link_args='-fno-sanitize-recover=all'
    fi
}

# The executables defined in tests/unit/meson.build, as paths relative to the build dir.
unit_targets() {
    meson introspect --targets "$1" | python3 -c '
import json, os, sys
root = sys.argv[1]
for t in json.load(sys.stdin):
    if t["type"] == "executable" and t["defined_in"].endswith(os.path.join("tests", "unit", "meson.build")):
        for f in t["filename"]:
            print(os.path.relpath(f, root))
' "$1"
}

# The case names of a test built on api_util.h's run_cases (its `struct test_case` table).
case_names() {
    sed -n '/struct test_case [a-z_]*\[\] = {/,/};/p' "$1" 2>/dev/null |
        sed -nE 's/^[[:space:]]*\{"([a-z0-9_]+)",.*/\1/p'
}

for kind in "${kinds[@]}"; do
    case $kind in
    tsan | ubsan) ;;
    *)
        echo "usage: $0 [tsan] [ubsan]" >&2
        exit 2
        ;;
    esac
    dir=build-$kind
    logdir=$root/$dir/sanitize-logs
    mkdir -p "$dir"
    blog=$(mktemp "${TMPDIR:-/tmp}/slub_san.XXXXXX")
    if ! configure "$kind" "$dir" >"$blog" 2>&1; then
        mkdir -p "$logdir" && cp "$blog" "$logdir/build.log"
        fail "$kind/build" "meson setup failed" "$logdir/build.log"
        rm -f "$blog"
        continue
    fi
    # regenerate first (when a meson.build changed): the target list comes from the
    # introspection data, which would not yet name a test added since the last build
    ninja -C "$dir" build.ninja >>"$blog" 2>&1
    mapfile -t targets < <(unit_targets "$dir")
    if [ "${#targets[@]}" = 0 ] || ! ninja -C "$dir" "${targets[@]}" >>"$blog" 2>&1; then
        mkdir -p "$logdir" && cp "$blog" "$logdir/build.log"
        fail "$kind/build" "ninja failed" "$logdir/build.log"
        rm -f "$blog"
        continue
    fi
    mkdir -p "$logdir"
    cp "$blog" "$logdir/build.log"
    rm -f "$blog"
    echo "build $kind: ok ($dir, ${#targets[@]} test programs)"

    if [ "$kind" = tsan ]; then
        opts="halt_on_error=0 second_deadlock_stack=1 history_size=4"
        scale=${SLUB_SANITIZE_STRESS:-0.02}
    else
        opts="print_stacktrace=1 halt_on_error=1"
        scale=${SLUB_SANITIZE_STRESS:-0.1}
    fi

    # stress_mt_linked once more with SLUBMALLOC_BACKGROUND's thread purging as it runs
    for t in "${targets[@]}" tests/unit/stress_mt_linked@background; do
        name=$(basename "${t/@/_}")
        t=${t%@*}
        exe=$dir/$t
        log=$logdir/$name.log
        args=() extra=()
        case $name in
        stress_mt_linked) args=("$scale" 4) ;;
        stress_mt_linked_background)
            args=("$scale" 4) extra=(SLUBMALLOC_BACKGROUND=1 SLUBMALLOC_PURGE_DELAY_MS=1) ;;
        unit_*)
            if [ "$kind" = tsan ]; then
                mapfile -t cases < <(case_names "tests/unit/$name.c" |
                    grep -vxF -f <(printf '%s\n' "${tsan_skip[@]}" | sed -n "s/^$name://p"))
                args=("${cases[@]}")
            fi
            ;;
        *) continue ;;
        esac
        # its malloc calls must reach the engine: under TSan no object of the test may call a
        # libc name (TSan's allocator would answer); under UBSan a test that calls malloc
        # must define it (static engine) or load this build's libslubmalloc.so
        calls=$(find "$dir/$t.p" -name '*.o' -exec nm -u {} + 2>/dev/null |
            grep -cE ' U (malloc|calloc|realloc|free|memalign|aligned_alloc|posix_memalign|malloc_usable_size)$')
        if [ "$kind" = tsan ] && [ "$calls" != 0 ]; then
            fail "$kind/$name" "it calls libc's malloc names, not the engine's slubt_* (built without slub_rename_args?)"
            continue
        fi
        if [ "$kind" = ubsan ] && [ "$calls" != 0 ] && ! nm "$exe" | grep -qE ' T malloc$' &&
            ! ldd "$exe" 2>/dev/null | grep -q "libslubmalloc.so => $root/$dir/"; then
            fail "$kind/$name" "its malloc is not slubmalloc's"
            continue
        fi
        t0=$(date +%s.%N)
        # reports go to files of their own (log_path.PID): a test that captures its stderr
        # (or a child's) must not swallow them
        rm -f "$logdir/$name.report".*
        env -u LD_PRELOAD "${extra[@]}" TSAN_OPTIONS="$opts log_path=$logdir/$name.report" \
            UBSAN_OPTIONS="$opts log_path=$logdir/$name.report" \
            timeout -k 10 "$per_test_timeout" "$exe" "${args[@]}" >"$log" 2>&1 </dev/null
        rc=$?
        for r in "$logdir/$name.report".*; do
            [ -e "$r" ] && { echo "---- sanitizer report file ${r##*/}"; cat "$r"; } >>"$log"
        done
        secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }')
        nrep=$(grep -cE 'WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|ThreadSanitizer: CHECK|runtime error:|ERROR: UndefinedBehaviorSanitizer' "$log")
        if [ "$rc" = 0 ] && [ "$nrep" = 0 ]; then
            echo "PASS $kind/$name ($secs)"
            npass=$((npass + 1))
        elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            fail "$kind/$name" "timed out after ${per_test_timeout}s; $nrep sanitizer reports" "$log"
        else
            fail "$kind/$name" "exit code $rc, $secs; $nrep sanitizer reports" "$log"
        fi
    done
done

echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
