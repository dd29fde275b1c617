#!/usr/bin/env bash
# run_bad.sh LIB [BUILD]: the bad-input suite. Runs every case of BUILD/tests/bad/bad_input
# (BUILD defaults to `build`) under LD_PRELOAD=LIB, each under `timeout` with core dumps off, and
# judges it by its exit status/signal AND its stderr:
#   abort cases    caught only if killed by SIGABRT and stderr matches the case's message
#                  (e.g. `slubmalloc: double free of 0x`); a silent exit, another signal, a hang
#                  or another message is NOT CAUGHT;
#   ok cases       (a defined error return) the program exits 0 (it checks the issue's contract
#                  itself) and its `outcome:` line equals the one it prints under plain glibc
#                  (run without LD_PRELOAD), since slubmalloc follows glibc 2.36;
#   segv cases     caught only if killed by SIGSEGV (a page with no access stopped the access);
#   freelist cases (use after free over the free pointer, no debug) caught when SIGABRT with a
#                  message matching freelist|corrupt, ok when no crash and malloc never returned
#                  the attacker's value; anything else (steered, other crash) is NOT CAUGHT.
# Prints `caught <case>`, `ok <case>` or `NOT CAUGHT <case>: <why>` per case, then
# `bad inputs: T tried, C caught, N not caught` (ok counts as caught). Exits 1 if a case marked
# required was not caught, 2 on a setup error (library or program missing, library not loaded).
# Debug cases set SLUBMALLOC_DEBUG; all others run with it unset. Logs: BUILD/test-logs/bad/.
set -u

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 LIB [BUILD]" >&2
    exit 2
fi
lib=$1
build=${2:-build}
case_timeout=${BAD_CASE_TIMEOUT:-20}

if [ ! -f "$lib" ]; then
    echo "run_bad: preload library $lib not found" >&2
    exit 2
fi
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
prog=$build/tests/bad/bad_input
if [ ! -x "$prog" ]; then
    echo "run_bad: test program $prog not built" >&2
    exit 2
fi
prog=$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")
unset LD_PRELOAD # this script's children (timeout, grep) run on plain glibc
logdir=$build/test-logs/bad
mkdir -p "$logdir"
ulimit -c 0

# Case table: PROGRAM-CASE  SLUBMALLOC_DEBUG(- = unset; KFENCE=N: SLUBMALLOC_KFENCE=N instead)
#             REQUIRED(1/0)  KIND  [ERE for stderr]
# KIND: abort (ERE, case-sensitive), aborti (ERE, case-insensitive), ok, freelist, segv (killed
# by SIGSEGV: a page with no access stopped the access).
# An abort case's ERE may be several joined by ' && ': stderr must match each of them.
DF='slubmalloc: double free of 0x'
IF='slubmalloc: invalid free of 0x'
IR='slubmalloc: invalid realloc of 0x'
IU='slubmalloc: invalid malloc_usable_size of 0x'
cases=(
    # 1. double free: the free key (src/harden.c) catches a block still on the thread's stacks
    # or its slab's freelist, however deep
    "double_free_small         -    1 abort $DF"
    "double_free_large         -    1 abort $DF"
    "double_free_delayed       -    1 abort $DF"
    "double_free_aba           -    1 abort $DF"
    "double_free_deep          -    1 abort $DF"
    "double_free_flushed       -    1 abort $DF"
    "double_free_reused        -    1 abort $DF"
    "double_free_small         F    1 abort $DF"
    "double_free_large         F    1 abort $DF"
    "double_free_delayed       F    1 abort $DF"
    "double_free_aba           F    1 abort $DF"
    # 2. invalid free
    "invalid_free_stack        -    1 abort $IF"
    "invalid_free_global       -    1 abort $IF"
    "invalid_free_one          -    1 abort $IF"
    "invalid_free_interior     -    1 abort $IF"
    "invalid_free_unaligned    -    1 abort $IF"
    "invalid_free_far          -    1 abort $IF"
    "invalid_free_mmap         -    1 abort $IF"
    "invalid_free_far_heap     -    1 abort $IF"
    "invalid_free_large_interior      - 1 abort $IF"
    "invalid_free_large_interior_page - 1 abort $IF"
    # 3. realloc / malloc_usable_size of a bad pointer
    "realloc_stack             -    1 abort $IR"
    "realloc_interior          -    1 abort $IR"
    "usable_size_stack         -    1 abort $IU"
    "usable_size_interior      -    1 abort $IU"
    # 4. impossible sizes: NULL + ENOMEM, old block intact
    "huge_malloc_max           -    1 ok"
    "huge_malloc_half          -    1 ok"
    "huge_malloc_minus8        -    1 ok"
    "huge_realloc              -    1 ok"
    "huge_reallocarray         -    1 ok"
    "huge_calloc_ovf           -    1 ok"
    "huge_calloc_ovf2          -    1 ok"
    "huge_posix_memalign       -    1 ok"
    "huge_posix_memalign_half  -    1 ok"
    "huge_posix_memalign_align -    1 ok"
    "huge_aligned_alloc        -    1 ok"
    # 5. bad alignments: as glibc 2.36
    "align_pm_0                -    1 ok"
    "align_pm_3                -    1 ok"
    "align_pm_24               -    1 ok"
    "align_pm_half             -    1 ok"
    "align_aa_3                -    1 ok"
    "align_aa_0                -    1 ok"
    "align_ma_3                -    1 ok"
    "align_ma_huge             -    1 ok"
    "align_ma_max              -    1 ok"
    # 6. debug mode: red zones, poison, the allocation site in a report
    "overflow_1_40             ZP   1 aborti redzone"
    "overflow_8_40             ZP   1 aborti redzone"
    "overflow_32_40            ZP   1 aborti redzone"
    "overflow_1_64             ZP   1 aborti redzone"
    "overflow_8_64             ZP   1 aborti redzone"
    "overflow_32_64            ZP   1 aborti redzone"
    "overflow_1_100            ZP   1 aborti redzone"
    "overflow_8_100            ZP   1 aborti redzone"
    "overflow_32_100           ZP   1 aborti redzone"
    "underflow_1               ZP   1 aborti redzone"
    "write_after_free          ZP   1 aborti poison"
    "double_free_delayed       FZPU 1 abort $DF && alloc(ated)? (by|at)"
    # 7. use after free over the free pointer, without debug mode. _single is the issue's case
    # (the object waits in the thread cache, its memory unused); _chain corrupts free pointers
    # the slabs' freelists really follow: the corrupted link must be reported
    "uaf_freelist_single       -    1 freelist"
    "uaf_freelist_chain        -    1 freelist"
    # 8. SLUBMALLOC_KFENCE: a sampled block's guard pages and page; the report has the stacks
    "kfence_overflow_guard     KFENCE=1 1 abort KFENCE: out-of-bounds access at 0x.*bytes right of object && allocated by thread"
    "kfence_overflow_at_free   KFENCE=1 1 abort KFENCE: out-of-bounds write \\(seen at free\\) at 0x && allocated by thread"
    "kfence_underflow_at_free  KFENCE=1 1 abort KFENCE: out-of-bounds write \\(seen at free\\) at 0x"
    "kfence_use_after_free     KFENCE=1 1 abort KFENCE: use after free at 0x && allocated by thread && freed by thread && #0 0x[0-9a-f]+ \\(.*bad_input\\+0x[0-9a-f]+\\)"
    "kfence_double_free        KFENCE=1 1 abort KFENCE: double free at 0x"
    # 9. zero-size blocks: usable bytes by default (as glibc's); with Z no access (a fault,
    # reported); a double free is reported in both
    "zero_size_usable          -    1 ok"
    "zero_size_write           Z    1 abort slubmalloc: access to a zero-size block at 0x"
    "zero_size_double_free     -    1 abort $DF"
    "zero_size_double_free     Z    1 abort $DF"
    # 10. faults in the other no-access areas, reported with the area and the block
    "large_guard_after         -    1 abort slubmalloc: out-of-bounds access at 0x[0-9a-f]+ \\(the guard page after the large block 0x"
    "large_guard_before        -    1 abort slubmalloc: out-of-bounds access at 0x[0-9a-f]+ \\(the guard page before the large block 0x"
    "large_guard_after         Z    1 abort slubmalloc: out-of-bounds access at 0x[0-9a-f]+ \\(the guard page after the large block 0x[0-9a-f]+, size 300000"
    "slab_far_overflow         -    1 abort slubmalloc: out-of-bounds access at 0x[0-9a-f]+ \\(slab pages from which no block"
)

# Preflight: the library must really be loaded into the test program, or every verdict is void.
if ! timeout -k 2 "$case_timeout" env LD_PRELOAD="$lib" "$prog" probe >"$logdir/probe.out" 2>&1
then
    echo "run_bad: $lib is not loaded into $prog (probe: $(head -n 2 "$logdir/probe.out" |
        tr '\n' ' '))" >&2
    exit 2
fi

tried=0 caught=0 notcaught=0 req_missed=0

# quiet_run OUT ERR CMD...: CMD's exit status (128+n for a signal), its output in OUT and ERR.
# It runs in a subshell whose stderr is dropped: that subshell, not this shell, says "Aborted".
quiet_run() {
    local out=$1 err=$2
    shift 2
    ( "$@" >"$out" 2>"$err" </dev/null; exit $? ) 2>/dev/null
}

# signal name of an exit status (128+n from bash / timeout), or "exit N"
describe_rc() {
    case $1 in
        0) echo "exited 0" ;;
        124) echo "timed out after ${case_timeout}s" ;;
        134) echo "SIGABRT" ;;
        135) echo "SIGBUS" ;;
        137) echo "SIGKILL (timed out?)" ;;
        139) echo "SIGSEGV" ;;
        *) if [ "$1" -gt 128 ]; then echo "signal $(($1 - 128))"; else echo "exit $1"; fi ;;
    esac
}

# first line of the case's stderr that says something (the allocator's report or ours)
first_msg() {
    local m
    m=$(grep -m1 -E 'slubmalloc|bad_input' "$1" 2>/dev/null)
    [ -z "$m" ] && m=$(grep -m1 . "$1" 2>/dev/null)
    [ -z "$m" ] && m="(stderr empty)"
    printf '%.200s' "$m"
}

verdict() { # caught|ok|miss label required why
    tried=$((tried + 1))
    case $1 in
        caught) echo "caught $2"; caught=$((caught + 1)) ;;
        ok) echo "ok $2"; caught=$((caught + 1)) ;;
        *)
            notcaught=$((notcaught + 1))
            if [ "$3" = 1 ]; then
                req_missed=$((req_missed + 1))
                echo "NOT CAUGHT $2: $4"
            else
                echo "NOT CAUGHT $2: $4 (not required)"
            fi
            ;;
    esac
}

for line in "${cases[@]}"; do
    read -r name dbg req kind regex <<<"$line"
    label=$name
    [ "$dbg" != - ] && label="${name}[SLUBMALLOC_DEBUG=$dbg]"
    base=$logdir/$name${dbg/-/}
    envs=(env -u SLUBMALLOC_DEBUG -u SLUBMALLOC_KFENCE)
    case $dbg in
    -) ;;
    KFENCE=*) envs+=(SLUBMALLOC_KFENCE="${dbg#KFENCE=}") label="${name}[SLUBMALLOC_$dbg]"
        base=$logdir/$name.kfence ;;
    *) envs+=(SLUBMALLOC_DEBUG="$dbg") ;;
    esac
    # only the test program is preloaded, never timeout: a broken library cannot stop the clock
    quiet_run "$base.out" "$base.err" timeout -k 2 "$case_timeout" \
        "${envs[@]}" LD_PRELOAD="$lib" "$prog" "$name"
    rc=$?
    what=$(describe_rc "$rc")
    msg=$(first_msg "$base.err")
    case $kind in
    abort | aborti)
        flags=(-q -E)
        [ "$kind" = aborti ] && flags+=(-i)
        matched=1 rest=$regex
        while [ -n "$rest" ]; do
            one=${rest%% && *}
            [ "$one" = "$rest" ] && rest= || rest=${rest#* && }
            grep "${flags[@]}" -e "$one" "$base.err" || matched=0
        done
        if [ "$rc" = 134 ] && [ "$matched" = 1 ]; then
            verdict caught "$label" "$req"
        elif [ "$rc" = 134 ]; then
            verdict miss "$label" "$req" "SIGABRT but stderr does not match /$regex/: $msg"
        else
            verdict miss "$label" "$req" "$what, expected SIGABRT + /$regex/: $msg"
        fi
        ;;
    ok)
        quiet_run "$base.glibc.out" "$base.glibc.err" timeout -k 2 "$case_timeout" \
            env -u SLUBMALLOC_DEBUG "$prog" "$name"
        grc=$?
        mine=$(grep -m1 '^outcome:' "$base.out")
        ref=$(grep -m1 '^outcome:' "$base.glibc.out")
        if [ "$rc" != 0 ]; then
            verdict miss "$label" "$req" "$what: ${mine:-no outcome} $msg"
        elif [ -z "$mine" ] || [ "$mine" != "$ref" ]; then
            verdict miss "$label" "$req" "differs from glibc: slubmalloc '${mine#outcome: }', glibc '${ref#outcome: }'"
        else
            [ "$grc" != 0 ] && echo "  note: under plain glibc $name: $(describe_rc "$grc") $(first_msg "$base.glibc.err")"
            verdict ok "$label" "$req"
        fi
        ;;
    segv)
        if [ "$rc" = 139 ]; then
            verdict caught "$label" "$req"
        else
            verdict miss "$label" "$req" "$what, expected SIGSEGV: $msg"
        fi
        ;;
    freelist)
        if [ "$rc" = 134 ] && grep -q -E -i 'freelist|corrupt' "$base.err"; then
            verdict caught "$label" "$req"
            echo "  ($name: detected: $msg)"
        elif [ "$rc" = 0 ]; then
            verdict ok "$label" "$req"
            echo "  ($name: no crash, malloc was not steered: $msg)"
        elif [ "$rc" = 3 ]; then
            verdict miss "$label" "$req" "malloc returned the attacker's pointer: $msg"
        else
            verdict miss "$label" "$req" "$what without a freelist report (not steered): $msg"
        fi
        ;;
    esac
done

[ "$req_missed" -gt 0 ] && echo "required cases not caught: $req_missed (logs: $logdir)"
echo "bad inputs: $tried tried, $caught caught, $notcaught not caught"
[ "$req_missed" = 0 ]
