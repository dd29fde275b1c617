#!/usr/bin/env bash
# cpython.sh: a slice of CPython's own regression tests (Debian's python3.11 and its test suite)
# with every Python object on the library: PYTHONMALLOC=malloc and LD_PRELOAD=LIB.
# Each module of the slice runs once under the library, two at a time, with a timeout of its own
# (regrtest's --timeout, and coreutils' timeout above it). A module that fails there is run
# again on plain glibc (no LD_PRELOAD, the same PYTHONMALLOC=malloc): only its failing test cases
# (regrtest --matchfile), or the whole module when the run crashed or timed out.
# A case that fails on glibc too is this machine's, not the library's: it is reported and not
# counted. A case that fails only under the library is a failure, and so is a `slubmalloc:`
# report in a run's output. Such a case is not tried again under the library: a race in the
# library would look flaky, and it is the failure this slice is for. Before all that, a python
# run under LD_PRELOAD must find LIB in its /proc/self/maps (and one without must not), with
# PYTHONMALLOC=malloc in effect: else the slice would prove nothing, and that is a failure too.
# One line per module: `PASS test_dict (0.6s)`, `FAIL test_x: fails under slubmalloc, passes on
# glibc ...` (the cases, the end of the first traceback, the logs), or `GLIBC-FAIL test_y: fails
# on plain glibc too (not counted)`. The last line counts them with the wall time. The logs of
# the failing runs stay in LOGDIR (default: the build dir's test-logs/cpython, as tests/run.sh
# keeps its logs in build/test-logs). The exit status is non-zero iff something failed only
# under the library, or the slice could not run (no module passed, on glibc either). About
# 3.5 min on 2 cores (2.6 min for test_concurrent_futures alone, on glibc as well: its cases
# wait on timeouts).
# Missing python3.11 or libpython3.11-testsuite is installed with apt-get when root.
#
# Usage: tests/cpython.sh LIB [LOGDIR]
#   CPYTHON_TESTS="test_dict test_gc"   run only these modules of the slice
#   CPYTHON_JOBS=N                      modules run at a time (default 2)
#   CPYTHON_TIMEOUT_SCALE=N             every timeout N times longer (SLUBMALLOC_DEBUG=1: 4)
# The caller's SLUBMALLOC_* variables pass through (SLUBMALLOC_DEBUG=1 is a fine run), but for
# SLUBMALLOC_STATS and SLUBMALLOC_VERBOSE: the tests would see their output.
set -u
unset LD_PRELOAD  # only the library's runs are preloaded, explicitly

case ${1:-} in
    ''|-h|--help) sed -n '2,28p' "$0"; exit 2 ;;
esac
lib=$1
case $lib in /*) ;; *) lib=$PWD/$lib ;; esac
if [ ! -f "$lib" ]; then
    echo "FAIL cpython: preload library $lib not found"
    exit 1
fi
build=$(dirname "$(dirname "$lib")")
if [ -n "${2:-}" ]; then
    logdir=$2
elif [ -f "$build/build.ninja" ]; then
    logdir=$build/test-logs/cpython
else
    logdir=${TMPDIR:-/tmp}/slub_cpython_logs
fi
jobs=${CPYTHON_JOBS:-2}
case $jobs in ''|*[!0-9]*|0) jobs=2 ;; esac
scale=${CPYTHON_TIMEOUT_SCALE:-1}
case $scale in ''|*[!0-9]*|0) scale=1 ;; esac
py=/usr/bin/python3.11

# The slice, longest first, so that the slots end together. module:timeout in seconds: two or
# three times the module's time alone on 2 cores, 60 at least (comment: library; glibc).
slice=(
    test_concurrent_futures:360    # 155 s (its crash tests failing); 157 s
    test_multiprocessing_fork:300  # 70 s; 71 s
    test_signal:180                # 47 s (sleeps); 49 s
    test_subprocess:150            # 25 s; 30 s
    test_faulthandler:90           # 18 s; 19 s
    test_threading:90              # 11 s; 11 s
    test_pickle:60                 # 6 s; 6 s
    test_set:60
    test_gc:60
    test_bytes:60
    test_unicode:60
    test_json:60
    test_re:60
    test_dict:60
    test_list:60                   # each of these under 4 s
)
# every resource but the network, and those that need hardware or a lot of disk
resources=all,-network,-urlfetch,-largefile,-audio,-gui,-curses

# ---------- tools ----------
# (libregrtest comes with python3.11 itself; the test modules only with the testsuite)
if [ ! -x "$py" ] || [ ! -f /usr/lib/python3.11/test/test_dict.py ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing: python3.11 libpython3.11-testsuite"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null 2>&1 || echo "warning: apt-get update failed"
        apt-get install -y -qq python3.11 libpython3.11-testsuite >/dev/null 2>&1 ||
            echo "warning: apt-get install python3.11 libpython3.11-testsuite failed"
    fi
fi
if [ ! -x "$py" ] || ! "$py" -c 'import test.libregrtest, test.test_dict, _testinternalcapi' >/dev/null 2>&1; then
    echo "FAIL cpython: $py with its test suite (libpython3.11-testsuite) is not installed"
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/slub_cpython.XXXXXX")
cleanup() {
    local f
    for f in "$work"/*.pid; do  # the process groups of the timeouts still running
        [ -f "$f" ] && kill -TERM -- "-$(cat "$f")" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$logdir" || exit 1
rm -f "$logdir"/test_*.log
cd "$work" || exit 1
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONDEVMODE PYTHONWARNINGS SLUBMALLOC_STATS \
    SLUBMALLOC_VERBOSE
export PYTHONMALLOC=malloc LC_ALL=C.UTF-8

# ---------- is the library in use? ----------
# exit 0: LIB is mapped and Python's allocator is malloc; 3: not mapped; 4: not malloc
probe='import os, sys, _testinternalcapi as c
maps = open("/proc/self/maps").read()
if os.path.realpath(sys.argv[1]) not in maps: sys.exit(3)
if c.get_configs()["pre_config"]["allocator"] != 3: sys.exit(4)  # PYMEM_ALLOCATOR_MALLOC'
LD_PRELOAD=$lib "$py" -c "$probe" "$lib"
rc=$?
if [ "$rc" != 0 ]; then
    echo "FAIL cpython: python under LD_PRELOAD=$lib does not run on it (probe exit $rc:" \
        "3 = not in /proc/self/maps, 4 = PYTHONMALLOC=malloc not in effect)"
    exit 1
fi
"$py" -c "$probe" "$lib"
rc=$?
if [ "$rc" != 3 ]; then
    echo "FAIL cpython: python without LD_PRELOAD is not on plain glibc (probe exit $rc)"
    exit 1
fi
echo "library in use: $lib is in python's /proc/self/maps, PYTHONMALLOC=malloc"

# ---------- running a module ----------
# run_py lib|glibc MODULE TIMEOUT LOG [MATCHFILE]: regrtest on MODULE; its exit status
run_py() {
    local side=$1 t=$2 tmo=$3 log=$4 match=${5:-}
    local args=(-m test --tempdir "$work/tmp.$side.$t" -u "$resources" --timeout "$tmo" -v)
    [ -n "$match" ] && args+=(--matchfile "$match")
    # timeout makes its own process group: the pid file lets cleanup end the whole tree
    if [ "$side" = lib ]; then
        LD_PRELOAD=$lib timeout -k 10 $((tmo + 30)) "$py" "${args[@]}" "$t" >"$log" 2>&1 </dev/null &
    else
        timeout -k 10 $((tmo + 30)) "$py" "${args[@]}" "$t" >"$log" 2>&1 </dev/null &
    fi
    local pid=$!
    echo "$pid" >"$work/$t.pid"
    { wait "$pid"; } 2>/dev/null  # no "Aborted" line from bash: the verdict says it
    local rc=$?
    # what the run left in its group (a child that outlived its parent) ends now, with a word
    local left
    left=$(pgrep -g "$pid" | tr '\n' ' ')
    if [ -n "$left" ]; then
        echo "cpython.sh: killed the processes this run left behind: $left" >>"$log"
        kill -KILL -- "-$pid" 2>/dev/null
    fi
    rm -f "$work/$t.pid"
    return "$rc"
}

# failed_cases LOG: the ids of the failing test cases, one a line (unittest's summary:
# `FAIL: test_x (test.test_m.Class.test_x)`, `ERROR: setUpClass (test.test_m.Class)`)
failed_cases() {
    sed -n -E 's/^(FAIL|ERROR|UNEXPECTED SUCCESS): [^ ]+ \((test[._][^ )]+)\).*/\2/p' "$1" | sort -u
}

# traceback LOG ID: the end of the first traceback of case ID
traceback() {
    awk -v id="($2)" '
        !on && /^(FAIL|ERROR|UNEXPECTED SUCCESS): / && index($0, id) { on = 1; next }
        on && /^(=+|-+)$/ { if (n) exit; next }
        on { line[n++] = $0 }
        END { for (i = (n > 8 ? n - 8 : 0); i < n; i++) print line[i] }' "$1" |
        grep -v '^$' | cut -c 1-240
}

# crash LOG: faulthandler's report of a crash or a timeout, innermost frames first; else the
# end of LOG
crash() {
    local at
    at=$(grep -a -n -m 1 -E 'Fatal Python error|Timeout \([0-9:]+\)!' "$1" | cut -d: -f1)
    if [ -n "$at" ]; then
        tail -n "+$at" "$1" | grep -a -v '^$' | head -n 8 | cut -c 1-240
    else
        grep -a -v '^$' "$1" | tail -n 8 | cut -c 1-240
    fi
}

secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# module MODULE TIMEOUT: writes the module's report to $work/MODULE.report, its first line
# PASS, FAIL or GLIBC-FAIL
module() {
    local t=$1 tmo=$2
    local out=$work/$t.out llog=$work/$t.slubmalloc.log glog=$work/$t.glibc.log
    local t0 rc ltime
    t0=$(date +%s.%N)
    run_py lib "$t" "$tmo" "$llog"
    rc=$?
    ltime=$(secs "$t0")
    local reports
    reports=$(grep -a -o 'slubmalloc: .*' "$llog" | head -n 5)  # often mid-line (-v)
    if [ "$rc" = 0 ] && [ -z "$reports" ]; then
        echo "PASS $t (${ltime}s)" >"$out"
        mv "$out" "$work/$t.report"
        return
    fi
    cp "$llog" "$logdir/" 2>/dev/null
    if [ -n "$reports" ]; then
        {
            echo "FAIL $t: slubmalloc reported an error (exit $rc, ${ltime}s)"
            printf '%s\n' "$reports" | sed -e 's/^/    | /'
            echo "    (log: $logdir/$t.slubmalloc.log)"
        } >"$out"
        mv "$out" "$work/$t.report"
        return
    fi
    local why cases=$work/$t.cases gcases=$work/$t.gcases grc gtime lonly
    # the case ids are trusted only from a run that ended normally with failures (exit 2)
    if [ "$rc" = 2 ] && failed_cases "$llog" >"$cases" && [ -s "$cases" ]; then
        why="$(wc -l <"$cases") failing cases"
        t0=$(date +%s.%N)
        run_py glibc "$t" "$tmo" "$glog" "$cases"
    else
        : >"$cases"
        if grep -aqE 'Timeout \([0-9:]+\)!' "$llog" || [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            why="timed out after ${tmo}s"
        else
            why="exit $rc, no failing case named"
        fi
        t0=$(date +%s.%N)
        run_py glibc "$t" "$tmo" "$glog"
    fi
    grc=$?
    gtime=$(secs "$t0")
    cp "$glog" "$logdir/" 2>/dev/null
    local logs="logs: $logdir/$t.slubmalloc.log, $logdir/$t.glibc.log"
    local times="${ltime}s under slubmalloc, ${gtime}s on glibc"
    local only=""
    if [ -s "$cases" ]; then
        # the cases again: those that fail on glibc too are not counted; a glibc run that
        # crashes or times out on them fails them all
        if [ "$grc" = 0 ]; then
            only=$(cat "$cases")
        elif [ "$grc" = 2 ]; then
            failed_cases "$glog" >"$gcases"
            only=$(comm -23 "$cases" "$gcases")
        fi
        lonly=$([ -n "$only" ] && echo 1)
    else
        # the whole module again: the library's run did not end normally; it is the
        # library's failure where glibc passes, or ends normally with failures of its own
        lonly=$([ "$grc" = 0 ] || { [ "$grc" = 2 ] && [ "$rc" != 2 ]; } && echo 1)
    fi
    {
        if [ -n "$lonly" ]; then
            echo "FAIL $t: fails under slubmalloc, passes on glibc ($why; glibc exit $grc; $times)"
            if [ -n "$only" ]; then
                echo "$only" | head -n 12 | sed -e 's/^/    case: /'
                echo "    first traceback:"
                traceback "$llog" "$(echo "$only" | head -n 1)" | sed -e 's/^/    | /'
            else
                crash "$llog" | sed -e 's/^/    | /'
            fi
        else
            echo "GLIBC-FAIL $t: fails on plain glibc too (not counted; $why; glibc exit $grc; $times)"
        fi
        echo "    ($logs)"
    } >"$out"
    mv "$out" "$work/$t.report"
}

# ---------- the slice, $jobs at a time ----------
selected=()
for pair in "${slice[@]}"; do
    t=${pair%%:*}
    if [ -z "${CPYTHON_TESTS:-}" ] || [[ " $CPYTHON_TESTS " == *" $t "* ]]; then
        selected+=("$pair")
    fi
done
if [ "${#selected[@]}" = 0 ]; then
    echo "FAIL cpython: no module of the slice selected (CPYTHON_TESTS=${CPYTHON_TESTS:-})"
    exit 1
fi

npass=0 nfail=0 nglibc=0
running=()
# reap: prints and counts the reports of the modules that ended
reap() {
    local t still=()
    for t in "${running[@]}"; do
        if [ -f "$work/$t.report" ]; then
            cat "$work/$t.report"
            case $(head -c 6 "$work/$t.report") in
                PASS*) npass=$((npass + 1)) ;;
                GLIBC-) nglibc=$((nglibc + 1)) ;;
                *) nfail=$((nfail + 1)) ;;
            esac
        else
            still+=("$t")
        fi
    done
    running=("${still[@]}")
}

# launch MODULE TIMEOUT: runs the module in a subshell of its own. Its report exists however
# that subshell ends: one that died without writing it is a failure, with its exit status.
launch() {
    local t=$1
    (module "$@")
    local rc=$?
    if [ ! -f "$work/$t.report" ]; then
        echo "FAIL $t: its run ended without a report (exit $rc)" >"$work/$t.out"
        mv "$work/$t.out" "$work/$t.report"
    fi
}

# next_end: waits for a module to end, and reaps. Only the reports say which ended: the shell's
# job table is not asked. wait -n answers 127 once no launch is left; a module still listed
# then lost its launcher too, and that is a failure.
next_end() {
    wait -n
    local rc=$?
    reap
    if [ "$rc" = 127 ] && [ "${#running[@]}" -gt 0 ]; then
        local t
        for t in "${running[@]}"; do
            echo "FAIL $t: its launcher ended without a report"
            nfail=$((nfail + 1))
        done
        running=()
    fi
}

start=$(date +%s.%N)
for pair in "${selected[@]}"; do
    while [ "${#running[@]}" -ge "$jobs" ]; do
        next_end
    done
    launch "${pair%%:*}" $((${pair#*:} * scale)) &
    running+=("${pair%%:*}")
done
while [ "${#running[@]}" -gt 0 ]; do
    next_end
done
echo "cpython: $npass passed, $nfail failed, $nglibc failed on glibc too (not counted)," \
    "$(secs "$start")s"
if [ "$npass" = 0 ]; then # every module failed on glibc too: the suite itself does not run
    echo "FAIL cpython: no module passed, on glibc either"
    exit 1
fi
[ "$nfail" = 0 ]
