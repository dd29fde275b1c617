#!/usr/bin/env bash
# tests/run.sh: the README's test command. Installs missing tools with apt-get (as root, only for
# commands that are absent), configures `build` (release) if needed, builds with ninja, then runs
# every test: the integration programs under LD_PRELOAD=build/preload/libslubmalloc.so with
# SLUBMALLOC_EXPECT=1 and SLUBMALLOC_LIB set, tests/real_programs.sh, glibc's malloc tests
# (tests/glibc_malloc.sh), a slice of CPython's regression tests (tests/cpython.sh), the
# bad-input suite, the fuzzer (a minute), the aarch64 cross build under qemu-user
# (tests/cross.sh), the sanitizer builds (tests/sanitize.sh), and every build/tests/**/unit_*
# executable directly (no preload). Each test runs under `timeout`; one line per test:
# `PASS name (secs)` or `FAIL name (exit code N)` followed by the last lines of its output
# (full logs in build/test-logs/). The last line is exactly `N passed, M failed`; the exit status
# is non-zero if anything failed. A missing preload library fails the preloaded tests.
set -u

cd "$(dirname "$0")/.." || exit 2
root=$PWD
per_test_timeout=${SLUB_TEST_TIMEOUT:-300}

# ---------- tools ----------
# command:package pairs, installed only when the command is absent
need=(meson:meson ninja:ninja-build gcc:gcc g++:g++ clang:clang python3:python3 perl:perl git:git
      google-pprof:google-perftools named:bind9 dig:bind9-dnsutils dnsperf:dnsperf
      redis-server:redis-server redis-cli:redis-tools
      sqlite3:sqlite3 sort:coreutils timeout:coreutils nm:binutils ps:procps /usr/bin/time:time)
missing=()
for pair in "${need[@]}"; do
    cmd=${pair%%:*} pkg=${pair#*:}
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing: $pkgs"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null 2>&1 || echo "warning: apt-get update failed"
        # shellcheck disable=SC2086
        apt-get install -y -qq $pkgs >/dev/null 2>&1 || echo "warning: apt-get install $pkgs failed"
    else
        echo "warning: missing packages (not root or no apt-get): $pkgs"
    fi
fi

npass=0 nfail=0
logdir=$root/build/test-logs

report_fail() { # name reason logfile
    echo "FAIL $1 ($2)"
    if [ -n "${3:-}" ] && [ -s "$3" ]; then
        # the failure lines first (they may be far from the end), then the end of the output
        if grep -q '^FAIL' "$3"; then
            grep '^FAIL' "$3" | head -n 12 | sed -e 's/^/    | /'
            echo "    | ..."
        fi
        tail -n 10 "$3" | sed -e 's/^/    | /'
        echo "    (full output: ${3#"$root"/})"
    fi
    nfail=$((nfail + 1))
}

# ---------- build ----------
build_ok=1
mkdir -p build
blog=$(mktemp "${TMPDIR:-/tmp}/slub_build.XXXXXX")
if [ ! -f build/build.ninja ]; then
    if ! meson setup build --buildtype=release >"$blog" 2>&1; then
        meson setup --wipe build --buildtype=release >"$blog" 2>&1 || build_ok=0
    fi
fi
if [ "$build_ok" = 1 ]; then
    ninja -C build >>"$blog" 2>&1 || build_ok=0
fi
mkdir -p "$logdir"
cp "$blog" "$logdir/build.log" 2>/dev/null
rm -f "$blog"
if [ "$build_ok" = 1 ]; then
    echo "build: ok"
else
    report_fail build "meson/ninja failed" "$logdir/build.log"
fi

lib=$root/build/preload/libslubmalloc.so

# run_test [--timeout SECS] NAME PRELOAD(0/1) CMD...: SECS, if above per_test_timeout, bounds
# this test instead
run_test() {
    local tmo=$per_test_timeout
    if [ "$1" = --timeout ]; then
        [ "$2" -gt "$tmo" ] && tmo=$2
        shift 2
    fi
    local name=$1 preload=$2
    shift 2
    local log=$logdir/$name.log
    if [ "$preload" = 1 ] && [ ! -f "$lib" ]; then
        report_fail "$name" "preload library build/preload/libslubmalloc.so is missing"
        return
    fi
    if [ ! -e "$1" ] && ! command -v "$1" >/dev/null 2>&1; then
        report_fail "$name" "test program $1 was not built"
        return
    fi
    local t0 t1 rc
    t0=$(date +%s.%N)
    if [ "$preload" = 1 ]; then
        LD_PRELOAD=$lib SLUBMALLOC_EXPECT=1 SLUBMALLOC_LIB=$lib \
            timeout -k 10 "$tmo" "$@" >"$log" 2>&1 </dev/null
    else
        env -u LD_PRELOAD SLUBMALLOC_LIB="$lib" \
            timeout -k 10 "$tmo" "$@" >"$log" 2>&1 </dev/null
    fi
    rc=$?
    t1=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1fs", b - a }')
    if [ "$rc" = 0 ]; then
        echo "PASS $name ($secs)"
        npass=$((npass + 1))
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        report_fail "$name" "timed out after ${tmo}s, exit code $rc" "$log"
    else
        report_fail "$name" "exit code $rc, $secs" "$log"
    fi
}

# the layers depend only downward: src/ never reaches into preload/, only src/platform/ calls
# the OS, no source file is over 1,000 lines (tests/layers.py)
run_test layers 0 python3 tests/layers.py

# the shared libraries need only libc and the loader, and export only the API
run_test linkage 0 bash tests/linkage.sh build

# ---------- integration tests (under the preloaded library) ----------
for t in api_contract cxx_new stress_mt fork fork_faults fork_stdio fork_signal fork_plain stats_cancel tight_as \
         many_large rss glibc_interpose thread_exit thread_rss init_order oom fork_load thread_churn xstress_long \
         calloc_locked calloc_fresh dirty_waves large_idle calloc_reuse; do
    run_test "$t" 1 "build/tests/preload/$t"
done
run_test kfence_rate 1 env SLUBMALLOC_KFENCE=10000 build/tests/preload/kfence_rate
# SLUBMALLOC_THP=1 gives slab regions huge pages (none before 2026-12-03: each region opened
# 64 KiB at a time); SLUBMALLOC_THP=0 refuses them
run_test thp_on 1 env SLUBMALLOC_THP=1 build/tests/preload/thp on
run_test thp_off 1 env SLUBMALLOC_THP=0 build/tests/preload/thp off
# SLUBMALLOC_BACKGROUND=1: freed memory goes back while the program is idle (it stayed before
# 2026-12-03: the purge delay was checked only at later frees); off: it stays
run_test background_on 1 env SLUBMALLOC_BACKGROUND=1 SLUBMALLOC_PURGE_DELAY_MS=200 \
    build/tests/preload/background on
run_test background_off 1 env SLUBMALLOC_BACKGROUND=0 SLUBMALLOC_PURGE_DELAY_MS=200 \
    build/tests/preload/background off
run_test background_fork 1 env SLUBMALLOC_BACKGROUND=1 SLUBMALLOC_PURGE_DELAY_MS=200 \
    build/tests/preload/background fork
run_test background_last 1 env SLUBMALLOC_BACKGROUND=1 build/tests/preload/background last
# A thread that stays on the fastpaths gives its cache back: poked by the background thread,
# or by another thread's malloc_trim (it kept 64 MiB of slabs before 2026-12-03); bulk: its
# only calls are malloc_bulk and free_bulk (they kept it before 2026-12-07)
run_test quiet_thread_background 1 env SLUBMALLOC_BACKGROUND=1 SLUBMALLOC_PURGE_DELAY_MS=200 \
    build/tests/preload/quiet_thread background
run_test quiet_thread_trim 1 env SLUBMALLOC_BACKGROUND=0 SLUBMALLOC_PURGE_DELAY_MS=200 \
    build/tests/preload/quiet_thread trim
run_test quiet_thread_bulk 1 env SLUBMALLOC_BACKGROUND=0 SLUBMALLOC_PURGE_DELAY_MS=200 \
    build/tests/preload/quiet_thread bulk
# SLUBMALLOC_DEBUG checks red zones and poison by malloc_trim, in the background thread's looks
# and at exit, not only at the block's own free
run_test debug_scan_trim 1 env SLUBMALLOC_DEBUG=1 build/tests/preload/debug_scan trim
run_test debug_scan_exit 1 env SLUBMALLOC_DEBUG=1 build/tests/preload/debug_scan exit
run_test debug_scan_background 1 env SLUBMALLOC_DEBUG=1 SLUBMALLOC_BACKGROUND=1 \
    SLUBMALLOC_PURGE_DELAY_MS=100 build/tests/preload/debug_scan background
# SIGSEGV and SIGBUS keep their meaning: a raise, kill or sigqueue is delivered as without the
# library (a raise(SIGSEGV) was swallowed before 2026-12-03), the program's handler set before
# (dlopen) or after the library's gets the same arguments, a real fault in a guard area is reported
for m in default:SLUBMALLOC_KFENCE=0 debug:SLUBMALLOC_DEBUG=1 kfence:SLUBMALLOC_KFENCE=100 \
         prof:SLUBMALLOC_PROF=1; do
    run_test "signal_${m%%:*}" 1 env "${m#*:}" SLUBMALLOC_PROF_FILE=/dev/null \
        build/tests/preload/signal preload
    run_test "signal_${m%%:*}_dlopen" 0 env "${m#*:}" SLUBMALLOC_PROF_FILE=/dev/null \
        build/tests/preload/signal dlopen
done
# The API's contract (alignment above all) with the blocks of debug caches and of profile
# samples (their slots carry red zones and metadata: 8-aligned blocks before 2026-12-03)
run_test api_contract_debug 1 env SLUBMALLOC_DEBUG=1 build/tests/preload/api_contract
# The same under libslubmalloc-debug.so without U: its memcpy and memset checks must let the
# engine's own writes (red zones, poison) through (they did not, before its range was known)
run_test api_contract_debuglib 0 env LD_PRELOAD="$root/build/preload/libslubmalloc-debug.so" \
    SLUBMALLOC_EXPECT=1 SLUBMALLOC_DEBUG=FZP build/tests/preload/api_contract
run_test api_contract_prof 1 env SLUBMALLOC_PROF=1 SLUBMALLOC_PROF_SAMPLE=4096 \
    SLUBMALLOC_PROF_FILE="$logdir/api_contract_prof" build/tests/preload/api_contract
# Under the patched entries of SLUBMALLOC_PROF=1 too, free keeps other threads' sub-line objects
# from reuse (passive false sharing: 200 of 200 reused before 2026-12-03). A rate with no
# samples here.
run_test unit_bulk_mt_prof 0 env SLUBMALLOC_PROF=1 SLUBMALLOC_PROF_SAMPLE=1073741824 \
    SLUBMALLOC_PROF_FILE=/dev/null build/tests/unit/unit_bulk_mt
# loaded with dlopen by a plugin linked with it, not preloaded
run_test dlopen_api 0 build/tests/linked/dlopen_api
# linked statically (libslubmalloc.a) into a program, checked with SLUBMALLOC_STATS=1
run_test static_link 0 bash tests/static_link.sh build
# linked with libslubmalloc.so, not preloaded
run_test fork_paths 0 build/tests/linked/fork_paths

# real programs: the script itself runs without LD_PRELOAD and preloads SLUBMALLOC_LIB itself
if [ -f "$lib" ]; then
    run_test real_programs 0 bash tests/real_programs.sh
    # programs built against libjemalloc (named, redis-server) on jemalloc's calls
    run_test --timeout 300 jemalloc_programs 0 bash tests/jemalloc_programs.sh
else
    report_fail real_programs "preload library build/preload/libslubmalloc.so is missing"
fi
# CPython's regression tests with every object on the library (PYTHONMALLOC=malloc, the script
# preloads it): 15 modules, those that fail run again on glibc; only a failure of the library's
# counts (tests/cpython.sh). About 3.5 min on 2 cores; each module has a timeout, the whole 15 min.
run_test --timeout 900 cpython 0 bash tests/cpython.sh "$lib"

# glibc 2.36's own malloc tests, built from the glibc-source tarball under build/glibc-tests
# (once) and run on glibc and under the library: a test that passes on glibc and fails under
# the library fails; the glibc-internal ones are skipped with their reason (tests/glibc_malloc.sh)
run_test glibc_malloc 0 bash tests/glibc_malloc.sh "$lib" "$root/build"

# bad inputs: each case under the preloaded library, judged by its signal and message
run_test bad_input 0 bash tests/bad/run_bad.sh "$lib" build

# the battery of classic heap bugs at three sizes (tests/bad/battery.cc): glibc's count for
# reference, then the default mode and SLUBMALLOC_DEBUG=1, each with a floor it must reach
bash tests/bad/battery.sh --quiet build glibc - | tail -n 1
run_test battery_default 0 bash tests/bad/battery.sh --quiet --min 70 build default "$lib"
# SLUBMALLOC_DEBUG=1 with libslubmalloc-debug.so, whose memcpy, memmove and memset check their
# destination: every case (before 2026-12-03, 116 of 170 with libslubmalloc.so: no check at the
# call, at exit or by trim; no zero on free)
debug_lib=$root/build/preload/libslubmalloc-debug.so
run_test battery_debug 0 bash tests/bad/battery.sh --quiet --min 170 build debug "$debug_lib" \
    SLUBMALLOC_DEBUG=1

# the heap profiler against google-pprof: sites of known live bytes (tests/prof/prof.sh)
run_test prof 0 bash tests/prof/prof.sh "$lib" build

# the libFuzzer harness over the committed seed corpus, about a minute (tests/fuzz/run_fuzz.sh)
run_test fuzz 0 bash tests/fuzz/run_fuzz.sh 60

# aarch64: a cross build run under qemu-user at 4, 16 and 64 KiB pages, with and without LSE
# (tests/cross.sh installs gcc-aarch64-linux-gnu and qemu-user-static)
run_test --timeout 600 cross_aarch64 0 bash tests/cross.sh aarch64

# ThreadSanitizer and UBSan builds of the unit and stress tests, linked with the engine
run_test --timeout 600 sanitizers 0 bash tests/sanitize.sh

# ---------- unit tests (linked with the engine, no preload) ----------
if [ -d build/tests ]; then
    while IFS= read -r u; do
        run_test "$(basename "$u")" 0 "$u"
    done < <(find build/tests -type f -name 'unit_*' -perm -u+x ! -path '*.p/*' | sort)
fi

echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
