#!/usr/bin/env bash
# mt_scaling.sh: multi-thread scaling of slubmalloc against glibc, jemalloc, mimalloc and
# tcmalloc (all but glibc through LD_PRELOAD with absolute paths). For each workload and each
# thread count T, the allocators run interleaved (round r runs every allocator once, in an
# order rotated by r), RUNS times each; the score is the median of the program's own metric
# from its `RESULT name=... KEY=...` line (larson: ops_per_s, higher is better; xmalloc,
# cache_scratch, cache_thrash, mstress: ms, lower is better), or the wall time of the process
# (date +%s%N) when no RESULT line is printed. A run that fails, prints a mismatch or passes
# RUN_LIMIT seconds counts as failed and is left out of the median (the table shows how many
# runs it is made of when any failed; a cell whose runs were all skipped past TIME_BUDGET reads
# `skipped`, not `fail`). Ratio = allocator / slubmalloc, oriented so that > 1
# means slubmalloc is better (time: other/slub; rate: slub/other).
# Writes $OUT/mt.md (environment, one table row per workload and T) and $OUT/mt_raw.tsv (every
# run). Runs from the repository root; meant for a many-core machine, needs no GPU.
#
# Environment (defaults in brackets):
#   THREADS ["4 8 16"]   RUNS [3]   OUT [bench/results/mt-tmp]   BUILD_DIR [build-mt]
#   LIBDIR [.devlibs] (libjemalloc.so.2, libmimalloc.so.2, libtcmalloc_minimal.so.4; deps/ holds
#   libstdc++/libgcc_s, used only when the system has none)
#   LARSON_MS [800]   XMALLOC_OBJS [6000000]   CACHE_ITERS [1500]   MSTRESS_ROUNDS [20]
#   MSTRESS_ITERS [100000]   RUN_LIMIT [30] (s per run)   TIME_BUDGET [330] (s; once passed,
#   the remaining runs are skipped so the report is still written)
#   ONLY (space-separated workload names to run)
set -uo pipefail
unset LD_PRELOAD

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
THREADS=${THREADS:-"4 8 16"}
RUNS=${RUNS:-3}
OUT=${OUT:-$ROOT/bench/results/mt-tmp}
BUILD_DIR=${BUILD_DIR:-build-mt}
LIBDIR=${LIBDIR:-.devlibs}
LARSON_MS=${LARSON_MS:-800}
XMALLOC_OBJS=${XMALLOC_OBJS:-6000000}
CACHE_ITERS=${CACHE_ITERS:-1500}
MSTRESS_ROUNDS=${MSTRESS_ROUNDS:-20}
MSTRESS_ITERS=${MSTRESS_ITERS:-100000}
RUN_LIMIT=${RUN_LIMIT:-30}
TIME_BUDGET=${TIME_BUDGET:-330}
ONLY=${ONLY:-}
mkdir -p "$OUT"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
case "$LIBDIR" in /*) ;; *) LIBDIR=$ROOT/$LIBDIR ;; esac

ALLOCS=(glibc jemalloc mimalloc tcmalloc slubmalloc)
declare -A LIB=(
	[glibc]=""
	[jemalloc]=$LIBDIR/libjemalloc.so.2
	[mimalloc]=$LIBDIR/libmimalloc.so.2
	[tcmalloc]=$LIBDIR/libtcmalloc_minimal.so.4
	[slubmalloc]=$BUILD_DIR/preload/libslubmalloc.so
)
for a in "${ALLOCS[@]}"; do
	if [ -n "${LIB[$a]}" ] && [ ! -f "${LIB[$a]}" ]; then
		echo "mt_scaling.sh: missing ${LIB[$a]}" >&2
		exit 1
	fi
done
# jemalloc and tcmalloc need libstdc++ and libgcc_s: take the system's when it has them.
DEPS_PATH=""
if ! ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 ' || ! ldconfig -p 2>/dev/null | grep -q 'libgcc_s\.so\.1 '; then
	DEPS_PATH=$LIBDIR/deps
fi

# name | metric key | better (time|rate) | command with @T@ (threads) and @H@ (T/2, at least 1)
WORKLOADS=(
	"larson|ops_per_s|rate|larson @T@ $LARSON_MS"
	"xmalloc|ms|time|xmalloc $XMALLOC_OBJS @H@ @H@"
	"cache_thrash|ms|time|cache_scratch active @T@ $CACHE_ITERS 20000 8"
	"cache_scratch|ms|time|cache_scratch passive @T@ $CACHE_ITERS 20000 8"
	"mstress|ms|time|mstress @T@ $MSTRESS_ROUNDS $MSTRESS_ITERS"
)

START=$(date +%s)
RAW=$OUT/mt_raw.tsv
printf 'workload\tthreads\tround\tallocator\tstatus\tmetric\twall_ms\n' >"$RAW"

# run_one ALLOC CMD...: prints "ok METRIC WALL_MS" or "fail - WALL_MS"
run_one() {
	local alloc=$1 key=$2
	shift 2
	local pre=${LIB[$alloc]} out rc t0 t1 wall metric
	t0=$(date +%s%N)
	out=$(LD_PRELOAD=$pre LD_LIBRARY_PATH=${DEPS_PATH:+$DEPS_PATH} timeout "$RUN_LIMIT" "$@" 2>&1)
	rc=$?
	t1=$(date +%s%N)
	wall=$(((t1 - t0) / 1000000))
	metric=$(printf '%s\n' "$out" | sed -n "s/^RESULT .*[ ]$key=\([0-9.eE+-]*\).*/\1/p" | tail -1)
	if [ $rc -ne 0 ]; then
		printf '%s\n' "$out" | tail -3 | sed "s/^/  [$alloc rc=$rc] /" >&2
		echo "fail - $wall"
	elif [ -z "$metric" ]; then
		echo "ok $wall $wall" # no RESULT line: score by wall time
	else
		echo "ok $metric $wall"
	fi
}

median() { sort -g | awk '{v[NR]=$1} END{if(NR==0){print "-"; exit} if(NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

skipped=0
for w in "${WORKLOADS[@]}"; do
	IFS='|' read -r name key better cmd <<<"$w"
	if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
	for t in $THREADS; do
		h=$((t / 2))
		[ $h -lt 1 ] && h=1
		c=${cmd//@T@/$t}
		c=${c//@H@/$h}
		read -r -a argv <<<"$c"
		argv[0]=$BUILD_DIR/bench/${argv[0]}
		for ((r = 0; r < RUNS; r++)); do
			for ((i = 0; i < ${#ALLOCS[@]}; i++)); do
				a=${ALLOCS[$(((i + r) % ${#ALLOCS[@]}))]}
				if [ $(($(date +%s) - START)) -ge "$TIME_BUDGET" ]; then
					skipped=$((skipped + 1))
					printf '%s\t%s\t%s\t%s\tskipped\t-\t-\n' "$name" "$t" "$r" "$a" >>"$RAW"
					continue
				fi
				read -r st m wl <<<"$(run_one "$a" "$key" "${argv[@]}")"
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$t" "$r" "$a" "$st" "$m" "$wl" >>"$RAW"
				echo "$name T=$t r=$r $a: $st $key=$m wall=${wl}ms" >&2
			done
		done
	done
done

# ---------------------------------------------------------------- report
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
{
	echo "# slubmalloc multi-thread scaling"
	echo
	echo "- nproc: $(nproc)"
	echo "- kernel: $(uname -r)"
	echo "- CPU: $cpu"
	echo "- glibc: $(ldd --version 2>/dev/null | head -1 | sed 's/.* //')"
	echo "- runs per allocator and point: $RUNS, interleaved; median of the program's metric"
	echo "- settings: larson ${LARSON_MS} ms; xmalloc $XMALLOC_OBJS objects, T/2 producers + T/2 consumers;" \
		"cache_scratch/cache_thrash $CACHE_ITERS iterations x 20000 writes, 8 B; mstress $MSTRESS_ROUNDS rounds x $MSTRESS_ITERS iterations"
	echo "- metric: larson ops_per_s (higher is better); the others ms (lower is better)"
	echo "- ratio x/slub: > 1 means slubmalloc is better (time: x/slub; rate: slub/x)"
	echo "- total script time: $(($(date +%s) - START)) s"
	[ "$skipped" -gt 0 ] && echo "- runs skipped past the time budget: $skipped"
	[ -n "$DEPS_PATH" ] && echo "- libstdc++/libgcc_s for jemalloc/tcmalloc taken from $LIBDIR/deps"
	echo
	printf '| workload | T | metric |'
	for a in "${ALLOCS[@]}"; do printf ' %s |' "$a"; done
	for a in "${ALLOCS[@]}"; do [ "$a" = slubmalloc ] || printf ' %s/slub |' "$a"; done
	echo ' fastest |'
	printf '|---|---:|---|'
	for a in "${ALLOCS[@]}"; do printf -- '---:|'; done
	for a in "${ALLOCS[@]}"; do [ "$a" = slubmalloc ] || printf -- '---:|'; done
	echo '---|'
	for w in "${WORKLOADS[@]}"; do
		IFS='|' read -r name key better cmd <<<"$w"
		if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
		for t in $THREADS; do
			declare -A med=()
			declare -A nok=()
			declare -A nskip=()
			for a in "${ALLOCS[@]}"; do
				nskip[$a]=$(awk -F'\t' -v n="$name" -v t="$t" -v a="$a" '$1==n && $2==t && $4==a && $5=="skipped"' "$RAW" | wc -l)
				med[$a]=$(awk -F'\t' -v n="$name" -v t="$t" -v a="$a" '$1==n && $2==t && $4==a && $5=="ok" {print $6}' "$RAW" | median)
				nok[$a]=$(awk -F'\t' -v n="$name" -v t="$t" -v a="$a" '$1==n && $2==t && $4==a && $5=="ok"' "$RAW" | wc -l)
			done
			printf '| %s | %s | %s |' "$name" "$t" "$key"
			for a in "${ALLOCS[@]}"; do
				v=${med[$a]}
				if [ "$v" = "-" ] && [ "${nskip[$a]}" -ge "$RUNS" ]; then
					printf ' skipped |' # the time budget ran out first: not a failure
				elif [ "$v" = "-" ]; then
					printf ' fail |'
				else
					if [ "$key" = ops_per_s ]; then v=$(awk -v x="$v" 'BEGIN{printf "%.2fM", x/1e6}'); fi
					if [ "${nok[$a]}" -lt "$RUNS" ]; then v="$v (${nok[$a]}/$RUNS)"; fi
					printf ' %s |' "$v"
				fi
			done
			s=${med[slubmalloc]}
			best=""
			bestv=""
			for a in "${ALLOCS[@]}"; do
				v=${med[$a]}
				[ "$v" = "-" ] && continue
				if [ -z "$bestv" ] || awk -v x="$v" -v y="$bestv" -v b="$better" 'BEGIN{exit !((b=="rate") ? x>y : x<y)}'; then
					best=$a
					bestv=$v
				elif awk -v x="$v" -v y="$bestv" 'BEGIN{exit !(x==y)}'; then
					best="$best=$a" # a tie of the medians
				fi
			done
			for a in "${ALLOCS[@]}"; do
				[ "$a" = slubmalloc ] && continue
				v=${med[$a]}
				if [ "$v" = "-" ] || [ "$s" = "-" ]; then
					printf ' - |'
				else
					awk -v x="$v" -v s="$s" -v b="$better" 'BEGIN{r=(b=="rate") ? s/x : x/s; printf " %.2f |", r}'
				fi
			done
			echo " ${best:--} |"
			unset med nok nskip
		done
	done
} >"$OUT/mt.md"
cat "$OUT/mt.md"
