#!/usr/bin/env bash
# glibc_malloc.sh: glibc's own malloc tests (malloc/tst-*.c and mallocbug.c of glibc 2.36), run on
# plain glibc and under LD_PRELOAD=LIB, judged side by side.
# The tests and glibc's support/ library are built from Debian's glibc-source tarball, outside
# glibc's tree and outside this repository: under BUILDDIR/glibc-tests, once (a stamp keyed by
# this script, the tarball and gcc says it is built). No glibc code is in the repository. Only a
# small shim is generated: config.h (what glibc's configure gives support/), shlib-compat.h (the
# two macros the compat-symbol tests use) and an empty libc-symbols.h. glibc's include/ and
# support/ come after the system's headers (-idirafter), so they never shadow them.
# Each test runs twice under `timeout`: on glibc (with the environment of glibc's Makefile, e.g.
# MALLOC_CHECK_=3 and libc_malloc_debug.so), then with LD_PRELOAD=LIB alone (same variables).
# One line per test:
#   PASS tst-x                       passes under the library (and on glibc)
#   FAIL tst-x: fails under slubmalloc, passes on glibc
#   SKIP tst-x: <reason>            in the table below (glibc internals), or failing on glibc too
# A test in the table still runs when it builds; its line says how it did on both sides.
# Before the tests: LD_DEBUG=bindings on one test binary must show its malloc and free, and
# libc's, bound to LIB; otherwise the script fails (the library would not be under test).
# Logs of every test that did not pass: BUILDDIR/glibc-tests/logs/. The last line is
# `glibc_malloc: N passed, M failed, K skipped`; the exit status is non-zero iff a test fails
# only under the library (or nothing could be built or checked).
#
# Usage: tests/glibc_malloc.sh LIB BUILDDIR
#   GLIBC_TARBALL   glibc source tarball (default /usr/src/glibc/glibc-2.36.tar.xz)
#   TIMEOUTFACTOR   scales glibc's per-test timeouts (default 1) and this script's
set -u
unset LD_PRELOAD  # the glibc runs must not be preloaded; the library is preloaded explicitly

if [ $# -ne 2 ]; then
    sed -n '2,27p' "$0"
    exit 2
fi
lib=$1 bdir=$2
case $lib in /*) ;; *) lib=$PWD/$lib ;; esac
mkdir -p "$bdir" || exit 2
bdir=$(cd "$bdir" && pwd)
work=$bdir/glibc-tests
tarball=${GLIBC_TARBALL:-/usr/src/glibc/glibc-2.36.tar.xz}
top=$(basename "$tarball" .tar.xz)  # the tarball's top directory, e.g. glibc-2.36
src=$work/$top
obj=$work/obj
shim=$work/shim
logs=$work/logs
factor=${TIMEOUTFACTOR:-1}
jobs=$(nproc 2>/dev/null || echo 2)

npass=0 nfail=0 nskip=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); }
summary() { echo "glibc_malloc: $npass passed, $nfail failed, $nskip skipped"; }
die() { fail "$1" "$2"; summary; exit 1; }

# Tests that check glibc's own heap, not the API: they may fail under any other malloc.
declare -A glibc_only=(
    [tst-compathooks-on]="checks that __malloc_hook and the other hooks of libc_malloc_debug.so are called"
    [tst-malloc-backtrace]="corrupts a glibc chunk header and expects glibc's abort"
    [tst-safe-linking]="corrupts glibc's in-chunk tcache and fastbin links and expects glibc's abort"
    [tst-malloc-usable]="expects MALLOC_CHECK_=3's exact malloc_usable_size (the requested size)"
    [tst-malloc-usable-tunables]="expects glibc.malloc.check=3's exact malloc_usable_size (the requested size)"
    [tst-mallocstate]="needs __malloc_initialize_hook called (by libc_malloc_debug.so) and malloc_set_state of a heap in glibc's old chunk format"
    [tst-dynarray-fail]="its finalize and resize phases expect every malloc to fail once fill_heap's mallocs of 4104 and then 8 bytes do; size classes still serve finalize's malloc(8000)"
)
# Tests not built at all
declare -A not_built=(
    [tst-interpose-static-nothread]="a static binary: LD_PRELOAD cannot replace its malloc"
    [tst-interpose-static-thread]="a static binary: LD_PRELOAD cannot replace its malloc"
    [tst-mtrace]="needs mtrace(), libc_malloc_debug.so's tracer of glibc's malloc, and its Perl checker"
)
# The environment glibc's malloc/Makefile gives a test (its tst-x-ENV), without LD_PRELOAD;
# debug=1: on glibc, LD_PRELOAD=libc_malloc_debug.so as well. MALLOC_TRACE is left out: the
# mtrace checks that use it are separate tests there.
test_env() { # NAME -> sets env_vars (array) and debug
    env_vars=() debug=0
    case $1 in
        tst-malloc-check|tst-malloc-usable) env_vars=(MALLOC_CHECK_=3) debug=1 ;;
        tst-malloc-usable-tunables) env_vars=(GLIBC_TUNABLES=glibc.malloc.check=3) debug=1 ;;
        tst-mxfast) env_vars=(GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.mxfast=0) ;;
        tst-compathooks-on|tst-mallocstate) debug=1 ;;
    esac
}

# ---------- tools ----------
need=(gcc:gcc xz:xz-utils nm:binutils timeout:coreutils tar:tar)
missing=()
for pair in "${need[@]}"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ -f "$tarball" ] || missing+=(glibc-source)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null 2>&1 || echo "warning: apt-get update failed"
        apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
            echo "warning: apt-get install ${missing[*]} failed"
    else
        echo "warning: missing (not root or no apt-get): ${missing[*]}"
    fi
fi
for pair in "${need[@]}"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || die tools "${pair%%:*} is missing"
done
[ -f "$tarball" ] || die tools "$tarball is missing (package glibc-source)"
[ -f "$lib" ] || die library "$lib not found"

# libc's own files: the compat symbols' version and libc_malloc_debug.so
libc_so=$(gcc -print-file-name=libc.so.6)
debug_so=$(gcc -print-file-name=libc_malloc_debug.so.0)
case $debug_so in /*) ;; *) die tools "libc_malloc_debug.so.0 not found" ;; esac
base_ver=$(nm -D --with-symbol-versions "$libc_so" | awk '$3 ~ /^malloc@@/ { sub(/.*@@/, "", $3); print $3 }')
[ -n "$base_ver" ] || die tools "no default version of malloc in $libc_so"

# ---------- build (once) ----------
key="$(sha256sum <"$0" | cut -c1-16) $(stat -c %s "$tarball") $(gcc -dumpfullversion) $base_ver"
cflags=(-O2 -g -std=gnu11 -D_GNU_SOURCE -include config.h -I"$shim" -I"$src"
        -idirafter "$src/support" -idirafter "$src/include" -idirafter "$src/sysdeps/generic")

# cc_bg LOG CMD...: runs a compile in the background, at most $jobs at a time; LOG keeps its
# messages and is removed when it succeeds
cc_bg() {
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    local log=$1
    shift
    { "$@" >"$log" 2>&1 && rm -f "$log"; } &
}

build() {
    rm -rf "$src" "$obj" "$shim" "$work/built"
    mkdir -p "$work" "$obj/support" "$obj/tests" "$shim" || return 1
    # only what the tests include: malloc/, support/, glibc's include/, two sysdeps headers
    tar xJf "$tarball" -C "$work" "$top/malloc" "$top/support" "$top/include" \
        "$top/test-skeleton.c" "$top/sysdeps/generic/malloc-size.h" \
        "$top/sysdeps/generic/malloc-alignment.h" || return 1

    cat >"$shim/config.h" <<EOF
/* Generated by tests/glibc_malloc.sh: what glibc's configure and internal headers give support/ */
#include <limits.h>        /* glibc's internal headers pull it in; support/ relies on that */
#define TIMEOUTFACTOR 1    /* configure's default; the TIMEOUTFACTOR variable still applies */
#define libc_hidden_proto(...)
#define libc_hidden_def(...)
EOF
    cat >"$shim/shlib-compat.h" <<EOF
/* Generated by tests/glibc_malloc.sh: binds a compat symbol at libc's base version */
#define SHLIB_COMPAT(lib, introduced, obsoleted) 1
#define compat_symbol_reference(lib, local, symbol, version) \\
  __asm__ (".symver " #local "," #symbol "@$base_ver")
EOF
    echo "/* Generated by tests/glibc_malloc.sh: empty (tst-mallocstate includes it) */" \
        >"$shim/libc-symbols.h"

    # libsupport: support/Makefile's libsupport-routines, each with its CFLAGS-x.c there
    local routines name extra
    routines=$(awk '/^libsupport-routines = /{on=1; next} on { if (NF && $1 != "\\") print $1; if ($NF != "\\") exit }' \
        "$src/support/Makefile")
    [ -n "$routines" ] || return 1
    for name in $routines; do
        # shellcheck disable=SC2207  # the flags are words without quotes or globs
        extra=($(awk -v f="CFLAGS-$name.c" '$1 == f && $2 == "+=" && $0 !~ /[$`]/ { $1 = $2 = ""; print }' \
            "$src/support/Makefile"))
        if [ "$name" = support_paths ]; then
            # the Makefile's install paths (test-container uses them; none of these tests does)
            extra=(-DSRCDIR_PATH="\"$src\"" -DOBJDIR_PATH="\"$obj\"" -DINSTDIR_PATH='"/usr"'
                   -DOBJDIR_ELF_LDSO_PATH='"/lib64/ld-linux-x86-64.so.2"' -DLIBDIR_PATH='"/usr/lib"'
                   -DBINDIR_PATH='"/usr/bin"' -DSBINDIR_PATH='"/usr/sbin"' -DSLIBDIR_PATH='"/lib"'
                   -DROOTSBINDIR_PATH='"/sbin"' -DCOMPLOCALEDIR_PATH='"/usr/lib/locale"')
        fi
        cc_bg "$obj/support/$name.log" gcc "${cflags[@]}" ${extra[@]+"${extra[@]}"} \
            -c "$src/support/$name.c" -o "$obj/support/$name.o"
    done
    wait
    # support files that need more of glibc's tree (a few: sysdeps, atomics) are left out;
    # a test that needs one fails to link and is reported
    find "$obj/support" -name '*.log' -printf '%f\n' | sed 's/\.log$//' | sort >"$obj/support-left-out"
    ar rcs "$obj/libsupport.a" "$obj"/support/*.o || return 1

    # tst-interpose-* define malloc in the program itself: under LD_PRELOAD they check that
    # the library lives beside a program's own malloc
    local t s srcs
    for s in "$src"/malloc/tst-*.c "$src/malloc/mallocbug.c"; do
        t=$(basename "$s" .c)
        case $t in *-aux|*-aux-*|*-skeleton) continue ;; esac   # helpers of tst-interpose-*
        [ -n "${not_built[$t]+x}" ] && continue
        srcs=("$s")
        case $t in
            tst-interpose-nothread) srcs+=("$src/malloc/tst-interpose-aux-nothread.c") ;;
            tst-interpose-thread) srcs+=("$src/malloc/tst-interpose-aux-thread.c") ;;
            tst-mallocstate) srcs+=("$debug_so") ;;  # malloc_get_state is libc_malloc_debug's
        esac
        # glibc's Makefile builds its malloc tests with TEST_NO_MALLOPT (no M_PERTURB)
        cc_bg "$obj/tests/$t.log" gcc "${cflags[@]}" -DTEST_NO_MALLOPT -o "$obj/tests/$t" \
            "${srcs[@]}" "$obj/libsupport.a" -lpthread
    done
    wait
    echo "$key" >"$work/built"
}

t0=$(date +%s)
if [ "$(cat "$work/built" 2>/dev/null)" = "$key" ]; then
    echo "build: cached in ${work#"$PWD"/}"
else
    build || die build "extracting or building the tests failed (see $work)"
    echo "build: $(( $(date +%s) - t0 ))s, support files left out: $(tr '\n' ' ' <"$obj/support-left-out")"
fi
[ -x "$obj/tests/tst-malloc" ] || die build "tst-malloc was not built (see $obj/tests/tst-malloc.log)"

# ---------- the library is the one under test ----------
t1=$(date +%s)
rm -rf "$logs" "$work/run"
mkdir -p "$logs" "$work/run"
check_log=$logs/binding-check.log
( cd "$work/run" && LD_DEBUG=bindings LD_PRELOAD=$lib timeout 60 "$obj/tests/tst-malloc" ) \
    >"$check_log" 2>&1
for pair in "tst-malloc:malloc" "tst-malloc:free" "libc.so.6:malloc" "libc.so.6:free"; do
    file=${pair%%:*} sym=${pair#*:}
    grep -q -F "/$file [0] to $lib [0]: normal symbol \`$sym'" "$check_log" ||
        die binding "$file's $sym is not bound to $lib under LD_PRELOAD (see $check_log)"
done
echo "binding: tst-malloc's and libc's malloc and free bound to $lib"

# ---------- run ----------
# run_one NAME SIDE(glibc/lib) -> sets result: pass, fail (exit N), timeout, unsupported
run_one() {
    local t=$1 side=$2 rc dir=$work/run/$1.$2 preload
    mkdir -p "$dir"
    test_env "$t"
    if [ "$side" = glibc ]; then
        preload=
        [ "$debug" = 1 ] && preload=$debug_so
    else
        preload=$lib
    fi
    # glibc's driver kills a test after its TIMEOUT (20 s, at most 100 here) times
    # TIMEOUTFACTOR; this timeout is for a driver that hangs itself
    ( cd "$dir" && env ${preload:+LD_PRELOAD="$preload"} ${env_vars[@]+"${env_vars[@]}"} \
        TIMEOUTFACTOR="$factor" TMPDIR="$dir" \
        timeout -k 5 $((120 * factor)) "$obj/tests/$t" ) >"$logs/$t.$side.log" 2>&1 </dev/null
    rc=$?
    case $rc in
        0) result=pass ;;
        77) result=unsupported ;;
        124|137) result="timeout after $((120 * factor))s" ;;
        *) result="fail (exit $rc)" ;;
    esac
    rm -rf "$dir"
}

names=$( (cd "$src/malloc" && ls tst-*.c mallocbug.c) | sed 's/\.c$//' |
         grep -v -e '-aux$' -e '-aux-' -e '-skeleton$' | sort)
for t in $names; do
    if [ -n "${not_built[$t]+x}" ]; then
        skip "$t" "${not_built[$t]}"
        continue
    fi
    if [ ! -x "$obj/tests/$t" ]; then
        cp "$obj/tests/$t.log" "$logs/$t.build.log" 2>/dev/null
        fail "$t" "does not build outside glibc's tree ($(grep -m1 -E 'error|undefined' "$obj/tests/$t.log"))"
        continue
    fi
    run_one "$t" glibc; on_glibc=$result
    run_one "$t" lib; on_lib=$result
    if [ -n "${glibc_only[$t]+x}" ]; then
        skip "$t" "${glibc_only[$t]} (glibc: $on_glibc, slubmalloc: $on_lib)"
    elif [ "$on_glibc" != pass ]; then
        skip "$t" "not a pass on plain glibc: $on_glibc (slubmalloc: $on_lib)"
    elif [ "$on_lib" = pass ]; then
        pass "$t"
        rm -f "$logs/$t".*.log
    else
        fail "$t" "fails under slubmalloc, passes on glibc: $on_lib (log: ${logs#"$PWD"/}/$t.lib.log)"
    fi
done
echo "run: $(( $(date +%s) - t1 ))s"
summary
[ "$nfail" = 0 ]
