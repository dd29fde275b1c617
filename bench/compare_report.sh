# bench/compare_report.sh: sourced by compare.sh; defines functions only. The report steps:
# write_report_script DIR writes DIR/report.py, the Python script that aggregates the runs
# (raw.tsv and one hyperfine JSON per run) into the Markdown report, the merged JSON per
# workload and the chart, and prints the tables (`report.py line ...` prints one workload's
# summary line); it copies bench/mdtable.py, which report.py imports, next to it (needs ROOT).
# write_env_md FILE NEED_INPUTS writes the report's environment section (host, git commit,
# packages, mode, allocator libraries, workload commands) into FILE; NEED_INPUTS is 1 when the
# real programs' inputs were generated. It expects compare.sh's ROOT, LOAD_START, MODE, WARMUP,
# RUNS, INPUT_SCALE, BUILD_DIR, SPEC (the workload table as run), AVAIL, LIB and SKIPPED (from
# peers.sh's locate_allocators) and its function elapsed.
# shellcheck shell=bash

write_report_script() { # write_report_script DIR -> DIR/report.py, DIR/mdtable.py
	cat >"$1/report.py" <<'PYEOF'
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
            name = f"{wl}.hyperfine.json"
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
    line4 = os.environ.get("BULK_LINE", "bulk calls: not measured")

    png_name = "chart.png"
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
        f.write(line1 + "\n\n" + line2 + "\n\n" + line3 + "\n\n" + line4 + "\n\n")
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
    print(line4)
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
	cp "$ROOT/bench/mdtable.py" "$1/"
}

write_env_md() { # write_env_md FILE NEED_INPUTS
	local need_inputs=$2 wl score metric cmd what GIT_COMMIT
	GIT_COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
	# (changes under bench/results are this script's own output, not the code measured)
	if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- . ':!bench/results' 2>/dev/null)" ]; then
		GIT_COMMIT+=" (uncommitted changes)"
	fi
	{
		env_md_machine "$GIT_COMMIT" "$LOAD_START" libc6 libjemalloc2 libmimalloc2.0 \
			libtcmalloc-minimal4 libgoogle-perftools4 gcc-12 hyperfine meson ninja-build \
			python3.11 sqlite3 coreutils
		echo "- mode: $MODE, $WARMUP warm-up round(s) + $RUNS measured runs per allocator (interleaved, rotating order), each a \`hyperfine -N --runs 1\` of \`/usr/bin/time -f %M env LD_PRELOAD=... PROGRAM\`; real-program inputs at scale $INPUT_SCALE"
		env_md_allocators
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
	} >"$1"
}
