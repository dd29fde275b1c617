#!/usr/bin/env bash
# compare.sh: builds slubmalloc and the bench programs (release), runs every workload under
# glibc, jemalloc, mimalloc, tcmalloc and slubmalloc (LD_PRELOAD, round-robin rounds with a
# rotating order), then writes bench/results/<date>-<host>.md (median metric, ratio to
# slubmalloc, peak RSS, hyperfine wall time) plus the hyperfine JSON files, and prints the table.
#
# Usage: bench/compare.sh [--quick] [--only NAME[,NAME...]] [--rounds N] [--runs N] [--no-install]
# Environment overrides: SLUBMALLOC_LIB, JEMALLOC_LIB, MIMALLOC_LIB, TCMALLOC_LIB (library paths),
# BUILD_DIR (default: build).
set -euo pipefail
unset LD_PRELOAD

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build}
START_EPOCH=$(date +%s)

# ---------------------------------------------------------------- workloads
# name | program (relative to the build dir) and arguments | metric printed in its RESULT line
WORKLOADS=(
	"st_loop|bench/st_churn loop 60000000|ns_per_op"
	"st_churn|bench/st_churn churn 40000000|ns_per_op"
	"xthread|bench/xthread 12000000|ns_per_obj"
)
ALLOCATORS=(glibc jemalloc mimalloc tcmalloc slubmalloc)

# ---------------------------------------------------------------- options
ROUNDS=7
HF_RUNS=10
HF_WARMUP=2
MODE=full
ONLY=""
INSTALL=1

usage() {
	sed -n '7,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	echo "Workloads:$(for w in "${WORKLOADS[@]}"; do printf ' %s' "${w%%|*}"; done)"
}

die() {
	echo "compare.sh: error: $*" >&2
	exit 1
}

note() {
	echo "compare.sh: $*" >&2
}

ROUNDS_SET="" RUNS_SET=""
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) MODE=quick ;;
	--only)
		[ $# -ge 2 ] || die "--only needs a workload name"
		ONLY=$2
		shift
		;;
	--only=*) ONLY=${1#--only=} ;;
	--rounds)
		[ $# -ge 2 ] || die "--rounds needs a number"
		ROUNDS_SET=$2
		shift
		;;
	--runs)
		[ $# -ge 2 ] || die "--runs needs a number"
		RUNS_SET=$2
		shift
		;;
	--no-install) INSTALL=0 ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
	shift
done
if [ "$MODE" = quick ]; then
	ROUNDS=3
	HF_RUNS=3
fi
[ -n "$ROUNDS_SET" ] && ROUNDS=$ROUNDS_SET
[ -n "$RUNS_SET" ] && HF_RUNS=$RUNS_SET
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ "$HF_RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"

SELECTED=()
if [ -n "$ONLY" ]; then
	IFS=',' read -r -a wanted <<<"$ONLY"
	for name in "${wanted[@]}"; do
		found=""
		for w in "${WORKLOADS[@]}"; do
			[ "${w%%|*}" = "$name" ] && found=$w
		done
		[ -n "$found" ] || die "unknown workload '$name' for --only ($(usage | tail -n1))"
		SELECTED+=("$found")
	done
else
	SELECTED=("${WORKLOADS[@]}")
fi

# ---------------------------------------------------------------- dependencies
PACKAGES=(hyperfine meson ninja-build gcc libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev
	time python3 python3-matplotlib)
if [ "$INSTALL" = 1 ] && command -v dpkg-query >/dev/null 2>&1; then
	missing=()
	for p in "${PACKAGES[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	if [ ${#missing[@]} -gt 0 ]; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
			note "installing missing packages: ${missing[*]}"
			apt-get update -qq >/dev/null || die "apt-get update failed"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
				die "apt-get install ${missing[*]} failed"
		else
			note "missing packages (not root, not installing): ${missing[*]}"
		fi
	fi
fi
for tool in hyperfine meson ninja cc; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (apt-get install hyperfine meson ninja-build gcc)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3) || die "python3 not found"; fi

# ---------------------------------------------------------------- build
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/slub-compare.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT

note "building ($BUILD_DIR, release) ..."
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
	if ! meson setup "$BUILD_DIR" --buildtype=release >"$TMPD/build.log" 2>&1; then
		tail -n 30 "$TMPD/build.log" >&2
		die "meson setup $BUILD_DIR failed (log above)"
	fi
fi
if ! ninja -C "$BUILD_DIR" >>"$TMPD/build.log" 2>&1; then
	tail -n 30 "$TMPD/build.log" >&2
	die "ninja -C $BUILD_DIR failed (log above)"
fi
BUILDTYPE=$(meson introspect --buildoptions "$BUILD_DIR" 2>/dev/null |
	"$PY" -c 'import json,sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"), "unknown"))' ||
	echo unknown)
[ "$BUILDTYPE" = release ] ||
	die "$BUILD_DIR is configured with buildtype=$BUILDTYPE; benchmarks need a release build (meson configure $BUILD_DIR -Dbuildtype=release, or BUILD_DIR=build-release)"
for w in "${SELECTED[@]}"; do
	cmd=${w#*|}
	cmd=${cmd%|*}
	prog=${cmd%% *}
	[ -x "$BUILD_DIR/$prog" ] || die "benchmark program $BUILD_DIR/$prog was not built"
done

# ---------------------------------------------------------------- allocator libraries
MULTIARCH=$(cc -print-multiarch 2>/dev/null || true)
LIBDIRS=("/usr/lib/${MULTIARCH:-x86_64-linux-gnu}" /usr/lib64 /usr/lib /usr/local/lib)

find_lib() { # find_lib NAME... -> first existing path
	local n d
	for n in "$@"; do
		for d in "${LIBDIRS[@]}"; do
			if [ -e "$d/$n" ]; then
				echo "$d/$n"
				return 0
			fi
		done
	done
	return 1
}

declare -A LIB
LIB[glibc]=none
LIB[jemalloc]=${JEMALLOC_LIB:-$(find_lib libjemalloc.so.2 libjemalloc.so || echo "")}
LIB[mimalloc]=${MIMALLOC_LIB:-$(find_lib libmimalloc.so.2 libmimalloc.so || echo "")}
LIB[tcmalloc]=${TCMALLOC_LIB:-$(find_lib libtcmalloc_minimal.so.4 libtcmalloc.so.4 || echo "")}
SLUB_DEFAULT="$ROOT/$BUILD_DIR/preload/libslubmalloc.so"
LIB[slubmalloc]=${SLUBMALLOC_LIB:-$SLUB_DEFAULT}
if [ ! -f "${LIB[slubmalloc]}" ]; then
	if [ -n "${SLUBMALLOC_LIB:-}" ]; then
		die "SLUBMALLOC_LIB=${SLUBMALLOC_LIB} does not exist"
	fi
	die "slubmalloc library not found at $SLUB_DEFAULT after the build (is preload/meson.build building it?); set SLUBMALLOC_LIB=/path/to/lib.so to override"
fi

# Checks that LD_PRELOAD of $1 really maps the library (ld.so only warns when it cannot).
preload_works() {
	local real
	real=$(readlink -f "$1")
	local maps
	maps=$(env LD_PRELOAD="$1" cat /proc/self/maps 2>/dev/null) || return 1
	[[ "$maps" == *"$real"* ]]
}

AVAIL=()
SKIPPED=()
for a in "${ALLOCATORS[@]}"; do
	lib=${LIB[$a]}
	if [ "$lib" = none ]; then
		AVAIL+=("$a")
	elif [ -z "$lib" ] || [ ! -e "$lib" ]; then
		note "$a: library not found${lib:+ ($lib)}, skipping"
		SKIPPED+=("$a: library not found${lib:+ ($lib)}")
	else
		LIB[$a]=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
		if preload_works "${LIB[$a]}"; then
			AVAIL+=("$a")
		elif [ "$a" = slubmalloc ]; then
			die "LD_PRELOAD=${LIB[$a]} does not load or crashes a trivial program (try: LD_PRELOAD=${LIB[$a]} cat /proc/self/maps)"
		else
			note "$a: LD_PRELOAD=${LIB[$a]} does not load, skipping"
			SKIPPED+=("$a: $lib does not preload")
		fi
	fi
done
NA=${#AVAIL[@]}
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- output paths
mkdir -p bench/results
STAMP="$(date +%F)-$(uname -n)"
REPORT="bench/results/$STAMP.md"
RAW="$TMPD/raw.tsv"
: >"$RAW"

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
	[ "$IS_TTY" = 1 ] && echo >&2
	return 0
}

# ---------------------------------------------------------------- runs
NW=${#SELECTED[@]}
wi=0
for w in "${SELECTED[@]}"; do
	IFS='|' read -r wl cmd metric <<<"$w"
	read -r -a argv <<<"$cmd"
	argv[0]="$ROOT/$BUILD_DIR/${argv[0]}"
	cycles_key=cycles_per_${metric#ns_per_}
	wstart=$(date +%s)
	tag="[$((wi + 1))/$NW] $wl"
	failures=0

	for ((r = 0; r < ROUNDS; r++)); do
		for ((k = 0; k < NA; k++)); do
			a=${AVAIL[$(((k + r + wi) % NA))]}
			progress "$tag: round $((r + 1))/$ROUNDS ($a) ..."
			mapfile -t eargs < <(env_args "$a")
			status=ok value=NA cycles=NA rss=NA
			if /usr/bin/time -f %M -o "$TMPD/rss" env "${eargs[@]}" "${argv[@]}" \
				>"$TMPD/out" 2>"$TMPD/err"; then
				line=$(grep -m1 "^RESULT name=$wl " "$TMPD/out" || true)
				value=$(sed -n "s/.* $metric=\([0-9.eE+-]*\).*/\1/p" <<<"$line")
				cycles=$(sed -n "s/.* $cycles_key=\([0-9.eE+-]*\).*/\1/p" <<<"$line")
				[ -n "$value" ] || status=noresult
				value=${value:-NA} cycles=${cycles:-NA}
			else
				status="exit$?"
			fi
			rss=$(tail -n1 "$TMPD/rss" 2>/dev/null | grep -E '^[0-9]+$' || echo NA)
			if [ "$status" != ok ]; then
				failures=$((failures + 1))
				progress_break
				note "$wl under $a failed ($status): $(tail -n3 "$TMPD/err" | tr '\n' ' ')"
			fi
			printf '%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n' "$wl" "$a" "$metric" "$((r + 1))" "$status" "$value" "$cycles" "$rss" >>"$RAW"
		done
	done

	# hyperfine wall time, one command per allocator that passed every round
	progress "$tag: hyperfine ($HF_WARMUP warmup + $HF_RUNS runs x $NA allocators) ..."
	hf_args=()
	for a in "${ALLOCATORS[@]}"; do
		[[ " ${AVAIL[*]} " == *" $a "* ]] || continue
		if awk -F'\t' -v w="$wl" -v a="$a" '$1==w && $2==a && $5!="ok" {bad=1} END {exit !bad}' "$RAW"; then
			continue
		fi
		mapfile -t eargs < <(env_args "$a")
		hf_cmd="env"
		for x in "${eargs[@]}" "${argv[@]}"; do hf_cmd+=" $(printf '%q' "$x")"; done
		hf_args+=(-n "$a" "$hf_cmd")
	done
	HF_JSON="bench/results/$STAMP-$wl.hyperfine.json"
	rm -f "$HF_JSON"
	hf_note="no allocator to time"
	if [ ${#hf_args[@]} -gt 0 ]; then
		if hyperfine -N --style none --warmup "$HF_WARMUP" --runs "$HF_RUNS" \
			--export-json "$HF_JSON" "${hf_args[@]}" >"$TMPD/hf.log" 2>&1; then
			hf_note="hyperfine $HF_RUNS runs"
		else
			hf_note="hyperfine FAILED"
			progress_break
			note "hyperfine for $wl failed: $(tail -n3 "$TMPD/hf.log" | tr '\n' ' ')"
			rm -f "$HF_JSON"
		fi
	fi
	progress ""
	printf '%s: %d rounds x %d allocators, %s, %d failed runs, %ds\n' "$tag" "$ROUNDS" "$NA" \
		"$hf_note" "$failures" "$(($(date +%s) - wstart))" >&2
	wi=$((wi + 1))
done

# ---------------------------------------------------------------- environment header
pkg_versions() {
	dpkg-query -W -f='${Package} ${Version}\n' libc6 libjemalloc2 libmimalloc2.0 \
		libtcmalloc-minimal4 libgoogle-perftools4 gcc-12 hyperfine meson ninja-build 2>/dev/null |
		awk 'NF == 2' | paste -sd, - | sed 's/,/, /g'
}
GIT_COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	GIT_COMMIT+=" (uncommitted changes)"
fi
{
	echo "- date: $(date -u +%FT%TZ)"
	echo "- host: $(uname -n)"
	echo "- git commit: $GIT_COMMIT"
	echo "- CPU: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "- cores: $(nproc) online ($(grep -c '^processor' /proc/cpuinfo) in /proc/cpuinfo)"
	echo "- kernel: $(uname -sr)"
	echo "- load average (1/5/15 min): $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
	echo "- THP enabled: $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)," \
		"defrag: $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null || echo unknown)"
	echo "- packages: $(pkg_versions)"
	echo "- mode: $MODE, $ROUNDS rounds (round-robin, rotating order), hyperfine --warmup $HF_WARMUP --runs $HF_RUNS"
	for a in "${AVAIL[@]}"; do
		if [ "${LIB[$a]}" = none ]; then
			echo "- $a: system malloc (no LD_PRELOAD)"
		else
			extra=""
			[ "$a" = slubmalloc ] && [ -n "${SLUBMALLOC_LIB:-}" ] && extra=" (SLUBMALLOC_LIB override)"
			echo "- $a: LD_PRELOAD=${LIB[$a]}$extra"
		fi
	done
	for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do
		echo "- skipped $s"
	done
	for w in "${SELECTED[@]}"; do
		IFS='|' read -r wl cmd metric <<<"$w"
		echo "- workload $wl: \`$BUILD_DIR/$cmd\`, metric $metric"
	done
} >"$TMPD/env.md"

# ---------------------------------------------------------------- report
"$PY" - "$RAW" "$TMPD/env.md" "$REPORT" "$STAMP" "${ALLOCATORS[*]}" "$ROUNDS" \
	"$(for w in "${SELECTED[@]}"; do printf '%s ' "${w%%|*}"; done)" <<'PYEOF'
"""Aggregates compare.sh raw runs and hyperfine JSON into the markdown report."""
import json
import math
import os
import statistics
import sys

raw_path, env_path, report_path, stamp, allocs, rounds, workloads = sys.argv[1:8]
allocs = allocs.split()
workloads = workloads.split()
rounds = int(rounds)
results_dir = os.path.dirname(report_path)

runs = {}
metrics = {}
for line in open(raw_path):
    wl, alloc, metric, rnd, status, value, cycles, rss = line.rstrip("\n").split("\t")
    runs.setdefault((wl, alloc), []).append((status, value, cycles, rss))
    metrics[wl] = metric


def median_of(vals):
    vals = [float(v) for v in vals if v != "NA"]
    return statistics.median(vals) if vals else None


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


header = ["workload", "allocator", "metric", "median", "cycles", "ratio to slubmalloc",
          "peak RSS KiB", "wall ms (hyperfine)"]
rows = []
ratios = {a: [] for a in allocs}
for wl in workloads:
    hf = {}
    hf_path = os.path.join(results_dir, f"{stamp}-{wl}.hyperfine.json")
    if os.path.exists(hf_path):
        for res in json.load(open(hf_path))["results"]:
            hf[res["command"]] = res
    stats = {}
    for a in allocs:
        r = runs.get((wl, a))
        if not r:
            continue
        ok = [x for x in r if x[0] == "ok"]
        stats[a] = dict(
            n_ok=len(ok), n=len(r),
            med=median_of(x[1] for x in ok),
            cyc=median_of(x[2] for x in ok),
            rss=median_of(x[3] for x in ok),
        )
    base = stats.get("slubmalloc", {}).get("med")
    base_wall = hf.get("slubmalloc", {}).get("mean")
    for a in allocs:
        s = stats.get(a)
        if s is None:
            continue
        metric = metrics[wl]
        if s["n_ok"] < s["n"]:
            med = f"FAILED {s['n'] - s['n_ok']}/{s['n']}"
        else:
            med = fmt(s["med"], ".2f")
        ratio = None
        if base and s["med"] and s["n_ok"] == s["n"]:
            ratio = s["med"] / base
            if a != "slubmalloc":
                ratios[a].append(ratio)
        wall = "n/a"
        if a in hf:
            wall = f"{hf[a]['mean'] * 1e3:.1f} ± {(hf[a].get('stddev') or 0.0) * 1e3:.1f}"
            if base_wall:
                wall += f" ({hf[a]['mean'] / base_wall:.2f}x)"
        rss = "n/a" if s["rss"] is None else str(int(s["rss"]))
        rows.append([wl, a, metric, med, fmt(s["cyc"], ".1f"), fmt(ratio, ".2f"), rss, wall])

widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
right = {3, 4, 5, 6, 7}


def md_row(cells):
    out = []
    for i, c in enumerate(cells):
        out.append(c.rjust(widths[i]) if i in right else c.ljust(widths[i]))
    return "| " + " | ".join(out) + " |"


sep = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2))
                     for i, w in enumerate(widths)) + "|"
table = "\n".join([md_row(header), sep] + [md_row(r) for r in rows])

parts = []
for a in allocs:
    if a == "slubmalloc" or not ratios[a]:
        continue
    g = math.exp(sum(math.log(x) for x in ratios[a]) / len(ratios[a]))
    parts.append(f"{a} {g:.2f}")
summary = ("geomean ratio to slubmalloc over %d workload(s) (>1: slubmalloc faster): %s"
           % (len(workloads), ", ".join(parts) if parts else "n/a"))

with open(report_path, "w") as f:
    f.write(f"# slubmalloc allocator comparison: {stamp}\n\n")
    f.write("## Environment\n\n")
    f.write(open(env_path).read())
    f.write("\n## Results\n\n")
    f.write(f"median = median over {rounds} round(s) of the program's own RESULT figure "
            "(ns per op or per object, lower is better); cycles = median TSC ticks per op; "
            "ratio = allocator median / slubmalloc median (>1: slubmalloc faster); "
            "peak RSS = median of `/usr/bin/time -f %M`; "
            "wall = hyperfine mean ± stddev of the whole process (ratio to slubmalloc).\n\n")
    f.write(table + "\n\n")
    f.write(summary + "\n\n")
    f.write("Hyperfine JSON: " + ", ".join(
        f"`{stamp}-{wl}.hyperfine.json`" for wl in workloads
        if os.path.exists(os.path.join(results_dir, f"{stamp}-{wl}.hyperfine.json"))) + "\n")

print(table)
print(summary)
PYEOF
echo "report: $REPORT ($(($(date +%s) - START_EPOCH))s total)"
