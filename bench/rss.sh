#!/usr/bin/env bash
# rss.sh: resident memory over time under glibc, jemalloc, mimalloc, tcmalloc and slubmalloc.
# Builds bench/rss and libslubmalloc.so (release), then runs `bench/rss` (grow to MIB MiB of small
# objects, free 90% in random order, idle; see the top of bench/rss.c) under each allocator with
# LD_PRELOAD, the allocators interleaved (rounds of one run each, in a rotating order) so that
# drift hits all alike. Every run's RESULT line and RSS-over-time CSV are kept; a run that fails
# (exit status, signal, timeout, no RESULT line) is reported and left out of the medians.
# Writes bench/results/rss-<date>-<host>.md: per allocator the median peak, after-free and final
# RSS, each allocator's ratio to the best peer (peers = glibc, jemalloc, mimalloc, tcmalloc), the
# targets (slubmalloc final <= 1.2 x the best peer's final; slubmalloc peak <= the best peer's
# peak + 10%) as met / NOT met, and the environment; plus a PNG chart of RSS over time (one line
# per allocator: its median run by final RSS) and that run's samples as CSV. Prints the table.
#
# Usage: bench/rss.sh [--quick] [--runs N] [--mib N] [--idle S] [--period MS] [--no-install]
#   --quick      1 run of 256 MiB and 2 s idle per allocator (under a minute); the default:
#                3 runs of 1024 MiB and 3 s idle (about 75 s on 2 cores)
#   --runs N     runs per allocator; --mib N: MiB requested; --idle S: idle seconds;
#   --period MS  sampling period (default 25 ms)
#   --no-install do not apt-get install missing packages
# Quick runs write rss-<date>-<host>-quick.md and runs with other --runs/--mib/--idle/--period
# values add -custom, so they never replace a default report. Environment:
# SLUBMALLOC_LIB, JEMALLOC_LIB, MIMALLOC_LIB, TCMALLOC_LIB (library paths), BUILD_DIR (default:
# build; absolute or relative to the repository). SLUBMALLOC_* settings in the environment reach
# every run and are listed in the report.
set -euo pipefail
unset LD_PRELOAD

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
START_EPOCH=$(date +%s)
ALLOCATORS=(glibc jemalloc mimalloc tcmalloc slubmalloc)
RUN_LIMIT=300 # seconds; a run that takes longer (a hang) is killed and counted as failed

# ---------------------------------------------------------------- options
MODE=full
RUNS="" MIB="" IDLE="" PERIOD=25
INSTALL=1

usage() {
	sed -n '14,24s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

die() {
	echo "rss.sh: error: $*" >&2
	exit 1
}

note() {
	echo "rss.sh: $*" >&2
}

need_arg() { # need_arg OPTION COUNT_LEFT
	[ "$2" -ge 2 ] || die "$1 needs a value"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) MODE=quick ;;
	--runs) need_arg "$1" $# && RUNS=$2 && shift ;;
	--runs=*) RUNS=${1#*=} ;;
	--mib) need_arg "$1" $# && MIB=$2 && shift ;;
	--mib=*) MIB=${1#*=} ;;
	--idle) need_arg "$1" $# && IDLE=$2 && shift ;;
	--idle=*) IDLE=${1#*=} ;;
	--period) need_arg "$1" $# && PERIOD=$2 && shift ;;
	--period=*) PERIOD=${1#*=} ;;
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
	DEFAULTS="1 256 2 25"
	: "${RUNS:=1}" "${MIB:=256}" "${IDLE:=2}"
else
	DEFAULTS="3 1024 3 25"
	: "${RUNS:=3}" "${MIB:=1024}" "${IDLE:=3}"
fi
for v in RUNS MIB PERIOD; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v,,} must be a positive integer"
done
[[ "$IDLE" =~ ^[0-9]+$ ]] || die "--idle must be a non-negative integer"

# ---------------------------------------------------------------- dependencies
PACKAGES=(meson ninja-build gcc libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev
	python3 python3-matplotlib)
# shellcheck source=bench/peers.sh
. "$ROOT/bench/peers.sh"
set_build_dir
install_packages "${PACKAGES[@]}"
for tool in meson ninja cc timeout; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (apt-get install meson ninja-build gcc)"
done
# the system interpreter (Debian's python3-matplotlib), not one first in PATH
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3) || die "python3 not found"; fi

# ---------------------------------------------------------------- build
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/slub-rss.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
mkdir -p "$TMPD/csv"

# the commit being built (taken now: others may commit while the runs go on)
GIT_COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# (changes under bench/results are this script's own output, not the code measured)
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- . ':!bench/results' 2>/dev/null)" ]; then
	GIT_COMMIT+=" (uncommitted changes)"
fi
TARGETS=(preload/libslubmalloc.so bench/rss)
build_release "${TARGETS[@]}"
PROG=$BUILD_ABS/bench/rss
[ -x "$PROG" ] || die "$BUILD_DIR/bench/rss was not built (is it in bench/meson.build?)"

# ---------------------------------------------------------------- allocator libraries
locate_allocators
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- runs
mkdir -p bench/results/studies # a study: one file (and its chart and runs) named with the commit
STAMP="rss-$(date +%F)-$(uname -n)-$(git -C "$ROOT" rev-parse --short=7 HEAD 2>/dev/null || echo nogit)"
[ "$MODE" = quick ] && STAMP+="-quick"
[ "$RUNS $MIB $IDLE $PERIOD" != "$DEFAULTS" ] && STAMP+="-custom"
REPORT="bench/results/studies/$STAMP.md"
rm -f "$REPORT" "bench/results/studies/$STAMP.png" "bench/results/studies/$STAMP.csv"
RAW="$TMPD/raw.tsv" # allocator, run, status, csv path, RESULT line
: >"$RAW"

elapsed() { # elapsed -> "3m07s" since the start
	local s=$(($(date +%s) - START_EPOCH))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# run_one ALLOCATOR RUN: one run of bench/rss; appends a line to $RAW.
run_one() {
	local a=$1 r=$2 csv="$TMPD/csv/$1.$2.csv" status=ok rc=0 line
	local -a eargs
	if [ "${LIB[$a]}" = none ]; then eargs=(-u LD_PRELOAD); else eargs=("LD_PRELOAD=${LIB[$a]}"); fi
	timeout -k 5 "$RUN_LIMIT" env "${eargs[@]}" "$PROG" "$csv" "$MIB" "$IDLE" "$PERIOD" \
		>"$TMPD/out" 2>"$TMPD/err" || rc=$?
	line=$(grep -m1 '^RESULT name=rss ' "$TMPD/out" || true)
	if [ "$rc" = 124 ]; then
		status="timeout${RUN_LIMIT}s"
	elif [ "$rc" -gt 128 ]; then
		status="signal$((rc - 128))"
	elif [ "$rc" != 0 ]; then
		status="exit$rc"
	elif [ -z "$line" ] || [ ! -s "$csv" ]; then
		status=noresult
	fi
	if [ "$status" != ok ]; then
		note "run $r under $a failed ($status): $(tail -n3 "$TMPD/err" | tr '\n' ' ')"
		line=""
	fi
	printf '%s\t%d\t%s\t%s\t%s\n' "$a" "$r" "$status" "$csv" "$line" >>"$RAW"
	note "  $a run $r: ${line#RESULT name=rss }"
}

note "$NA allocators x $RUNS run(s) of bench/rss $MIB MiB, idle ${IDLE}s, sampling every ${PERIOD}ms ($MODE mode)"
for ((r = 0; r < RUNS; r++)); do
	note "round $((r + 1))/$RUNS ($(elapsed) elapsed)"
	for ((k = 0; k < NA; k++)); do
		run_one "${AVAIL[$(((k + r) % NA))]}" $((r + 1))
	done
done

# ---------------------------------------------------------------- environment header
{
	env_md_machine "$GIT_COMMIT" "$LOAD_START" libc6 libjemalloc2 libmimalloc2.0 \
		libtcmalloc-minimal4 libgoogle-perftools4 gcc-12 meson ninja-build python3-matplotlib
	echo "- mode: $MODE, $RUNS run(s) per allocator (interleaved, rotating order) of \`$BUILD_DIR/bench/rss CSV $MIB $IDLE $PERIOD\` ($MIB MiB requested, ${IDLE} s idle, a sample every $PERIOD ms)"
	env_md_allocators
} >"$TMPD/env.md"

# ---------------------------------------------------------------- report
cat >"$TMPD/report.py" <<'PYEOF'
"""Aggregates the rss.sh runs (raw.tsv + one CSV per run) into the report, CSV and chart."""
import csv
import os
import shutil
import statistics
import subprocess
import sys

from mdtable import md_table  # bench/mdtable.py, copied next to this file

PEERS = ("glibc", "jemalloc", "mimalloc", "tcmalloc")
COLORS = {"glibc": "#999999", "jemalloc": "#d95f02", "mimalloc": "#1b9e77",
          "tcmalloc": "#7570b3", "slubmalloc": "#e7298a"}
FINAL_TARGET = 1.2   # slubmalloc final <= 1.2 x the best peer's final
PEAK_TARGET = 1.10   # slubmalloc peak <= the best peer's peak + 10%


def parse_result(line):
    kv = {}
    for word in line.split()[2:]:
        if "=" in word:
            k, v = word.split("=", 1)
            try:
                kv[k] = float(v)
            except ValueError:
                pass
    return kv


def load(raw_path):
    runs = {}
    for line in open(raw_path):
        a, r, status, csv_path, result = line.rstrip("\n").split("\t")
        runs.setdefault(a, []).append(dict(run=int(r), status=status, csv=csv_path,
                                           kv=parse_result(result) if status == "ok" else {}))
    return runs


def samples(path):
    with open(path) as f:
        return [(float(row["t_ms"]), int(row["rss_kib"]), row["phase"]) for row in csv.DictReader(f)]


def mib(kib):
    return "%.1f" % (kib / 1024.0) if kib is not None else "n/a"


def chart_matplotlib(png, series, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5.5))
    for a, rows in series.items():
        ax.plot([t / 1000 for t, _, _ in rows], [k / 1024 for _, k, _ in rows], label=a,
                color=COLORS.get(a), linewidth=1.6 if a == "slubmalloc" else 1.1)
        marks = [(t, k) for t, k, p in rows if p in ("grow_end", "free_end")]
        ax.plot([t / 1000 for t, _ in marks], [k / 1024 for _, k in marks], "o",
                color=COLORS.get(a), markersize=4)
    ax.set_xlabel("time since start (s); dots: end of grow, end of free")
    ax.set_ylabel("RSS (MiB)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def chart_gnuplot(png, series, title, tmpd):
    gp = shutil.which("gnuplot")
    if not gp:
        raise RuntimeError("gnuplot not found either")
    plots = []
    for a, rows in series.items():
        dat = os.path.join(tmpd, "plot-%s.dat" % a)
        with open(dat, "w") as f:
            for t, k, _ in rows:
                f.write("%.3f %.1f\n" % (t / 1000, k / 1024))
        plots.append("'%s' using 1:2 with lines lw 1.5 title '%s'" % (dat, a))
    script = ("set terminal pngcairo size 1100,600\nset output '%s'\nset title '%s'\n"
              "set xlabel 'time since start (s)'\nset ylabel 'RSS (MiB)'\nset yrange [0:*]\n"
              "set grid\nplot %s\n" % (png, title, ", ".join(plots)))
    subprocess.run([gp], input=script, text=True, check=True, capture_output=True)


def main(raw, env_path, results_dir, stamp, allocs, mib_arg, idle, tmpd):
    runs = load(raw)
    st = {}
    for a in allocs:
        rs = runs.get(a, [])
        ok = [r for r in rs if r["status"] == "ok" and "final_kib" in r["kv"]]
        s = dict(n=len(rs), n_ok=len(ok), fails=sorted({r["status"] for r in rs} - {"ok"}))
        for key in ("peak_kib", "after_free_kib", "final_kib", "live_mib", "grow_ms", "free_ms"):
            vals = [r["kv"][key] for r in ok if key in r["kv"]]
            s[key] = statistics.median(vals) if vals else None
        # the chart's run: the median by final RSS (the lower middle for an even count)
        by_final = sorted(ok, key=lambda r: r["kv"]["final_kib"])
        s["chart_run"] = by_final[(len(by_final) - 1) // 2] if by_final else None
        st[a] = s

    best = {}
    for key in ("peak_kib", "final_kib"):
        cands = [(st[a][key], a) for a in allocs if a in PEERS and st[a][key] is not None]
        best[key] = min(cands) if cands else None

    def ratio(a, key):
        b = best[key]
        v = st[a][key]
        return "%.2f" % (v / b[0]) if (b and v is not None and b[0] > 0) else "n/a"

    header = ["allocator", "runs ok", "peak RSS MiB", "peak / best peer", "after free MiB",
              "final RSS MiB", "final / best peer", "final / peak"]
    rows = []
    for a in allocs:
        s = st[a]
        okn = "%d/%d" % (s["n_ok"], s["n"]) + (" (%s)" % ",".join(s["fails"]) if s["fails"] else "")
        star_p = "*" if best["peak_kib"] and best["peak_kib"][1] == a else ""
        star_f = "*" if best["final_kib"] and best["final_kib"][1] == a else ""
        fp = ("%.2f" % (s["final_kib"] / s["peak_kib"])
              if s["final_kib"] is not None and s["peak_kib"] else "n/a")
        rows.append([a, okn, mib(s["peak_kib"]) + star_p, ratio(a, "peak_kib"),
                     mib(s["after_free_kib"]), mib(s["final_kib"]) + star_f,
                     ratio(a, "final_kib"), fp])
    table = md_table(header, rows, right=set(range(1, len(header))))

    targets = []
    sl = st.get("slubmalloc")
    if sl and sl["final_kib"] is not None and best["final_kib"]:
        r = sl["final_kib"] / best["final_kib"][0]
        targets.append("slubmalloc final RSS %s MiB = %.2f x the best peer's (%s, %s MiB): %s "
                       "(target <= %.1fx)" % (mib(sl["final_kib"]), r, best["final_kib"][1],
                                              mib(best["final_kib"][0]),
                                              "met" if r <= FINAL_TARGET else "NOT met",
                                              FINAL_TARGET))
    else:
        targets.append("slubmalloc final RSS: NOT met (no valid slubmalloc or peer run)")
    if sl and sl["peak_kib"] is not None and best["peak_kib"]:
        r = sl["peak_kib"] / best["peak_kib"][0]
        targets.append("slubmalloc peak RSS %s MiB = %.2f x the best peer's (%s, %s MiB): %s "
                       "(target <= best peer + 10%%)" % (mib(sl["peak_kib"]), r,
                                                        best["peak_kib"][1],
                                                        mib(best["peak_kib"][0]),
                                                        "met" if r <= PEAK_TARGET else "NOT met"))
    else:
        targets.append("slubmalloc peak RSS: NOT met (no valid slubmalloc or peer run)")
    live = next((st[a]["live_mib"] for a in allocs if st[a]["live_mib"] is not None), None)
    live_line = ("live data after the free phase: %.1f MiB requested (10%% of the objects)"
                 % live if live is not None else "")

    # the chart runs' samples, one CSV
    series = {}
    for a in allocs:
        cr = st[a]["chart_run"]
        if cr and os.path.exists(cr["csv"]):
            series[a] = samples(cr["csv"])
    csv_name = stamp + ".csv"
    with open(os.path.join(results_dir, csv_name), "w") as f:
        f.write("allocator,run,t_ms,rss_kib,phase\n")
        for a, rows_ in series.items():
            for t, k, p in rows_:
                f.write("%s,%d,%.1f,%d,%s\n" % (a, st[a]["chart_run"]["run"], t, k, p))
    png_name = stamp + ".png"
    png = os.path.join(results_dir, png_name)
    title = ("RSS over time: grow to %s MiB of small objects, free 90%% in random order, "
             "idle %s s (median run of each allocator by final RSS)" % (mib_arg, idle))
    chart_err = None
    try:
        chart_matplotlib(png, series, title)
    except Exception as e:  # no matplotlib (or it failed): gnuplot
        try:
            chart_gnuplot(png, series, title, tmpd)
        except Exception as e2:
            chart_err = "no chart (matplotlib: %s; gnuplot: %s)" % (e, e2)

    with open(os.path.join(results_dir, stamp + ".md"), "w") as f:
        f.write("# slubmalloc RSS over time: %s\n\n## Environment\n\n" % stamp)
        f.write(open(env_path).read())
        f.write("\n## Results\n\n")
        f.write("bench/rss grows to the requested bytes of small objects (55%% 16..128 B, 25%% "
                "129..512, 15%% 513..1024, 5%% 1025..8192; every byte written), frees 90%% of "
                "them in a random order, then idles without calling the allocator; a thread "
                "samples /proc/self/statm. Figures are medians over the successful runs: peak = "
                "the larger of the sampled maximum and ru_maxrss; after free = RSS right after "
                "the last free; final = RSS at the end of the idle time. Ratios are to the best "
                "peer (the smallest value among %s; marked `*`).\n\n" % ", ".join(PEERS))
        f.write(table + "\n\n")
        if live_line:
            f.write(live_line + "\n\n")
        f.write("targets:\n\n" + "".join("- %s\n" % t for t in targets) + "\n")
        if chart_err:
            f.write("Chart: %s\n\n" % chart_err)
        else:
            f.write("![RSS over time](%s)\n\n" % png_name)
        f.write("Samples of the charted runs: `%s`\n" % csv_name)

    print(table)
    print()
    if live_line:
        print(live_line)
    for t in targets:
        print("target: " + t)
    if chart_err:
        print("chart: " + chart_err, file=sys.stderr)


if __name__ == "__main__":
    raw, env_path, results_dir, stamp, allocs, mib_arg, idle, tmpd = sys.argv[1:9]
    main(raw, env_path, results_dir, stamp, allocs.split(), mib_arg, idle, tmpd)
PYEOF
cp "$ROOT/bench/mdtable.py" "$TMPD/"

"$PY" "$TMPD/report.py" "$RAW" "$TMPD/env.md" bench/results/studies "$STAMP" "${AVAIL[*]}" "$MIB" \
	"$IDLE" "$TMPD"
echo "report: $REPORT, chart: bench/results/studies/$STAMP.png, samples: bench/results/studies/$STAMP.csv ($(elapsed) total)"
