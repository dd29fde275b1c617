#!/usr/bin/env bash
# compare.sh: builds slubmalloc and the bench programs (release), then runs every workload under
# glibc, jemalloc, mimalloc, tcmalloc and slubmalloc (LD_PRELOAD). Each run is one hyperfine
# run (wall time) wrapped in /usr/bin/time (peak RSS), and the program's RESULT line is kept;
# the allocators are interleaved (rounds of one run each, in a rotating order) after a warm-up
# round, so drift hits all alike. Fixed-duration workloads are scored by their own throughput.
# Writes the folder bench/results/<date>-<host>-<commit>/: report.md (median time or
# throughput, ratio to slubmalloc, peak RSS and its ratio, the fastest allocator per workload,
# geometric means, environment), <workload>.hyperfine.json (the merged runs) and chart.png (the
# ratios), and prints the table.
# Its summary ends with bench/bulk's ratios: the bulk calls against a loop of single calls.
#
# Usage: bench/compare.sh [--quick] [--only NAME[,NAME...]] [--runs N] [--warmup N] [--no-install]
#   --quick      smaller inputs and 3 runs; the default full mode: 10 runs
#   --only       run only these workloads (see the list below)
#   --runs N     measured runs per allocator and workload (--rounds N is the same)
#   --warmup N   unrecorded rounds before them (default 1; the warm-up checks outputs)
# Quick and --only runs write <date>-<host>-quick.md / -only.md, so they never replace a
# full report. Environment: SLUBMALLOC_LIB, JEMALLOC_LIB, MIMALLOC_LIB, TCMALLOC_LIB
# (library paths), BUILD_DIR (default: build; absolute or relative to the repository).
set -euo pipefail
unset LD_PRELOAD

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
START_EPOCH=$(date +%s)

# ---------------------------------------------------------------- workloads
# name | score | metric | command | quick command | verify
#   score   time: the median wall time of the process (hyperfine), lower is better;
#           rate: the program's own metric (a fixed-duration run), higher is better
#   metric  the key of the program's `RESULT name=<name> ...` line shown in the report
#   command bench/... is relative to the build folder; leading VAR=value words are set in the
#           environment; @REAL@ = bench/real, @IN@ = generated inputs, @TMP@ = a scratch folder
#   verify  (optional) stdout, or a file the run writes: after the warm-up round it must be
#           identical under every allocator (to glibc's)
WORKLOADS=(
	"st_loop|time|ns_per_op|bench/st_churn loop 60000000|bench/st_churn loop 20000000|"
	"st_churn|time|ns_per_op|bench/st_churn churn 40000000|bench/st_churn churn 15000000|"
	"st_burst|time|ns_per_op|bench/st_churn burst 80000000|bench/st_churn burst 30000000|"
	"st_scatter|time|ns_per_op|bench/st_churn scatter 8000000|bench/st_churn scatter 2000000|"
	"xthread|time|ns_per_obj|bench/xthread 12000000|bench/xthread 4000000|"
	"cfrac|time|ns_per_step|bench/cfrac_like 48 12000|bench/cfrac_like 24 8000|"
	"larson|rate|ops_per_s|bench/larson 2 1000|bench/larson 2 400|"
	"xmalloc|time|ns_per_obj|bench/xmalloc 8000000 2 1|bench/xmalloc 3000000 2 1|"
	"cache_scratch|time|ms|bench/cache_scratch passive 2 2000 20000 8|bench/cache_scratch passive 2 700 20000 8|"
	"cache_thrash|time|ms|bench/cache_scratch active 2 2000 20000 8|bench/cache_scratch active 2 700 20000 8|"
	"mstress|time|ms|bench/mstress 4 50 100000|bench/mstress 4 20 80000|"
	"mleak|time|rss_end_kib|bench/mleak 2 200 20000|bench/mleak 2 80 20000|"
	"malloc_large|time|ms|bench/malloc_large 2000 8|bench/malloc_large 700 8|"
	"real_python|time|ms|PYTHONMALLOC=malloc /usr/bin/python3 @REAL@/alloc_heavy.py 1|PYTHONMALLOC=malloc /usr/bin/python3 @REAL@/alloc_heavy.py 0.4|"
	"real_sort|time|-|LC_ALL=C /usr/bin/sort -o @TMP@/sorted.txt @IN@/sort_input.txt||@TMP@/sorted.txt"
	"real_cc|time|-|/usr/bin/cc -O2 -w -c -o @TMP@/big.o @IN@/big.c||@TMP@/big.o"
	"real_sqlite|time|-|/usr/bin/sqlite3 -batch -init @IN@/script.sql :memory:||stdout"
	"real_redis|rate|rps|@REAL@/redis.sh 400000|@REAL@/redis.sh 150000|"
	"real_named|rate|qps|@REAL@/named.sh 4|@REAL@/named.sh 2|"
	"real_clang|time|-|/usr/bin/clang++ -O1 -c -o @TMP@/cxx_stl.o @REAL@/../cxx_stl.cc|/usr/bin/clang++ -O0 -c -o @TMP@/cxx_stl.o @REAL@/../cxx_stl.cc|@TMP@/cxx_stl.o"
	"real_perl|time|-|/usr/bin/perl @REAL@/hash_churn.pl 250000|/usr/bin/perl @REAL@/hash_churn.pl 100000|stdout"
	"cxx_stl|time|-|bench/cxx_stl 40|bench/cxx_stl 16|stdout"
	"cxx_larson|time|ms|bench/cxx_larson 2 12000|bench/cxx_larson 2 4000|"
	"xchurn|time|ms|bench/xchurn 8 20 100000|bench/xchurn 8 8 60000|"
	"cxx_large|time|ms|bench/cxx_large 600 20 1|bench/cxx_large 300 20 1|"
	"cxx_large_mt|time|-|bench/cxx_large 600 10 2|bench/cxx_large 300 10 2|"
)
# The real programs (and the C++ programs built with g++'s defaults): their own geometric mean.
REAL_WORKLOADS="real_python real_sort real_cc real_sqlite real_redis real_named real_clang real_perl cxx_stl cxx_larson"
INPUT_SCALE_FULL=1
RUN_LIMIT=120 # seconds; a run that takes longer (a hang) is killed and counted as failed
INPUT_SCALE_QUICK=0.4
ALLOCATORS=(glibc jemalloc mimalloc tcmalloc slubmalloc)

# ---------------------------------------------------------------- options
RUNS=10
WARMUP=1
MODE=full
ONLY=""
INSTALL=1

usage() {
	sed -n '11,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	echo "Workloads:$(for w in "${WORKLOADS[@]}"; do printf ' %s' "${w%%|*}"; done)"
}

die() {
	echo "compare.sh: error: $*" >&2
	exit 1
}

note() {
	echo "compare.sh: $*" >&2
}

RUNS_SET="" WARMUP_SET=""
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) MODE=quick ;;
	--only)
		[ $# -ge 2 ] || die "--only needs a workload name"
		ONLY=$2
		shift
		;;
	--only=*) ONLY=${1#--only=} ;;
	--rounds | --runs)
		[ $# -ge 2 ] || die "$1 needs a number"
		RUNS_SET=$2
		shift
		;;
	--rounds=* | --runs=*) RUNS_SET=${1#*=} ;;
	--warmup)
		[ $# -ge 2 ] || die "--warmup needs a number"
		WARMUP_SET=$2
		shift
		;;
	--warmup=*) WARMUP_SET=${1#--warmup=} ;;
	--no-install) INSTALL=0 ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
	shift
done
[ "$MODE" = quick ] && RUNS=3
[ -n "$RUNS_SET" ] && RUNS=$RUNS_SET
[ -n "$WARMUP_SET" ] && WARMUP=$WARMUP_SET
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ "$WARMUP" =~ ^[0-9]+$ ]] || die "--warmup must be a non-negative integer"

# ---------------------------------------------------------------- dependencies
PACKAGES=(hyperfine meson ninja-build gcc g++ libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev
	time python3 python3-matplotlib sqlite3 redis-server redis-tools bind9 bind9-dnsutils dnsperf
	clang perl)
# shellcheck source=bench/peers.sh
. "$ROOT/bench/peers.sh"
# shellcheck source=bench/compare_report.sh
. "$ROOT/bench/compare_report.sh"
select_named "$ONLY" workload "${WORKLOADS[@]}"
set_build_dir
install_packages "${PACKAGES[@]}"
for tool in hyperfine meson ninja cc; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (apt-get install hyperfine meson ninja-build gcc)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"
# the system interpreter (Debian's python3-matplotlib), not one first in PATH
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3) || die "python3 not found"; fi

# ---------------------------------------------------------------- build
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/slub-compare.XXXXXX")
# generated inputs and the outputs of the real programs live in memory (tmpfs) when possible,
# so that writing and reading them does not put disk I/O into the timings
if [ -d /dev/shm ] && [ -w /dev/shm ] && SHMD=$(mktemp -d /dev/shm/slub-compare.XXXXXX 2>/dev/null); then
	:
else
	SHMD=$TMPD/shm
	mkdir -p "$SHMD"
fi
trap 'rm -rf "$TMPD" "$SHMD"' EXIT
mkdir -p "$TMPD/runs" "$SHMD/in" "$SHMD/tmp"

BENCH_TARGETS=(preload/libslubmalloc.so bench/bulk)
for w in "${SELECTED[@]}"; do
	IFS='|' read -r -a fields <<<"$w"
	read -r -a words <<<"${fields[3]}"
	for word in "${words[@]}"; do
		case "$word" in
		*=*) continue ;;
		bench/*) [[ " ${BENCH_TARGETS[*]} " == *" $word "* ]] || BENCH_TARGETS+=("$word") ;;
		esac
		break
	done
done

build_release "${BENCH_TARGETS[@]}"
for t in "${BENCH_TARGETS[@]:1}"; do
	[ -x "$BUILD_ABS/$t" ] || die "benchmark program $BUILD_DIR/$t was not built"
done

# ---------------------------------------------------------------- allocator libraries
locate_allocators
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- commands and inputs
INPUT_SCALE=$INPUT_SCALE_FULL
[ "$MODE" = quick ] && INPUT_SCALE=$INPUT_SCALE_QUICK

# expand_cmd NAME COMMAND -> the argv, one word per line (placeholders replaced)
expand_cmd() {
	local word first=1
	local -a words
	read -r -a words <<<"$2"
	for word in "${words[@]}"; do
		word=${word//@REAL@/$ROOT/bench/real}
		word=${word//@IN@/$SHMD/in}
		word=${word//@TMP@/$SHMD/tmp}
		if [ "$first" = 1 ] && [[ "$word" != *=* ]]; then
			[[ "$word" == bench/* ]] && word=$BUILD_ABS/$word
			first=0
		fi
		printf '%s\n' "$word"
	done
}

need_inputs=0
READY=()
for w in "${SELECTED[@]}"; do
	IFS='|' read -r -a fields <<<"$w"
	wl=${fields[0]} cmd=${fields[3]}
	[[ "$cmd" == *@IN@* ]] && need_inputs=1
	prog=""
	while read -r word; do
		[[ "$word" == *=* && -z "$prog" ]] && continue
		prog=$word
		break
	done < <(expand_cmd "$wl" "$cmd")
	if [ ! -x "$prog" ]; then
		note "$wl: $prog not found, skipping this workload"
		SKIPPED+=("workload $wl: $prog not found")
		continue
	fi
	READY+=("$w")
done
SELECTED=("${READY[@]+"${READY[@]}"}")
[ ${#SELECTED[@]} -gt 0 ] || die "no workload to run"
if [ "$need_inputs" = 1 ]; then
	note "generating the inputs of the real programs (scale $INPUT_SCALE) ..."
	"$PY" bench/real/gen_inputs.py "$SHMD/in" "$INPUT_SCALE" || die "bench/real/gen_inputs.py failed"
fi

# ---------------------------------------------------------------- output paths
# one folder a run: bench/results/<date>-<host>-<commit>[-quick][-only]/
STAMP="$(date +%F)-$(uname -n)-$(git -C "$ROOT" rev-parse --short=7 HEAD 2>/dev/null || echo nogit)"
[ "$MODE" = quick ] && STAMP+="-quick"
[ -n "$ONLY" ] && STAMP+="-only"
RUN_DIR="bench/results/$STAMP"
mkdir -p "$RUN_DIR"
REPORT="$RUN_DIR/report.md"
RAW="$TMPD/raw.tsv"
: >"$RAW"
for w in "${SELECTED[@]}"; do
	rm -f "$RUN_DIR/${w%%|*}.hyperfine.json"
done
rm -f "$REPORT" "$RUN_DIR/chart.png"

env_args() { # env_args ALLOCATOR -> arguments for env(1)
	if [ "${LIB[$1]}" = none ]; then
		printf '%s\n' -u LD_PRELOAD
	else
		printf '%s\n' "LD_PRELOAD=${LIB[$1]}"
	fi
}

IS_TTY=0
[ -t 2 ] && IS_TTY=1
progress() { # progress TEXT (rewrites the current line on a terminal)
	[ "$IS_TTY" = 1 ] && printf '\r\033[K%s' "$1" >&2
	return 0
}
progress_break() { # ends a pending progress line before a message
	[ "$IS_TTY" = 1 ] && printf '\r\033[K' >&2
	return 0
}
elapsed() { # elapsed -> "3m07s" since the start
	local s=$(($(date +%s) - START_EPOCH))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# ---------------------------------------------------------------- the report script
# $TMPD/report.py (bench/compare_report.sh): a summary line after each workload, the report at the end
write_report_script "$TMPD"

SPEC="$TMPD/spec.tsv"
: >"$SPEC"
for w in "${SELECTED[@]}"; do
	IFS='|' read -r wl score metric cmd quick verify <<<"$w"
	[ "$MODE" = quick ] && [ -n "$quick" ] && cmd=$quick
	printf '%s\t%s\t%s\t%s\n' "$wl" "$score" "$metric" "$cmd" >>"$SPEC"
done

# ---------------------------------------------------------------- runs
# run_one WORKLOAD ALLOCATOR ROUND: one hyperfine run of the workload under the allocator;
# appends a line to $RAW; sets RUN_STATUS.
run_one() {
	local wl=$1 a=$2 r=$3
	local json="$TMPD/runs/$wl.$a.$r.json" hf_cmd x line value rss status
	local -a eargs
	mapfile -t eargs < <(env_args "$a")
	hf_cmd="/usr/bin/time -f %M -o $(printf '%q' "$TMPD/rss") timeout -k 5 $RUN_LIMIT env"
	for x in "${eargs[@]}" "${ARGV[@]}"; do hf_cmd+=" $(printf '%q' "$x")"; done
	rm -f "$TMPD/rss" "$json"
	: >"$TMPD/out"
	status=ok value=NA rss=NA
	if ! hyperfine -N -i --style none --runs 1 --output "$TMPD/out" --export-json "$json" \
		-n "$a" "$hf_cmd" >"$TMPD/hf.log" 2>&1 || [ ! -s "$json" ]; then
		status=hyperfine
	elif grep -q '^Command exited with non-zero status' "$TMPD/rss" 2>/dev/null; then
		status="exit$(sed -n 's/^Command exited with non-zero status \([0-9]*\).*/\1/p' "$TMPD/rss" | head -n1)"
		[ "$status" = exit124 ] && status="timeout${RUN_LIMIT}s"
	elif grep -q '^Command terminated by signal' "$TMPD/rss" 2>/dev/null; then
		status="signal$(sed -n 's/^Command terminated by signal \([0-9]*\).*/\1/p' "$TMPD/rss" | head -n1)"
	fi
	rss=$(tail -n1 "$TMPD/rss" 2>/dev/null | grep -E '^[0-9]+$' || echo NA)
	if [ "$METRIC" != - ]; then
		line=$(grep -m1 "^RESULT name=$wl " "$TMPD/out" || true)
		value=$(sed -n "s/.* $METRIC=\([0-9.eE+-]*\).*/\1/p" <<<"$line")
		if [ "$status" = ok ] && [ -z "$value" ]; then
			status=noresult
		fi
		value=${value:-NA}
	fi
	if [ "$status" = ok ] && [ "$r" = 0 ] && [ -n "$VERIFY" ]; then
		local sum
		if [ "$VERIFY" = stdout ]; then
			sum=$(grep -v '^RESULT ' "$TMPD/out" | md5sum | cut -d' ' -f1)
		else
			sum=$(md5sum <"$VERIFY" 2>/dev/null | cut -d' ' -f1 || echo missing)
		fi
		VERIFY_SUM[$a]=$sum
	fi
	if [ "$status" != ok ] && [ -z "${REPORTED_FAIL[$a]:-}" ]; then
		REPORTED_FAIL[$a]=1
		progress_break
		# hyperfine does not keep stderr: run once more to show why
		local -a cmdv=(timeout -k 5 "$RUN_LIMIT" env "${eargs[@]}" "${ARGV[@]}")
		("${cmdv[@]}" >/dev/null 2>"$TMPD/err") 2>/dev/null || true
		local why
		why=$(tail -n3 "$TMPD/err" | tr '\n' ' ')
		[ "$status" = hyperfine ] && why+=$(tail -n2 "$TMPD/hf.log" | tr '\n' ' ')
		note "$wl under $a failed ($status): ${why:-no message}"
	fi
	[ -s "$json" ] || json=-
	printf '%s\t%s\t%d\t%s\t%s\t%s\t%s\n' "$wl" "$a" "$r" "$status" "$value" "$rss" "$json" >>"$RAW"
	RUN_STATUS=$status
}

NW=${#SELECTED[@]}
note "$NW workload(s) x $NA allocators x ($WARMUP warm-up + $RUNS measured) runs, $MODE mode"
wi=0
for w in "${SELECTED[@]}"; do
	IFS='|' read -r wl score METRIC cmd quick verify <<<"$w"
	[ "$score" = rate ] && [ "$METRIC" = - ] && die "workload $wl: a rate workload needs a metric"
	[ "$MODE" = quick ] && [ -n "$quick" ] && cmd=$quick
	mapfile -t ARGV < <(expand_cmd "$wl" "$cmd")
	VERIFY=""
	if [ -n "$verify" ]; then
		VERIFY=$verify
		[ "$VERIFY" != stdout ] && VERIFY=$(expand_cmd "$wl" "$verify")
	fi
	unset VERIFY_SUM REPORTED_FAIL
	declare -A VERIFY_SUM=() REPORTED_FAIL=()
	wstart=$(date +%s)
	tag="[$((wi + 1))/$NW] $wl"
	echo "compare.sh: $tag ($(elapsed) elapsed): $NA allocators x ($WARMUP warm-up + $RUNS) runs ..." >&2
	failures=0
	total_rounds=$((WARMUP + RUNS))
	for ((r = 0; r < total_rounds; r++)); do
		rec=$((r - WARMUP + 1))
		((rec < 0)) && rec=0 # every warm-up round is recorded as round 0
		for ((k = 0; k < NA; k++)); do
			a=${AVAIL[$(((k + r + wi) % NA))]}
			if ((r < WARMUP)); then
				progress "$tag: warm-up $((r + 1))/$WARMUP ($a) ... $(elapsed)"
			else
				progress "$tag: run $((r - WARMUP + 1))/$RUNS ($a) ... $(elapsed)"
			fi
			run_one "$wl" "$a" "$rec"
			[ "$RUN_STATUS" = ok ] || failures=$((failures + 1))
		done
		if ((r == WARMUP - 1)) && [ -n "$VERIFY" ]; then
			# outputs must agree with glibc's (or with the first allocator's without glibc)
			ref_a=glibc
			[ -n "${VERIFY_SUM[glibc]:-}" ] || ref_a=${AVAIL[0]}
			ref=${VERIFY_SUM[$ref_a]:-}
			for a in "${AVAIL[@]}"; do
				s=${VERIFY_SUM[$a]:-}
				if [ -n "$ref" ] && [ -n "$s" ] && [ "$s" != "$ref" ]; then
					progress_break
					note "$wl under $a: output differs from $ref_a's ($VERIFY); marking it failed"
					printf '%s\t%s\t0\twrongoutput\tNA\tNA\t-\n' "$wl" "$a" >>"$RAW"
					failures=$((failures + 1))
				fi
			done
		fi
	done
	progress_break
	printf 'compare.sh: %s: done in %ds, %d failed: %s\n' "$tag" "$(($(date +%s) - wstart))" \
		"$failures" "$("$PY" "$TMPD/report.py" line "$RAW" "$SPEC" "$wl" "${AVAIL[*]}" 2>&1)" >&2
	wi=$((wi + 1))
done

# ---------------------------------------------------------------- bulk calls
# bench/bulk (seeds 000 and 001): a malloc_bulk/free_bulk round trip per object, as a share of
# a malloc/free loop over the same objects in the same process (the seed's point: at most 0.40),
# at 64 bytes and at 32 (a class below a cache line, whose stacks differ: src/README.md).
echo "compare.sh: bench/bulk ($(elapsed) elapsed) ..." >&2
BULK_PASSES=$([ "$MODE" = quick ] && echo 2 || echo 5)
BULK_LINE=$(for s in 64 32; do "$BUILD_ABS/bench/bulk" -P -s "$s" -p "$BULK_PASSES" 2>/dev/null; done |
	"$PY" -c '
import sys
r = {}
for line in sys.stdin:
    if line.startswith("RESULT name=bulk "):
        f = dict(w.split("=", 1) for w in line.split()[1:])
        r[int(f["size"]), int(f["n"])] = (
            float(f["bulk_cycles"]) / float(f["fallback_cycles"]),
            float(f["cache_bulk_cycles"]) / float(f["cache_fallback_cycles"]))
ns = [n for n in (1, 8, 16, 64) if (64, n) in r]
if not ns:
    sys.exit("bench/bulk printed no RESULT line")
bad = ["%d B n=%d" % (s, n) for s in (64, 32) for n in (8, 16, 64) if r.get((s, n), (0,))[0] > 0.40]
print("bulk calls per object / a loop of single calls: malloc_bulk+free_bulk %s; "
      "slub_cache bulk %s; at 32 bytes malloc_bulk+free_bulk %s (%s)" % (
          ", ".join("n=%d %.2f" % (n, r[64, n][0]) for n in ns),
          ", ".join("n=%d %.2f" % (n, r[64, n][1]) for n in ns),
          ", ".join("n=%d %.2f" % (n, r[32, n][0]) for n in ns if (32, n) in r),
          "met: at most 0.40 at n = 8..64" if not bad else
          "NOT met at %s: needs <= 0.40" % ", ".join(bad)))
') || BULK_LINE="bulk calls: bench/bulk failed"

# ---------------------------------------------------------------- environment header
write_env_md "$TMPD/env.md" "$need_inputs"

# ---------------------------------------------------------------- report
REAL_WORKLOADS=$REAL_WORKLOADS BULK_LINE=$BULK_LINE "$PY" "$TMPD/report.py" report "$RAW" "$SPEC" "$TMPD/env.md" "$REPORT" "$STAMP" "${AVAIL[*]}" \
	"$RUNS" "$WARMUP"
echo "report: $REPORT, chart: $RUN_DIR/chart.png ($(elapsed) total)"
