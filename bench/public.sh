#!/usr/bin/env bash
# public.sh: mimalloc-bench's programs (https://github.com/daanx/mimalloc-bench, its bench/
# folder) under glibc, jemalloc, mimalloc, tcmalloc and slubmalloc (LD_PRELOAD). None of
# mimalloc-bench's code is in this repository: the programs are built outside it, from a checkout
# of theirs, and PATH names the folder that holds them.
#
# Usage: bench/public.sh [--rounds N] [--warmup N] [--only P[,P...]] [--no-install] PATH
#        bench/public.sh --build SRC PATH
#   PATH         the folder of built programs, as --build writes it (not the checkout)
#   --build      compile the programs of the checkout SRC into PATH (see below) and stop
#   --rounds N   measured rounds (default 5); round r runs every program under every allocator,
#                in an order that rotates with r and with the program
#   --warmup N   unrecorded rounds before them (default 0)
#   --only       run only these programs (the names listed below)
#   --no-install do not apt-get install missing packages
# Environment: SLUBMALLOC_LIB (skips the build of slubmalloc), JEMALLOC_LIB, MIMALLOC_LIB,
# TCMALLOC_LIB (library paths), BUILD_DIR (default: build), PROCS (the thread count that
# mimalloc-bench's bench.sh calls $procs; default: nproc), BASE_LIB (another slubmalloc build,
# main's before a change, run as the allocator "base" in the same rounds: the report adds
# slubmalloc/base; base is no peer).
#
# Getting and building the programs (the committed results: its commit ce5784f, cloned from a
# mirror of that repository, then these two commands):
#   git clone https://github.com/daanx/mimalloc-bench /work/mimalloc-bench   # any place outside
#   bench/public.sh --build /work/mimalloc-bench /work/mimalloc-bench/out-public
#   bench/public.sh --rounds 5 /work/mimalloc-bench/out-public
# --build is our own recipe, not mimalloc-bench's build-bench-env.sh (that one downloads
# allocators and other programs): each program of its bench/CMakeLists.txt that is run here is
# compiled with gcc or g++ -O2 and the defines and warning flags that CMakeLists.txt gives it.
# It copies the two inputs (espresso/largest.espresso, barnes/input) into PATH/inputs/ and
# writes PATH/BUILD-INFO.txt (the checkout's commit, the compilers, each command).
# sh6bench and sh8bench are MicroQuill's code: mimalloc-bench does not ship them (see its
# bench/shbench/readme.md). --build compiles them only if SRC/bench/shbench holds
# sh6bench-new.c and sh8bench-new.c (patched as that readme says); otherwise they are skipped.
#
# The arguments are those of mimalloc-bench's bench.sh with $procs = PROCS, except larson
# (its 5 s run time is 2 s here) and xmalloc-test (-t 5 is -t 2). Some runs stay longer than
# 5 s on 2 cores, as they have no size argument: alloc-test (100M operations a thread),
# espresso (its one input), malloc-large, and rptest (about 16 s, most of it sleeps); mstress
# at bench.sh's arguments takes 0.1-0.4 s. The programs whose own figure bench.sh reads score
# by that figure, higher is better: larson and larson-sized (operations per second),
# xmalloc-test (frees per second), rptest (memory operations per CPU second) and glibc-thread
# (iterations in its fixed 2 s). The others score by wall time, lower is better. Each run is
# wrapped in /usr/bin/time for its peak RSS and CPU time. A run that fails (exit status,
# signal, timeout, no figure, cfrac's output unlike glibc's) is reported and left out of the
# medians.
#
# Writes the folder bench/results/public-<date>-<host>-<commit>/: report.md (per program the
# median of each allocator, slubmalloc's ratio to the best peer, the time programs' CPU time,
# the median peak RSS, the geometric means, the load and the environment) and the runs as
# results.csv. Prints the tables and, last, the line
# "public: slubmalloc/best peer geomean X; over the N programs that allocate in their timed
# part (not ...): Y; above 1.00: PROGRAM RATIO (PEER), ...". barnes, cache-scratch and
# cache-thrash, as compiled, call the allocator almost never: Y leaves them out.
# --only runs add -only, other --rounds/--warmup values -custom, uncommitted changes -dirty.
set -euo pipefail
unset LD_PRELOAD

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
START_EPOCH=$(date +%s)
ALLOCATORS=(glibc jemalloc mimalloc tcmalloc slubmalloc)
RUN_LIMIT=120 # seconds; a run that takes longer (a hang) is killed and counted as failed
PROCS=${PROCS:-$(nproc)}

# ---------------------------------------------------------------- programs
# name | score | command | stdin | verify
#   score   time: the wall time, lower is better; rate:UNIT:REGEX: the first number in the first
#           match of the extended REGEX in the run's output (stdout, then stderr), higher is better
#   command the program (in PATH) and its arguments; @IN@ = PATH/inputs, @P@ = PROCS,
#           @P2@ = 2 x PROCS
#   stdin   a file under @IN@ to read, or empty for /dev/null
#   verify  stdout: must be the same as glibc's in every run
PROGRAMS=(
	"cfrac|time|cfrac 17545186520507317056371138836327483792789528||stdout"
	"espresso|time|espresso @IN@/largest.espresso||"
	"barnes|time|barnes|@IN@/barnes.input|"
	"larsonN|rate:ops/s:Throughput = *[0-9]+|larson 2 8 1000 5000 100 4141 @P@||"
	"larsonN-sized|rate:ops/s:Throughput = *[0-9]+|larson-sized 2 8 1000 5000 100 4141 @P@||"
	"alloc-test1|time|alloc-test 1||"
	"alloc-testN|time|alloc-test @P@||"
	"cache-scratch1|time|cache-scratch 1 1000 1 2000000 @P@||"
	"cache-scratchN|time|cache-scratch @P@ 1000 1 2000000 @P@||"
	"cache-thrash1|time|cache-thrash 1 1000 1 2000000 @P@||"
	"cache-thrashN|time|cache-thrash @P@ 1000 1 2000000 @P@||"
	"glibc-simple|time|glibc-simple||"
	"glibc-thread|rate:iterations:^[0-9]+ iterations|glibc-thread @P@||"
	"malloc-large|time|malloc-large||"
	"mstressN|time|mstress @P@ 50 25||"
	"rptestN|rate:memops/CPU s:[0-9]+ memory ops/CPU second|rptest @P@ 0 1 2 500 1000 100 8 16000||"
	"xmalloc-testN|rate:M frees/s:free/sec: [0-9.]+|xmalloc-test -w @P@ -t 2 -s 64||"
	"sh6benchN|time|sh6bench @P2@||"
	"sh8benchN|time|sh8bench @P2@||"
)

# --build: name | compiler | flags | sources (relative to SRC/bench) | libraries
C_WARN="-w -Wno-implicit-function-declaration -Wno-implicit-int -Wno-int-conversion -Wno-return-mismatch -Wno-incompatible-pointer-types"
CFRAC_SRC="cfrac.c pops.c pconst.c pio.c pabs.c pneg.c pcmp.c podd.c phalf.c padd.c psub.c pmul.c
	pdivmod.c psqrt.c ppowmod.c atop.c ptoa.c itop.c utop.c ptou.c errorp.c pfloat.c pidiv.c
	pimod.c picmp.c primes.c pcfrac.c pgcd.c"
ESPRESSO_SRC="cofactor.c cols.c compl.c contain.c cubestr.c cvrin.c cvrm.c cvrmisc.c cvrout.c
	dominate.c equiv.c espresso.c essen.c exact.c expand.c gasp.c getopt.c gimpel.c globals.c
	hack.c indep.c irred.c main.c map.c matrix.c mincov.c opo.c pair.c part.c primes.c reduce.c
	rows.c set.c setc.c sharp.c sminterf.c solution.c sparse.c unate.c utility.c verify.c"
BUILDS=(
	"cfrac|gcc|-std=gnu89 -DNOMEMOPT=1|$(for f in $CFRAC_SRC; do printf 'cfrac/%s ' "$f"; done)|-lm"
	"espresso|gcc|-std=gnu89|$(for f in $ESPRESSO_SRC; do printf 'espresso/%s ' "$f"; done)|-lm"
	"barnes|gcc|-std=gnu89|barnes/code.c barnes/code_io.c barnes/load.c barnes/grav.c barnes/getparam.c barnes/util.c|-lm"
	"larson|g++|-DCPP=1|larson/larson.cpp|-lpthread"
	"larson-sized|g++|-fsized-deallocation -DCPP=1 -DSIZED=1|larson/larson.cpp|-lpthread"
	"alloc-test|g++|-DBENCH=4|alloc-test/test_common.cpp alloc-test/allocator_tester.cpp|-lpthread"
	"cache-scratch|g++||cache-scratch/cache-scratch.cpp|-lpthread"
	"cache-thrash|g++||cache-thrash/cache-thrash.cpp|-lpthread"
	"xmalloc-test|gcc||xmalloc-test/xmalloc-test.c|-lpthread"
	"malloc-large|g++||malloc-large/malloc-large.cpp|-lpthread"
	"mstress|gcc||mstress/mstress.c|-lpthread"
	"rptest|gcc|-Irptest|rptest/rptest.c rptest/thread.c rptest/timer.c|-lpthread -lm"
	"glibc-simple|gcc||glibc-bench/bench-malloc-simple.c|-lpthread"
	"glibc-thread|gcc||glibc-bench/bench-malloc-thread.c|-lpthread"
	"sh6bench|gcc|-DBENCH=1 -DSYS_MULTI_THREAD=1|shbench/sh6bench-new.c|-lpthread"
	"sh8bench|gcc|-DBENCH=1 -DSYS_MULTI_THREAD=1|shbench/sh8bench-new.c|-lpthread"
)

# ---------------------------------------------------------------- options
ROUNDS=5
WARMUP=0
ONLY=""
INSTALL=1
BUILD_SRC=""
BIN=""

usage() {
	sed -n '7,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	echo "Programs:$(for p in "${PROGRAMS[@]}"; do printf ' %s' "${p%%|*}"; done)"
}

die() {
	echo "public.sh: error: $*" >&2
	exit 1
}

note() {
	echo "public.sh: $*" >&2
}

need_arg() { # need_arg OPTION COUNT_LEFT
	[ "$2" -ge 2 ] || die "$1 needs a value"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--rounds | --runs) need_arg "$1" $# && ROUNDS=$2 && shift ;;
	--rounds=* | --runs=*) ROUNDS=${1#*=} ;;
	--warmup) need_arg "$1" $# && WARMUP=$2 && shift ;;
	--warmup=*) WARMUP=${1#*=} ;;
	--only) need_arg "$1" $# && ONLY=$2 && shift ;;
	--only=*) ONLY=${1#*=} ;;
	--build) need_arg "$1" $# && BUILD_SRC=$2 && shift ;;
	--build=*) BUILD_SRC=${1#*=} ;;
	--no-install) INSTALL=0 ;;
	-h | --help)
		usage
		exit 0
		;;
	-*) die "unknown option '$1' (see --help)" ;;
	*)
		[ -z "$BIN" ] || die "one PATH only (see --help)"
		BIN=$1
		;;
	esac
	shift
done
[ -n "$BIN" ] || die "no PATH given (see --help)"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ "$WARMUP" =~ ^[0-9]+$ ]] || die "--warmup must be a non-negative integer"
[[ "$PROCS" =~ ^[1-9][0-9]*$ ]] || die "PROCS must be a positive integer"

# ---------------------------------------------------------------- dependencies
PACKAGES=(meson ninja-build gcc g++ time libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 python3)
# shellcheck source=bench/peers.sh
. "$ROOT/bench/peers.sh"
install_packages "${PACKAGES[@]}"
for tool in gcc g++ timeout; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (apt-get install gcc g++ coreutils)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3) || die "python3 not found"; fi

# ---------------------------------------------------------------- --build SRC PATH
if [ -n "$BUILD_SRC" ]; then
	SRC=$(cd "$BUILD_SRC" 2>/dev/null && pwd) || die "--build: $BUILD_SRC is not a folder"
	[ -f "$SRC/bench/CMakeLists.txt" ] || die "--build: $SRC is not a mimalloc-bench checkout (no bench/CMakeLists.txt)"
	mkdir -p "$BIN/inputs" "$BIN/logs" || die "--build: cannot make $BIN"
	BIN=$(cd "$BIN" && pwd)
	case "$BIN/" in
	"$ROOT"/*) die "PATH $BIN is inside the repository; build the programs outside it" ;;
	esac
	info="$BIN/BUILD-INFO.txt"
	{
		echo "mimalloc-bench: $SRC"
		echo "commit: $(git -C "$SRC" log -1 --format='%H (%cs)' 2>/dev/null || echo unknown)"
		echo "gcc: $(gcc --version | head -n1)"
		echo "g++: $(g++ --version | head -n1)"
		echo "built by: bench/public.sh --build, on $(date -u +%FT%TZ)"
	} >"$info"
	built=() missing=()
	for b in "${BUILDS[@]}"; do
		IFS='|' read -r name cc flags srcs libs <<<"$b"
		read -r -a srcv <<<"$srcs"
		if [ ! -f "$SRC/bench/${srcv[0]}" ]; then
			missing+=("$name (no bench/${srcv[0]})")
			echo "skipped $name: no bench/${srcv[0]}" >>"$info"
			continue
		fi
		warn=$C_WARN
		[ "$cc" = g++ ] && warn="-w -std=c++17"
		read -r -a flagv <<<"$warn $flags"
		read -r -a libv <<<"$libs"
		cmd=("$cc" -O2 "${flagv[@]}" -o "$BIN/$name" "${srcv[@]}" "${libv[@]}")
		echo "(cd $SRC/bench && ${cmd[*]})" >>"$info"
		if ! (cd "$SRC/bench" && "${cmd[@]}") >"$BIN/logs/$name.build.log" 2>&1; then
			tail -n 20 "$BIN/logs/$name.build.log" >&2
			die "--build: $name did not compile (log above; all of it in $BIN/logs/$name.build.log)"
		fi
		built+=("$name")
	done
	cp "$SRC/bench/espresso/largest.espresso" "$BIN/inputs/largest.espresso"
	cp "$SRC/bench/barnes/input" "$BIN/inputs/barnes.input"
	note "built in $BIN: ${built[*]}"
	for m in "${missing[@]+"${missing[@]}"}"; do
		note "not built: $m"
	done
	note "now: bench/public.sh $BIN"
	exit 0
fi

# ---------------------------------------------------------------- the programs to run
BIN=$(cd "$BIN" 2>/dev/null && pwd) || die "PATH $BIN is not a folder"
if [ -f "$BIN/bench/CMakeLists.txt" ]; then
	die "$BIN is a mimalloc-bench checkout; build its programs first: bench/public.sh --build $BIN $BIN/out-public"
fi
select_named "$ONLY" program "${PROGRAMS[@]}"

# expand WORDS -> the words with @IN@, @P@ and @P2@ replaced, one a line
expand() {
	local word
	local -a words
	read -r -a words <<<"$1"
	for word in "${words[@]}"; do
		word=${word//@IN@/$BIN/inputs}
		word=${word//@P2@/$((PROCS * 2))}
		word=${word//@P@/$PROCS}
		printf '%s\n' "$word"
	done
}

SKIPPED=()
READY=()
SPEC_ROWS=()
for p in "${SELECTED[@]}"; do
	IFS='|' read -r name score cmd stdin verify <<<"$p"
	prog=${cmd%% *}
	if [ ! -x "$BIN/$prog" ]; then
		note "$name: $BIN/$prog not built, skipping it"
		SKIPPED+=("program $name: $prog is not in $BIN")
		continue
	fi
	if [ -n "$stdin" ] && [ ! -f "$(expand "$stdin")" ]; then
		note "$name: its input $(expand "$stdin") is missing, skipping it"
		SKIPPED+=("program $name: no input $(expand "$stdin")")
		continue
	fi
	READY+=("$p")
	SPEC_ROWS+=("$name	$score	$(expand "$cmd" | paste -sd' ' -)${stdin:+ < $(expand "$stdin")}")
done
[ ${#READY[@]} -gt 0 ] || die "no program to run in $BIN (build them with --build SRC $BIN)"

# ---------------------------------------------------------------- slubmalloc and the peers
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/slub-public.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
mkdir -p "$TMPD/cwd"
set_build_dir
# the commit being measured (taken now: others may commit while the runs go on)
GIT_COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
GIT_SHORT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=""
# (changes under bench/results are this script's own output, not the code measured)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- . ':!bench/results' 2>/dev/null)" ]; then
	GIT_COMMIT+=" (uncommitted changes)"
	DIRTY=-dirty
fi
if [ -z "${SLUBMALLOC_LIB:-}" ]; then
	for tool in meson ninja; do
		command -v "$tool" >/dev/null 2>&1 ||
			die "meson and ninja are needed to build slubmalloc (apt-get install meson ninja-build), or set SLUBMALLOC_LIB"
	done
	build_release preload/libslubmalloc.so
fi
if [ -n "${BASE_LIB:-}" ]; then # an A/B against another build, in the same rounds
	[ -f "$BASE_LIB" ] || die "BASE_LIB=$BASE_LIB does not exist"
	ALLOCATORS+=(base)
	LIB[base]=$BASE_LIB
fi
locate_allocators
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
UPTIME_START=$(uptime | sed 's/^ *//')

# ---------------------------------------------------------------- output paths
STAMP="public-$(date +%F)-$(uname -n)-$GIT_SHORT$DIRTY"
[ -n "$ONLY" ] && STAMP+="-only"
[ "$ROUNDS $WARMUP" != "5 0" ] && STAMP+="-custom"
mkdir -p "bench/results/$STAMP" # one folder a run
REPORT="bench/results/$STAMP/report.md"
CSV="bench/results/$STAMP/results.csv"
rm -f "$REPORT" "$CSV"
echo "round,order,program,allocator,status,wall_s,user_s,sys_s,maxrss_kib,figure,stdout_md5" >"$TMPD/raw.csv"
: >"$TMPD/loads.tsv"
printf '%s\n' "${SPEC_ROWS[@]}" >"$TMPD/spec.tsv"

elapsed() { # elapsed -> "3m07s" since the start
	local s=$(($(date +%s) - START_EPOCH))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

usec() { # usec EPOCHREALTIME -> microseconds
	local s=${1%[.,]*} f=${1#*[.,]}
	echo $((s * 1000000 + 10#$f))
}

# run_one PROGRAM-SPEC ALLOCATOR ROUND ORDER: one run; appends a line to raw.csv and sets
# RUN_STATUS and RUN_SHOW (the run's score, for the progress line).
run_one() {
	local name score cmd stdin verify a=$2 r=$3 k=$4
	IFS='|' read -r name score cmd stdin verify <<<"$1"
	local -a argv eargs
	mapfile -t argv < <(expand "$cmd")
	argv[0]=$BIN/${argv[0]}
	local in=/dev/null
	[ -n "$stdin" ] && in=$(expand "$stdin")
	if [ "${LIB[$a]}" = none ]; then eargs=(-u LD_PRELOAD); else eargs=("LD_PRELOAD=${LIB[$a]}"); fi
	local rc=0 t0 t1 status=ok wall user sys rss figure=NA md5=NA line
	rm -f "$TMPD/time"
	t0=$EPOCHREALTIME
	(cd "$TMPD/cwd" && /usr/bin/time -f '%M %U %S' -o "$TMPD/time" \
		timeout -k 5 "$RUN_LIMIT" env "${eargs[@]}" "${argv[@]}") \
		<"$in" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	t1=$EPOCHREALTIME
	wall=$(awk -v d=$(($(usec "$t1") - $(usec "$t0"))) 'BEGIN { printf "%.6f", d / 1e6 }')
	line=$(tail -n1 "$TMPD/time" 2>/dev/null || true)
	read -r rss user sys <<<"$line"
	[[ "${rss:-}" =~ ^[0-9]+$ ]] || rss=NA user=NA sys=NA
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		status="timeout${RUN_LIMIT}s"
	elif grep -q '^Command terminated by signal' "$TMPD/time" 2>/dev/null; then
		status="signal$(sed -n 's/^Command terminated by signal \([0-9]*\).*/\1/p' "$TMPD/time" | head -n1)"
	elif [ "$rc" -gt 128 ]; then
		status="signal$((rc - 128))"
	elif [ "$rc" != 0 ]; then
		status="exit$rc"
	fi
	if [[ "$score" == rate:* ]]; then
		local re=${score#rate:*:}
		figure=$(cat "$TMPD/out" "$TMPD/err" | grep -m1 -oE "$re" | grep -m1 -oE '[0-9]+(\.[0-9]+)?' || true)
		if [ -z "$figure" ]; then
			[ "$status" = ok ] && status=nofigure
			figure=NA
		fi
	fi
	[ "$verify" = stdout ] && md5=$(md5sum <"$TMPD/out" | cut -d' ' -f1)
	if [ "$status" != ok ]; then
		progress_break
		note "$name under $a, round $r, failed ($status): $(tail -n3 "$TMPD/err" | tr '\n' ' ')"
	fi
	printf '%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$r" "$k" "$name" "$a" "$status" "$wall" \
		"$user" "$sys" "$rss" "$figure" "$md5" >>"$TMPD/raw.csv"
	RUN_STATUS=$status
	if [ "$figure" != NA ]; then RUN_SHOW=$figure; else RUN_SHOW=$(printf '%.2fs' "$wall"); fi
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

# ---------------------------------------------------------------- runs
NP=${#READY[@]}
note "$NP program(s) x $NA allocators x ($WARMUP warm-up + $ROUNDS measured) rounds, PROCS=$PROCS, programs in $BIN"
note "load at start: $UPTIME_START"
FAILED=0
total=$((WARMUP + ROUNDS))
for ((r = 0; r < total; r++)); do
	rec=$((r - WARMUP + 1))
	((rec < 0)) && rec=0 # warm-up rounds are recorded as round 0 and left out of the medians
	printf '%d\t%s\n' "$rec" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$TMPD/loads.tsv"
	rstart=$(date +%s)
	for ((pi = 0; pi < NP; pi++)); do
		p=${READY[$pi]}
		shown=()
		for ((k = 0; k < NA; k++)); do
			a=${AVAIL[$(((k + r + pi) % NA))]}
			progress "round $((r + 1))/$total: ${p%%|*} ($a) ... $(elapsed)"
			run_one "$p" "$a" "$rec" "$k"
			[ "$RUN_STATUS" = ok ] || FAILED=$((FAILED + 1))
			shown+=("$a $RUN_SHOW")
		done
		progress_break
		note "  round $((r + 1))/$total ${p%%|*}: $(printf '%s, ' "${shown[@]}" | sed 's/, $//')"
	done
	note "round $((r + 1))/$total done in $(($(date +%s) - rstart))s ($(elapsed) elapsed, load $(cut -d' ' -f1-3 /proc/loadavg))"
done
UPTIME_END=$(uptime | sed 's/^ *//')
cp "$TMPD/raw.csv" "$CSV"

# ---------------------------------------------------------------- environment
{
	env_md_machine "$GIT_COMMIT" "$LOAD_START" libc6 libjemalloc2 libmimalloc2.0 \
		libtcmalloc-minimal4 gcc-12 g++-12 time
	echo "- uptime at start: \`$UPTIME_START\`"
	echo "- uptime at end: \`$UPTIME_END\`"
	echo "- rounds: $WARMUP warm-up + $ROUNDS measured; round r runs every program under every allocator, the allocators of program p in the order rotated by r + p; each run is \`/usr/bin/time -f '%M %U %S' timeout $RUN_LIMIT env LD_PRELOAD=LIB PROGRAM ARGS\`, its wall time taken around it (bash EPOCHREALTIME), in a scratch folder, stdin /dev/null unless given"
	echo "- PROCS (bench.sh's \$procs): $PROCS"
	echo "- programs: $BIN"
	if [ -f "$BIN/BUILD-INFO.txt" ]; then
		sed -n 's/^commit: /- mimalloc-bench commit: /p; s/^gcc: /- built with: /p' "$BIN/BUILD-INFO.txt"
		echo "- built by \`bench/public.sh --build\` (gcc/g++ -O2, the defines of mimalloc-bench's bench/CMakeLists.txt; the commands are in PATH/BUILD-INFO.txt)"
	else
		echo "- mimalloc-bench commit: unknown (PATH has no BUILD-INFO.txt)"
	fi
	env_md_allocators
} >"$TMPD/env.md"

# ---------------------------------------------------------------- report
cat >"$TMPD/report.py" <<'PYEOF'
"""public.sh's report: medians per (program, allocator), slubmalloc's ratio to the best peer."""
import csv
import math
import statistics
import sys

from mdtable import md_table  # bench/mdtable.py

raw_path, spec_path, env_path, loads_path, report_path, csv_name, allocs = sys.argv[1:8]
allocs = allocs.split()
peers = [a for a in allocs if a not in ("slubmalloc", "base")]  # base: BASE_LIB

spec = []  # (name, kind, unit, command)
for line in open(spec_path):
    name, score, command = line.rstrip("\n").split("\t")
    if score.startswith("rate:"):
        spec.append((name, "rate", score.split(":")[1], command))
    else:
        spec.append((name, "time", "s", command))

runs = {}
for row in csv.DictReader(open(raw_path)):
    if int(row["round"]) == 0:
        continue  # warm-up
    runs.setdefault((row["program"], row["allocator"]), []).append(row)

# cfrac's output must be glibc's (or the first allocator's without glibc), in every run
ref_alloc = "glibc" if "glibc" in allocs else allocs[0]
for name, _, _, _ in spec:
    ref = [r["stdout_md5"] for r in runs.get((name, ref_alloc), []) if r["status"] == "ok"]
    if not ref or ref[0] == "NA":
        continue
    ref = statistics.mode(ref)
    for a in allocs:
        for r in runs.get((name, a), []):
            if r["status"] == "ok" and r["stdout_md5"] != ref:
                r["status"] = "wrongoutput"


def num(v):
    return None if v in ("NA", "") else float(v)


stats = {}
for name, kind, unit, _ in spec:
    for a in allocs:
        rs = runs.get((name, a), [])
        ok = [r for r in rs if r["status"] == "ok"]
        vals = [num(r["figure"] if kind == "rate" else r["wall_s"]) for r in ok]
        vals = [v for v in vals if v is not None]
        rss = [num(r["maxrss_kib"]) for r in ok if num(r["maxrss_kib"]) is not None]
        cpu = [num(r["user_s"]) + num(r["sys_s"]) for r in ok
               if num(r["user_s"]) is not None and num(r["sys_s"]) is not None]
        bad = sorted({r["status"] for r in rs if r["status"] != "ok"})
        s = dict(n=len(rs), ok=len(ok), bad=bad,
                 med=statistics.median(vals) if vals else None,
                 spread=(max(vals) - min(vals)) / statistics.median(vals) * 100
                 if len(vals) > 1 and statistics.median(vals) else 0.0,
                 rss=statistics.median(rss) if rss else None,
                 cpu=statistics.median(cpu) if cpu else None)
        stats[(name, a)] = s


def fmt(v, kind):
    if v is None:
        return "n/a"
    if kind == "time":
        return "%.3f" % v
    return "%.4g" % v if v < 1000 else "{:,.0f}".format(v)


# Programs whose timed part calls the allocator almost never, as --build compiles them (g++ 12,
# -O2): the compiler drops the new[]/delete[] pair and the dead writes of cache-scratch's and
# cache-thrash's workers (allocation DCE), and barnes makes 20 allocations in all. Their rows
# measure the host's noise; a second geomean leaves them out
# (bench/results/studies/idle-rows-2026-12-07-vm-b401550.md).
IDLE = ("barnes", "cache-scratch1", "cache-scratchN", "cache-thrash1", "cache-thrashN")
busy_ratios = []
rows, rss_rows, ratios, rss_ratios, above, fastest = [], [], [], [], [], {}
cpu_rows, cpu_ratios = [], []
base_ratios = []  # (program, slubmalloc/base), above 1 slower: BASE_LIB's A/B
for name, kind, unit, _ in spec:
    s_slub = stats.get((name, "slubmalloc"))
    cells = [name, ("time (s)" if kind == "time" else unit) + (", lower" if kind == "time" else ", higher")]
    for a in allocs:
        s = stats[(name, a)]
        c = fmt(s["med"], kind)
        if s["med"] is not None and s["spread"] >= 10:
            c += " ±%.0f%%" % (s["spread"] / 2)
        if s["bad"]:
            c += " (%d/%d ok: %s)" % (s["ok"], s["n"], ",".join(s["bad"]))
        cells.append(c)
    good = [a for a in peers if stats[(name, a)]["med"] is not None]
    ratio = best = None
    if good and s_slub and s_slub["med"]:
        if kind == "time":
            best = min(good, key=lambda a: stats[(name, a)]["med"])
            ratio = s_slub["med"] / stats[(name, best)]["med"]
        else:
            best = max(good, key=lambda a: stats[(name, a)]["med"])
            ratio = stats[(name, best)]["med"] / s_slub["med"]
        ratios.append(ratio)
        if name not in IDLE:
            busy_ratios.append(ratio)
        if round(ratio, 2) > 1.0:
            above.append((ratio, name, best))
    s_base = stats.get((name, "base"))
    if s_base and s_base["med"] and s_slub and s_slub["med"]:
        base_ratios.append((name, s_slub["med"] / s_base["med"] if kind == "time"
                            else s_base["med"] / s_slub["med"]))
    everyone = [a for a in allocs if a != "base" and stats[(name, a)]["med"] is not None]
    if everyone:
        pick = min if kind == "time" else max
        f = pick(everyone, key=lambda a: stats[(name, a)]["med"])
        fastest[f] = fastest.get(f, 0) + 1
    cells += [best or "n/a", "%.3f" % ratio if ratio is not None else "n/a"]
    rows.append(cells)

    rcells = [name]
    for a in allocs:
        v = stats[(name, a)]["rss"]
        rcells.append("%.1f" % (v / 1024) if v is not None else "n/a")
    rgood = [a for a in peers if stats[(name, a)]["rss"]]
    rratio = None
    if rgood and s_slub and s_slub["rss"]:
        low = min(rgood, key=lambda a: stats[(name, a)]["rss"])
        rratio = s_slub["rss"] / stats[(name, low)]["rss"]
        rss_ratios.append(rratio)
        rcells += [low, "%.3f" % rratio]
    else:
        rcells += ["n/a", "n/a"]
    rss_rows.append(rcells)

    if kind == "time":
        ccells = [name] + ["%.2f" % stats[(name, a)]["cpu"] if stats[(name, a)]["cpu"] is not None
                           else "n/a" for a in allocs]
        cgood = [a for a in peers if stats[(name, a)]["cpu"]]
        if cgood and s_slub and s_slub["cpu"]:
            low = min(cgood, key=lambda a: stats[(name, a)]["cpu"])
            cratio = s_slub["cpu"] / stats[(name, low)]["cpu"]
            cpu_ratios.append(cratio)
            ccells += [low, "%.3f" % cratio]
        else:
            ccells += ["n/a", "n/a"]
        cpu_rows.append(ccells)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


gm, rgm, cgm = geomean(ratios), geomean(rss_ratios), geomean(cpu_ratios)
bgm = geomean(busy_ratios)
idle_run = [n for n in IDLE if any(n == x[0] for x in spec)]
busy_note = "over the %d programs that allocate in their timed part%s: %s" % (
    len(busy_ratios), " (not %s)" % ", ".join(idle_run) if idle_run else "",
    "%.3f" % bgm if bgm is not None else "n/a")
header = ["program", "score"] + allocs + ["best peer", "slubmalloc/best"]
table = md_table(header, rows, set(range(2, len(header))) - {len(header) - 2})
rss_header = ["program"] + allocs + ["lowest peer", "slubmalloc/lowest"]
rss_table = md_table(rss_header, rss_rows, set(range(1, len(rss_header))) - {len(rss_header) - 2})
above.sort(reverse=True)
summary = "public: slubmalloc/best peer geomean %s; %s; above 1.00: %s" % (
    "%.3f" % gm if gm is not None else "n/a", busy_note,
    ", ".join("%s %.2f (%s)" % (n, r, b) for r, n, b in above) or "none")
base_line = "public: slubmalloc/base geomean %.3f over %d programs: %s" % (
    geomean([r for _, r in base_ratios]), len(base_ratios),
    ", ".join("%s %.3f" % nr for nr in base_ratios)) if base_ratios else None

loads = [line.rstrip("\n").split("\t") for line in open(loads_path)]
with open(report_path, "w") as out:
    out.write("# mimalloc-bench's programs under each allocator (bench/public.sh)\n\n")
    out.write("Medians of %d interleaved rounds per program and allocator. " % len(
        [x for x in loads if x[0] != "0"]))
    out.write("Time programs: the median wall time in seconds, lower is better. ")
    out.write("Rate programs: the median of the figure the program prints, higher is better. ")
    out.write("±: half the spread (max - min) / median, shown when the spread is 10% or more. ")
    out.write("slubmalloc/best: slubmalloc's median over the best peer's for times, "
              "the best peer's over slubmalloc's for rates, so above 1 slubmalloc is slower "
              "(peers: %s).\n\n" % ", ".join(peers))
    out.write(table + "\n\n")
    out.write("Geometric mean of slubmalloc/best over %d programs: %s; %s. Fastest: %s.\n\n" % (
        len(ratios), "%.3f" % gm if gm is not None else "n/a", busy_note,
        ", ".join("%s %d" % (a, fastest.get(a, 0)) for a in allocs if a != "base")))
    if base_line:
        out.write("A/B against BASE_LIB (the allocator base), slubmalloc's median over base's "
                  "(rates inverted), above 1 slower:\n\n%s.\n\n" % base_line)
    out.write("## CPU time\n\nThe time programs' median CPU time in seconds (user + system, "
              "all threads, from `/usr/bin/time`); on a loaded host it leaves out the time a "
              "program waited for a CPU. It is shown beside the score, not scored.\n\n")
    cpu_header = ["program"] + allocs + ["lowest peer", "slubmalloc/lowest"]
    out.write(md_table(cpu_header, cpu_rows,
                       set(range(1, len(cpu_header))) - {len(cpu_header) - 2}) + "\n\n")
    out.write("Geometric mean of slubmalloc/lowest CPU time: %s.\n\n" % (
        "%.3f" % cgm if cgm is not None else "n/a"))
    out.write("## Peak RSS\n\nMedian peak RSS in MiB (`/usr/bin/time -f %M`) of the runs above; "
              "slubmalloc/lowest: slubmalloc's over the lowest peer's.\n\n")
    out.write(rss_table + "\n\n")
    out.write("Geometric mean of slubmalloc/lowest peak RSS: %s.\n\n" % (
        "%.3f" % rgm if rgm is not None else "n/a"))
    out.write("## Commands\n\n")
    out.write(md_table(["program", "command"],
                       [[n, "`%s`" % c] for n, _, _, c in spec], set()) + "\n\n")
    out.write("## Load\n\nThe 1/5/15-minute load average as each round began (round 0: warm-up):\n\n")
    out.write(md_table(["round", "load average"], loads, {0}) + "\n\n")
    out.write("## Environment\n\n")
    out.write(open(env_path).read())
    out.write("- the runs: [%s](%s)\n\n" % (csv_name, csv_name))
    out.write(summary + "\n")

print(table)
print()
print(md_table(["program (CPU s)"] + allocs + ["lowest peer", "slubmalloc/lowest"], cpu_rows,
               set(range(1, len(allocs) + 3)) - {len(allocs) + 1}))
print()
print(rss_table)
print()
if base_line:
    print(base_line)
print(summary)
PYEOF
cp "$ROOT/bench/mdtable.py" "$TMPD/mdtable.py"
"$PY" "$TMPD/report.py" "$TMPD/raw.csv" "$TMPD/spec.tsv" "$TMPD/env.md" "$TMPD/loads.tsv" \
	"$REPORT" "$(basename "$CSV")" "${AVAIL[*]}" >"$TMPD/table.txt" || die "the report step failed"
echo
sed '$d' "$TMPD/table.txt"
echo "report: $REPORT, runs: $CSV ($(elapsed) total, $FAILED failed run(s))"
tail -n1 "$TMPD/table.txt"
