#!/usr/bin/env bash
# compare.sh: builds slubmalloc and the bench programs (release), then runs every workload under
# glibc, jemalloc, mimalloc, tcmalloc and slubmalloc (LD_PRELOAD). Each run is one hyperfine
# run (wall time) wrapped in /usr/bin/time (peak RSS), and the program's RESULT line is kept;
# the allocators are interleaved (rounds of one run each, in a rotating order) after a warm-up
# round, so drift hits all alike. Fixed-duration workloads are scored by their own throughput.
# Writes bench/results/<date>-<host>.md (median time or throughput, ratio to slubmalloc, peak
# RSS and its ratio, the fastest allocator per workload, geometric means, environment), the
# merged hyperfine JSON per workload and a PNG chart of the ratios, and prints the table.
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
	"cxx_stl|time|-|bench/cxx_stl 40|bench/cxx_stl 16|stdout"
	"cxx_larson|time|ms|bench/cxx_larson 2 12000|bench/cxx_larson 2 4000|"
	"xchurn|time|ms|bench/xchurn 8 20 100000|bench/xchurn 8 8 60000|"
	"cxx_large|time|ms|bench/cxx_large 600 20 1|bench/cxx_large 300 20 1|"
	"cxx_large_mt|time|-|bench/cxx_large 600 10 2|bench/cxx_large 300 10 2|"
)
# The real programs (and the C++ programs built with g++'s defaults): their own geometric mean.
REAL_WORKLOADS="real_python real_sort real_cc real_sqlite real_redis cxx_stl cxx_larson"
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
PACKAGES=(hyperfine meson ninja-build gcc g++ libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev
	time python3 python3-matplotlib sqlite3 redis-server redis-tools)
# shellcheck source=bench/peers.sh
. "$ROOT/bench/peers.sh"
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

BENCH_TARGETS=(preload/libslubmalloc.so)
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
mkdir -p bench/results
STAMP="$(date +%F)-$(uname -n)"
[ "$MODE" = quick ] && STAMP+="-quick"
[ -n "$ONLY" ] && STAMP+="-only"
REPORT="bench/results/$STAMP.md"
RAW="$TMPD/raw.tsv"
: >"$RAW"
for w in "${SELECTED[@]}"; do
	rm -f "bench/results/$STAMP-${w%%|*}.hyperfine.json"
done
rm -f "$REPORT" "bench/results/$STAMP.png"

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
cat >"$TMPD/report.py" <<'PYEOF'
"""Aggregates compare.sh runs (raw.tsv + one hyperfine JSON per run) into the report."""
import json
import math
import os
import statistics
import sys

from mdtable import md_table  # bench/mdtable.py, copied next to this file

PEERS_NOTE = "peers = every other allocator, glibc included"


def load(raw_path, spec_path):
    spec = {}
    order = []
    for line in open(spec_path):
        name, score, metric, command = line.rstrip("\n").split("\t")
        spec[name] = dict(score=score, metric=metric, command=command)
        order.append(name)
    runs = {}
    for line in open(raw_path):
        wl, alloc, rnd, status, value, rss, jpath = line.rstrip("\n").split("\t")
        wall = user = system = None
        if jpath != "-" and os.path.exists(jpath):
            res = json.load(open(jpath))["results"][0]
            wall, user, system = res["times"][0], res["user"], res["system"]
        runs.setdefault((wl, alloc), []).append(dict(
            round=int(rnd), status=status, value=None if value == "NA" else float(value),
            rss=None if rss == "NA" else float(rss), wall=wall, user=user, system=system))
    return spec, order, runs


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def stats_for(spec, runs, wl, alloc):
    r = runs.get((wl, alloc))
    if not r:
        return None
    warm = [x for x in r if x["round"] == 0]
    meas = [x for x in r if x["round"] > 0]
    ok = [x for x in meas if x["status"] == "ok"]
    bad_warm = [x for x in warm if x["status"] != "ok"]
    walls = [x["wall"] for x in ok if x["wall"] is not None]
    s = dict(n=len(meas), n_ok=len(ok), warm_status=bad_warm[0]["status"] if bad_warm else "ok",
             wall=med(walls), walls=walls, value=med(x["value"] for x in ok),
             rss=med(x["rss"] for x in ok), user=med(x["user"] for x in ok),
             system=med(x["system"] for x in ok))
    s["mean"] = statistics.mean(walls) if walls else None
    s["sd"] = statistics.stdev(walls) if len(walls) > 1 else 0.0
    s["valid"] = s["n_ok"] == s["n"] and s["n"] > 0 and s["warm_status"] == "ok"
    # the score as a time (lower is better): wall time, or 1/throughput for a rate workload
    if spec[wl]["score"] == "rate":
        s["cost"] = 1.0 / s["value"] if s["value"] else None
    else:
        s["cost"] = s["wall"]
    if not s["valid"]:
        s["cost"] = None
    return s


def workload_summary(spec, runs, wl, allocs):
    """Per workload: stats per allocator, ratios to slubmalloc, fastest, slub vs best peer."""
    st = {a: stats_for(spec, runs, wl, a) for a in allocs}
    st = {a: s for a, s in st.items() if s is not None}
    base = st.get("slubmalloc")
    for a, s in st.items():
        s["ratio"] = (s["cost"] / base["cost"]) if (base and base["cost"] and s["cost"]) else None
        s["rss_ratio"] = (s["rss"] / base["rss"]) if (base and base["valid"] and base["rss"]
                                                      and s["valid"] and s["rss"]) else None
    valid = {a: s for a, s in st.items() if s["cost"]}
    fastest = min(valid, key=lambda a: valid[a]["cost"]) if valid else None
    peers = {a: s for a, s in valid.items() if a != "slubmalloc"}
    best_peer = min(peers, key=lambda a: peers[a]["cost"]) if peers else None
    vs_best = None
    if best_peer and base and base["cost"]:
        vs_best = base["cost"] / peers[best_peer]["cost"]
    rss_peers = {a: s for a, s in st.items() if a != "slubmalloc" and s["valid"] and s["rss"]}
    smallest = min(rss_peers, key=lambda a: rss_peers[a]["rss"]) if rss_peers else None
    rss_vs = None
    if smallest and base and base["valid"] and base["rss"]:
        rss_vs = base["rss"] / rss_peers[smallest]["rss"]
    return dict(stats=st, fastest=fastest, best_peer=best_peer, vs_best=vs_best,
                smallest=smallest, rss_vs=rss_vs)


def fmt_score(spec_wl, s):
    if not s["valid"]:
        if s["warm_status"] != "ok":
            return "FAILED (%s)" % s["warm_status"]
        return "FAILED %d/%d" % (s["n"] - s["n_ok"], s["n"])
    if spec_wl["score"] == "rate":
        v = s["value"]
        return "%.3g M%s" % (v / 1e6, spec_wl["metric"].replace("_per_s", "/s")) if v else "n/a"
    return "%.1f ms" % (s["wall"] * 1e3) if s["wall"] is not None else "n/a"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def one_line(spec, runs, wl, allocs):
    ws = workload_summary(spec, runs, wl, allocs)
    st = ws["stats"]
    failed = sum(s["n"] - s["n_ok"] for s in st.values()) + sum(
        1 for s in st.values() if s["warm_status"] != "ok")
    parts = []
    if ws["fastest"]:
        parts.append("fastest %s (%s)" % (ws["fastest"], fmt_score(spec[wl], st[ws["fastest"]])))
    if ws["vs_best"] is not None:
        parts.append("slubmalloc %.2fx the best peer (%s)" % (ws["vs_best"], ws["best_peer"]))
    if failed:
        parts.append("%d FAILED runs" % failed)
    return "; ".join(parts) if parts else "no valid result"


def chart(png, order, summaries, allocs, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError as e:
        return "no chart (matplotlib: %s)" % e
    others = [a for a in allocs if a != "slubmalloc"]
    colors = {"glibc": "#999999", "jemalloc": "#d95f02", "mimalloc": "#1b9e77",
              "tcmalloc": "#7570b3"}
    fig, axes = plt.subplots(2, 1, figsize=(max(9, 0.75 * len(order) + 3), 9), sharex=True)
    width = 0.8 / max(1, len(others))
    for ax, key, label in ((axes[0], "ratio", "time ratio to slubmalloc (>1: slubmalloc faster)"),
                           (axes[1], "rss_ratio", "peak RSS ratio to slubmalloc (>1: slubmalloc smaller)")):
        for i, a in enumerate(others):
            xs, ys = [], []
            for j, wl in enumerate(order):
                s = summaries[wl]["stats"].get(a)
                if s and s.get(key):
                    xs.append(j + (i - (len(others) - 1) / 2) * width)
                    ys.append(s[key])
            # bars start at 1.0, so a bar above the line is slubmalloc's advantage
            ax.bar(xs, [y - 1.0 for y in ys], width, bottom=1.0, label=a, color=colors.get(a))
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_yscale("log")
        plain = matplotlib.ticker.FuncFormatter(lambda v, _: "%g" % v)
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_ylabel(label, fontsize=9)
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0].legend(ncol=len(others), fontsize=9, loc="upper left")
    axes[1].set_xticks(range(len(order)))
    axes[1].set_xticklabels(order, rotation=35, ha="right", fontsize=9)
    axes[0].set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    return None


def report(raw_path, spec_path, env_path, report_path, stamp, allocs, runs_n, warmup):
    spec, order, runs = load(raw_path, spec_path)
    results_dir = os.path.dirname(report_path)
    summaries = {wl: workload_summary(spec, runs, wl, allocs) for wl in order}

    # merged hyperfine JSON per workload (measured runs, in hyperfine's format)
    json_names = []
    for wl in order:
        results = []
        for a in allocs:
            r = [x for x in runs.get((wl, a), []) if x["round"] > 0 and x["wall"] is not None]
            if not r:
                continue
            times = [x["wall"] for x in r]
            results.append(dict(
                command=a, mean=statistics.mean(times),
                stddev=statistics.stdev(times) if len(times) > 1 else None,
                median=statistics.median(times),
                user=statistics.mean(x["user"] for x in r),
                system=statistics.mean(x["system"] for x in r),
                min=min(times), max=max(times), times=times,
                exit_codes=[0 if x["status"] == "ok" else 1 for x in r],
                peak_rss_kib=[x["rss"] for x in r],
                metric={spec[wl]["metric"]: [x["value"] for x in r]},
                status=[x["status"] for x in r]))
        if results:
            name = f"{stamp}-{wl}.hyperfine.json"
            with open(os.path.join(results_dir, name), "w") as f:
                json.dump(dict(results=results, workload=wl, command=spec[wl]["command"],
                               score=spec[wl]["score"]), f, indent=1)
            json_names.append(name)

    header = ["workload", "allocator", "median", "ratio to slubmalloc", "peak RSS KiB",
              "RSS ratio", "program metric", "wall ms (mean ± sd)", "user+sys s"]
    rows = []
    for wl in order:
        ws = summaries[wl]
        for a in allocs:
            s = ws["stats"].get(a)
            if s is None:
                continue
            metric = spec[wl]["metric"]
            mval = "-" if metric == "-" or s["value"] is None else "%s %s" % (
                format(s["value"], ".4g"), metric)
            wall = "n/a" if s["mean"] is None else "%.1f ± %.1f" % (s["mean"] * 1e3, s["sd"] * 1e3)
            cpu = "n/a" if s["user"] is None else "%.2f" % (s["user"] + s["system"])
            mark = " *" if a == ws["fastest"] else ""
            rows.append([wl, a + mark, fmt_score(spec[wl], s),
                         "n/a" if s["ratio"] is None else "%.2f" % s["ratio"],
                         "n/a" if s["rss"] is None else str(int(s["rss"])),
                         "n/a" if s["rss_ratio"] is None else "%.2f" % s["rss_ratio"],
                         mval, wall, cpu])
    table = md_table(header, rows, right={2, 3, 4, 5, 6, 7, 8})

    # per-workload verdicts
    vrows = []
    over = []
    for wl in order:
        ws = summaries[wl]
        flag = ""
        if ws["vs_best"] is not None and ws["vs_best"] > 1.10:
            flag = "above 1.10x"
            over.append("%s %.2fx" % (wl, ws["vs_best"]))
        vrows.append([wl, ws["fastest"] or "n/a",
                      "n/a" if ws["vs_best"] is None else "%.2f" % ws["vs_best"],
                      ws["best_peer"] or "n/a",
                      "n/a" if ws["rss_vs"] is None else "%.2f" % ws["rss_vs"],
                      ws["smallest"] or "n/a", flag])
    vtable = md_table(["workload", "fastest", "slubmalloc / best peer (time)", "best peer",
                       "slubmalloc / smallest peer (RSS)", "smallest peer", "flag"],
                      vrows, right={2, 4})

    tparts, rparts, gm = [], [], {}
    for a in allocs:
        if a == "slubmalloc":
            continue
        tr = [summaries[wl]["stats"][a]["ratio"] for wl in order
              if a in summaries[wl]["stats"] and summaries[wl]["stats"][a]["ratio"]]
        rr = [summaries[wl]["stats"][a]["rss_ratio"] for wl in order
              if a in summaries[wl]["stats"] and summaries[wl]["stats"][a]["rss_ratio"]]
        g, h = geomean(tr), geomean(rr)
        gm[a] = (g, h)
        n_note = "" if len(tr) == len(order) else " (%d)" % len(tr)
        if g:
            tparts.append("%s %.2f%s" % (a, g, n_note))
        if h:
            rparts.append("%s %.2f" % (a, h))
    line1 = ("geomean time ratio to slubmalloc over %d workload(s) (>1: slubmalloc faster): %s"
             % (len(order), ", ".join(tparts) or "n/a"))
    line2 = ("geomean peak-RSS ratio to slubmalloc (>1: slubmalloc smaller): %s"
             % (", ".join(rparts) or "n/a"))
    # the targets: slubmalloc's time / the best peer's, per workload and as geometric means
    targets = []
    real = set(os.environ.get("REAL_WORKLOADS", "").split())
    vb = [summaries[wl]["vs_best"] for wl in order if summaries[wl]["vs_best"]]
    vr = [summaries[wl]["vs_best"] for wl in order if summaries[wl]["vs_best"] and wl in real]
    targets.append("workloads above 1.10x the best peer: %s" % (
        ", ".join(over) if over else "none"))
    if vb:
        g = geomean(vb)
        targets.append("geomean of slubmalloc/best peer %.3f (%s)" % (
            g, "met" if g <= 0.90 else "NOT met: needs <= 0.90"))
    if vr:
        g = geomean(vr)
        targets.append("the same over the %d real programs %.3f (%s)" % (
            len(vr), g, "met" if g <= 1.0 else "NOT met: needs <= 1.0"))
    h = gm.get("mimalloc", (None, None))[1]
    if h:
        targets.append("peak RSS slubmalloc/mimalloc geomean %.3f (%s)" % (
            1 / h, "met" if 1 / h <= 1.0 else "NOT met: needs <= 1.0"))
    line3 = "targets: " + "; ".join(targets)

    png_name = stamp + ".png"
    err = chart(os.path.join(results_dir, png_name), order, summaries, allocs,
                "slubmalloc comparison %s (median of %d runs; log scale)" % (stamp, runs_n))

    with open(report_path, "w") as f:
        f.write(f"# slubmalloc allocator comparison: {stamp}\n\n")
        f.write("## Environment\n\n")
        f.write(open(env_path).read())
        f.write("\n## Results\n\n")
        f.write(
            f"median = median over {runs_n} measured run(s) per allocator (after {warmup} "
            "warm-up round(s); the allocators interleaved, one run each per round, in a rotating "
            "order) of the process wall time from hyperfine, or for a fixed-duration workload "
            "(larson) or a server (real_redis) of its own throughput; ratio to slubmalloc = allocator time / slubmalloc "
            "time, or slubmalloc throughput / allocator throughput (>1: slubmalloc faster); "
            "peak RSS = median of `/usr/bin/time -f %M` (KiB), RSS ratio = allocator / "
            "slubmalloc (>1: slubmalloc smaller); program metric = median of the figure in the "
            "program's RESULT line; wall = hyperfine mean ± stddev; user+sys = median CPU "
            "seconds. `*` marks the fastest allocator of a workload.\n\n")
        f.write(table + "\n\n")
        f.write(line1 + "\n\n" + line2 + "\n\n" + line3 + "\n\n")
        f.write("### Per workload\n\n")
        f.write("slubmalloc / best peer > 1: slower than the fastest other allocator by that "
                f"factor ({PEERS_NOTE}); the target is at most 1.10.\n\n")
        f.write(vtable + "\n\n")
        if err:
            f.write(f"Chart: {err}\n\n")
        else:
            f.write(f"![time and peak-RSS ratios to slubmalloc]({png_name})\n\n")
        f.write("Hyperfine JSON (merged per workload, with the peak RSS and program metric of "
                "each run): " + ", ".join(f"`{n}`" for n in json_names) + "\n")

    print(table)
    print()
    print(vtable)
    print()
    print(line1)
    print(line2)
    print(line3)
    if err:
        print("chart: " + err, file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1] == "line":
        raw, spec_path, wl, allocs = sys.argv[2:6]
        spec, order, runs = load(raw, spec_path)
        print(one_line(spec, runs, wl, allocs.split()))
    else:
        raw, spec_path, env_path, report_path, stamp, allocs, runs_n, warmup = sys.argv[2:10]
        report(raw, spec_path, env_path, report_path, stamp, allocs.split(), int(runs_n),
               int(warmup))
PYEOF
cp "$ROOT/bench/mdtable.py" "$TMPD/"

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

# ---------------------------------------------------------------- environment header
pkg_versions() {
	dpkg-query -W -f='${Package} ${Version}\n' libc6 libjemalloc2 libmimalloc2.0 \
		libtcmalloc-minimal4 libgoogle-perftools4 gcc-12 hyperfine meson ninja-build \
		python3.11 sqlite3 coreutils 2>/dev/null |
		awk 'NF == 2' | paste -sd, - | sed 's/,/, /g'
}
GIT_COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# (changes under bench/results are this script's own output, not the code measured)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- . ':!bench/results' 2>/dev/null)" ]; then
	GIT_COMMIT+=" (uncommitted changes)"
fi
{
	echo "- date: $(date -u +%FT%TZ)"
	echo "- host: $(uname -n)"
	echo "- git commit: $GIT_COMMIT"
	echo "- CPU: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "- cores: $(nproc) online ($(grep -c '^processor' /proc/cpuinfo) in /proc/cpuinfo)"
	echo "- memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	echo "- kernel: $(uname -sr)"
	echo "- load average (1/5/15 min): $LOAD_START at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
	echo "- THP enabled: $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)," \
		"defrag: $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null || echo unknown)"
	echo "- packages: $(pkg_versions)"
	echo "- mode: $MODE, $WARMUP warm-up round(s) + $RUNS measured runs per allocator (interleaved, rotating order), each a \`hyperfine -N --runs 1\` of \`/usr/bin/time -f %M env LD_PRELOAD=... PROGRAM\`; real-program inputs at scale $INPUT_SCALE"
	echo "- total time: $(elapsed)"
	for a in "${AVAIL[@]}"; do
		if [ "${LIB[$a]}" = none ]; then
			echo "- $a: system malloc (no LD_PRELOAD)"
		else
			extra=""
			[ "$a" = slubmalloc ] && [ -n "${SLUBMALLOC_LIB:-}" ] && extra=" (SLUBMALLOC_LIB override)"
			echo "- $a: LD_PRELOAD=${LIB[$a]}$extra, sha256 $(sha256sum "${LIB[$a]}" | cut -c1-12)"
		fi
	done
	for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do
		echo "- skipped $s"
	done
	while IFS=$'\t' read -r wl score metric cmd; do
		what="wall time"
		[ "$score" = rate ] && what="throughput $metric (fixed duration)"
		cmd=${cmd//@IN@/IN}
		cmd=${cmd//@TMP@/TMP}
		echo "- workload $wl: \`${cmd//@REAL@/bench/real}\`, scored by $what"
	done <"$SPEC"
	if [ "$need_inputs" = 1 ]; then
		echo "- IN = inputs written by \`bench/real/gen_inputs.py IN $INPUT_SCALE\`; bench/ programs are in $BUILD_DIR"
	fi
} >"$TMPD/env.md"

# ---------------------------------------------------------------- report
REAL_WORKLOADS=$REAL_WORKLOADS "$PY" "$TMPD/report.py" report "$RAW" "$SPEC" "$TMPD/env.md" "$REPORT" "$STAMP" "${AVAIL[*]}" \
	"$RUNS" "$WARMUP"
echo "report: $REPORT, chart: bench/results/$STAMP.png ($(elapsed) total)"
