#!/usr/bin/env bash
# prof.sh LIB BUILD: the heap profiler against google-pprof (Debian's google-perftools).
# Each case runs a program of tests/prof under LD_PRELOAD=LIB with SLUBMALLOC_PROF=1, then
# reads the profile with `google-pprof --text`, and checks the in-use megabytes it attributes
# to each call site: within 10% of what the site holds, and nothing to a site that freed all.
# SLUBMALLOC_PROF_SAMPLE=16384 gives some 4,000 samples per 64 MiB, so 10% is over three
# standard deviations; one case runs at the default 524288 with a 30% band (about three).
# Prints one line per case, then `prof: N passed, M failed`; exits non-zero on a failure.
set -u
lib=$1 build=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/slub-prof.XXXXXX")
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0
command -v google-pprof >/dev/null || { echo "prof: google-pprof is missing (apt-get install google-perftools)"; exit 2; }

# megabytes PROG FILE FUNCTION: in-use MB that google-pprof gives FUNCTION (flat), 0 if absent
megabytes() {
    google-pprof --text "$1" "$2" 2>/dev/null |
        awk -v f="$3" '$6 == f || $6 == f"()" { print $1; found = 1 } END { if (!found) print 0 }'
}

# verdict NAME OK-TEXT FAIL-TEXT COMMAND...: one check, passed when COMMAND succeeds
verdict() {
    local name=$1 ok=$2 bad=$3
    shift 3
    if "$@"; then
        echo "ok   $name: $ok"
        pass=$((pass + 1))
    else
        echo "FAIL $name: $bad"
        fail=$((fail + 1))
    fi
}

# check NAME PROG FILE FUNCTION MB TOLERANCE(%): MB 0 means "nothing at all"
check() {
    local name=$1 prog=$2 file=$3 fn=$4 want=$5 tol=$6 got
    if [ ! -s "$file" ]; then
        echo "FAIL $name: no profile $file"
        fail=$((fail + 1))
        return
    fi
    got=$(megabytes "$prog" "$file" "$fn")
    if awk -v g="$got" -v w="$want" -v t="$tol" 'BEGIN { exit !(w == 0 ? g == 0 : (g >= w * (1 - t / 100) && g <= w * (1 + t / 100))) }'; then
        echo "ok   $name: $fn ${got} MB (expected $want MB, within $tol%)"
        pass=$((pass + 1))
    else
        echo "FAIL $name: $fn ${got} MB, expected $want MB within $tol%"
        google-pprof --text "$prog" "$file" 2>/dev/null | head -n 12 | sed 's/^/    | /'
        fail=$((fail + 1))
    fi
}

# run NAME VARS... -- PROG ARGS...: the program in $dir/NAME with the profiler on
run() {
    local name=$1
    shift
    local vars=()
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    mkdir -p "$dir/$name"
    (cd "$dir/$name" && timeout 120 env LD_PRELOAD="$lib" SLUBMALLOC_PROF=1 \
        SLUBMALLOC_PROF_SAMPLE=16384 "${vars[@]}" "$@" >out.txt 2>err.txt) ||
        { echo "FAIL $name: exit code $? ($(head -c 300 "$dir/$name/err.txt"))"; fail=$((fail + 1)); }
}

sites=$PWD/$build/tests/prof/prof_sites
cxx=$PWD/$build/tests/prof/prof_new
A=64 B=16 # MiB held, in google-pprof's MB (2^20 bytes): 65536 * 1 KiB, 167772 * 100 B

for mode in main exit threads; do
    run "$mode" -- "$sites" "$mode"
    f=$(ls "$dir/$mode"/slubmalloc.*.heap 2>/dev/null | head -n 1)
    check "$mode" "$sites" "$f" site_a $A 10
    check "$mode" "$sites" "$f" site_b $B 10
    check "$mode" "$sites" "$f" site_c 0 0
done

run default SLUBMALLOC_PROF_SAMPLE=524288 -- "$sites" main
f=$(ls "$dir/default"/slubmalloc.*.heap 2>/dev/null | head -n 1)
check "default rate" "$sites" "$f" site_a $A 30
check "default rate" "$sites" "$f" site_c 0 0

run fork -- "$sites" fork
child=$(awk '/^child/ { print $2 }' "$dir/fork/out.txt")
parent=$(ls "$dir/fork"/slubmalloc.*.heap | grep -v "slubmalloc.$child.heap" | head -n 1)
check "fork, parent" "$sites" "$parent" site_a $A 10
check "fork, parent" "$sites" "$parent" site_b 0 0
check "fork, child" "$sites" "$dir/fork/slubmalloc.$child.heap" site_a $A 10
check "fork, child" "$sites" "$dir/fork/slubmalloc.$child.heap" site_b $B 10

# A wrapper that is preloaded too (timeout) ends after its child: the child's profile stays in
# SLUBMALLOC_PROF_FILE, the wrapper's goes beside it; %p names a file per process.
run wrapper SLUBMALLOC_PROF_FILE=x.heap -- timeout 100 "$sites" main
check "a wrapper's child" "$sites" "$dir/wrapper/x.heap" site_a $A 10
verdict "a wrapper" "its profile is beside its child's" "no x.<pid>.heap: $(ls "$dir/wrapper")" \
    test -s "$(ls "$dir/wrapper"/x.[0-9]*.heap 2>/dev/null | head -n 1)"
run pid_pattern SLUBMALLOC_PROF_FILE=p.%p.heap -- timeout 100 "$sites" fork
child=$(awk '/^child/ { print $2 }' "$dir/pid_pattern/out.txt")
check "%p, fork's child" "$sites" "$dir/pid_pattern/p.$child.heap" site_b $B 10
verdict "%p" "three processes, three profiles" "$(ls "$dir/pid_pattern")" \
    test "$(ls "$dir/pid_pattern"/p.[0-9]*.heap | wc -l)" = 3

# The default name dumped early, then interval dumps: at exit the default file is the
# process's own, written again, not a file beside it.
run default_again SLUBMALLOC_PROF_INTERVAL=33554432 SLUBMALLOC_PROF_FILE=dd.heap -- "$sites" dump ""
check "the default name again" "$sites" "$dir/default_again/dd.heap" site_b $B 10
verdict "the default name again" "no file beside it, no message" \
    "$(ls "$dir/default_again"; cat "$dir/default_again/err.txt")" \
    test -z "$(ls "$dir/default_again"/dd.[0-9]*[0-9].heap 2>/dev/null; grep -l "not this process" "$dir/default_again/err.txt")"

run realloc -- "$sites" realloc
check realloc "$sites" "$(ls "$dir/realloc"/slubmalloc.*.heap)" site_r $A 10
run memalign -- "$sites" memalign
check memalign "$sites" "$(ls "$dir/memalign"/slubmalloc.*.heap)" site_m $A 10

run dump SLUBMALLOC_PROF_FILE=end.heap -- "$sites" dump mid.heap
check "slub_prof_dump" "$sites" "$dir/dump/mid.heap" site_a $A 10
check "slub_prof_dump" "$sites" "$dir/dump/mid.heap" site_b 0 0
check "SLUBMALLOC_PROF_FILE" "$sites" "$dir/dump/end.heap" site_b $B 10

# Blocks handed out again from the thread's free stack: on x86-64 and aarch64 malloc and
# operator new are patched to count them, and the other entries count too (sm_prof_entries;
# SLUBMALLOC_VERBOSE=1 says so).
patched="SLUBMALLOC_PROF: 6 of 6 entry points count their allocations"
run reuse SLUBMALLOC_VERBOSE=1 -- "$sites" reuse
check reuse "$sites" "$(ls "$dir/reuse"/slubmalloc.*.heap)" site_u $A 10
verdict reuse "malloc, malloc_bulk and operator new are patched" \
    "not patched: $(grep SLUBMALLOC_PROF: "$dir/reuse/err.txt")" \
    grep -q "$patched" "$dir/reuse/err.txt"
run calloc -- "$sites" calloc
check calloc "$sites" "$(ls "$dir/calloc"/slubmalloc.*.heap)" site_z $A 10
run bulk -- "$sites" bulk
check malloc_bulk "$sites" "$(ls "$dir/bulk"/slubmalloc.*.heap)" site_k $A 10

run interval SLUBMALLOC_PROF_INTERVAL=33554432 SLUBMALLOC_PROF_FILE=iv -- "$sites" main
n=$(ls "$dir/interval"/iv.*.heap 2>/dev/null | wc -l)
verdict SLUBMALLOC_PROF_INTERVAL "$n profiles for about 144 MiB allocated, one per 32 MiB" \
    "$n profiles, expected 3 or more" [ "$n" -ge 3 ]

run cxx SLUBMALLOC_VERBOSE=1 -- "$cxx"
f=$(ls "$dir/cxx"/slubmalloc.*.heap 2>/dev/null | head -n 1)
check "C++ new" "$cxx" "$f" site_new $A 10
check "C++ new" "$cxx" "$f" site_obj $B 10
check "C++ new" "$cxx" "$f" site_tmp 0 0
verdict "C++ new" "operator new, new[] and their nothrow forms are patched" \
    "not patched: $(grep SLUBMALLOC_PROF: "$dir/cxx/err.txt")" \
    grep -q "$patched" "$dir/cxx/err.txt"

run debug SLUBMALLOC_DEBUG=1 -- "$sites" main
f=$(ls "$dir/debug"/slubmalloc.*.heap 2>/dev/null | head -n 1)
check "with SLUBMALLOC_DEBUG=1" "$sites" "$f" site_a $A 10
check "with SLUBMALLOC_DEBUG=1" "$sites" "$f" site_b $B 10

echo "prof: $pass passed, $fail failed"
[ "$fail" = 0 ]
