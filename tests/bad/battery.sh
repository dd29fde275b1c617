#!/usr/bin/env bash
# battery.sh [--quiet] [--min N] BUILD LABEL LIB [VAR=VALUE ...]: every case of BUILD/tests/bad/battery
# under LD_PRELOAD=LIB (LIB `-`: plain glibc) with the variables given, each under `timeout` with
# core dumps off. A case is caught when it ends by SIGABRT, SIGSEGV or SIGBUS (the allocator
# reported the bug, or a guard page stopped it) or prints HARMLESS (the allocator made the bug
# harmless); NOT_CAUGHT, another exit, or a hang is not caught.
# Prints `caught CASE` / `NOT CAUGHT CASE: why` per case (--quiet: only the misses), then
# `battery LABEL: C of T caught`. Exit status 0; 1 when fewer than N were caught (--min); 2 on a
# setup error.
set -u
quiet=0 min=0
while [ $# -gt 0 ]; do
    case $1 in
        --quiet) quiet=1; shift ;;
        --min) min=$2; shift 2 ;;
        *) break ;;
    esac
done
if [ $# -lt 3 ]; then
    echo "usage: $0 [--quiet] [--min N] BUILD LABEL LIB [VAR=VALUE ...]" >&2
    exit 2
fi
build=$1 label=$2 lib=$3
shift 3
prog=$build/tests/bad/battery
[ -x "$prog" ] || { echo "battery: $prog not built" >&2; exit 2; }
pre=()
if [ "$lib" != - ]; then
    [ -f "$lib" ] || { echo "battery: $lib not found" >&2; exit 2; }
    pre=(LD_PRELOAD="$lib")
fi
unset LD_PRELOAD
ulimit -c 0
logdir=$build/test-logs/battery/$label
mkdir -p "$logdir"
tried=0 caught=0
for c in $("$prog" list); do
    ( timeout -k 2 20 env -u SLUBMALLOC_DEBUG "$@" "${pre[@]}" "$prog" "$c" \
        >"$logdir/$c.out" 2>"$logdir/$c.err" </dev/null; exit $? ) 2>/dev/null
    rc=$?
    tried=$((tried + 1))
    out=$(head -c 200 "$logdir/$c.out")
    case $rc in
        134 | 135 | 139) ok=1 why="signal $((rc - 128))" ;;
        0) case $out in HARMLESS*) ok=1 why=$out ;; *) ok=0 why=${out:-"(no verdict)"} ;; esac ;;
        124 | 137) ok=0 why="hung" ;;
        *) ok=0 why="exit $rc" ;;
    esac
    if [ $ok = 1 ]; then
        caught=$((caught + 1))
        [ $quiet = 1 ] || echo "caught $c ($why)"
    else
        echo "NOT CAUGHT $c: $why $(grep -m1 . "$logdir/$c.err" | head -c 120)"
    fi
done
echo "battery $label: $caught of $tried caught"
if [ "$caught" -lt "$min" ]; then
    echo "battery $label: fewer than $min caught"
    exit 1
fi
