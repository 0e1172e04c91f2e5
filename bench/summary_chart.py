#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""summary_chart.py: the chart at the top of docs/performance.md.

    bench/summary_chart.py [--csv bench/results/summary.csv] [--out docs/img/perf-summary.png]

Two panels of ratios, each against the peer or floor it was measured beside
in the same run: how many times faster redlock's cycle is than a peer's
(from bench/results/summary.csv, the last peer run of bench/run, 5 nodes),
and what a feature costs against its baseline (the figures of
docs/performance.md's summary table, copied below with the section each
comes from). Needs matplotlib (pip install matplotlib, in a venv).
"""
import argparse
import csv
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, peer, ours) from summary.csv: the p50 of the peer's cycle over ours, 5 nodes,
# the last run of every peer (bench/run, 2026-11-22, before engine v2).
PEERS = [
    ("C core vs go-redsync", "redsync", "c-core"),
    ("C core vs node-redlock", "node-redlock", "c-core"),
    ("Python binding vs pottery", "pottery", "ours-py"),
    ("C core vs pottery", "pottery", "c-core"),
]
# The Go binding against go-redsync after engine v2 (docs/go.md, "Benchmarks": go-per-call,
# redsync p50 over ours in three runs, 2026-11-23): label, the figure quoted, low, high.
GO_V2 = ("Go binding vs go-redsync (engine v2)", 2.05, 1.99, 2.05)

# (label, ratio, lower bound, upper bound) against the baseline of the same run;
# docs/performance.md, the section named in the comment.
COSTS = [
    # "2026-11-23: engine v2", five runs at 5 nodes: median, range
    ("C core / quorum floor (5 nodes)", 1.01, 0.97, 1.07),
    # docs/go.md "Benchmarks", go-per-call / c over three runs
    ("Go binding / C core", 1.05, 1.05, 1.06),
    # "2026-11-25: the counting semaphore", L = 10, a permit free, both machines
    ("semaphore L=10 / mutex", 1.35, 1.25, 1.43),
    # "2026-11-25: read-write lock", re-measured 2026-11-27: five runs
    ("read lock / mutex", 1.12, 1.11, 1.20),
    # "2026-11-25: multi-resource locks": cycles/s of the mutex over a set's
    ("set of 2 names / mutex", 1 / 0.67, 1 / 0.67, 1 / 0.63),
    # "2026-11-27: wake-up made opt-in", 16 workers, no think time
    ("wake-up acquire p99 / polling", 0.22, 0.11, 0.80),
    ("wake-up node CPU / polling", 1.88, 1.32, 1.88),
    # "2026-11-27: a cluster as a node": the busiest server's CPU per acquisition, 3 shards / 1
    ("cluster 3 shards: busiest server CPU / single", 18.5 / 33.0, 17 / 37, 19 / 27),
]


def peer_ratios(path):
    p50 = {}
    with open(path, newline="") as f:
        rows = [l for l in f if not l.startswith("#")]
    for r in csv.DictReader(rows):
        if r["label"] == "nodes=5" and r["p50_us"]:
            p50[r["impl"]] = float(r["p50_us"])
    out = []
    for label, peer, ours in PEERS:
        if peer not in p50 or ours not in p50:
            sys.exit("summary_chart.py: %s has no nodes=5 row for %s or %s" % (path, peer, ours))
        v = p50[peer] / p50[ours]
        out.append((label, v, v, v))
    return out + [GO_V2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=os.path.join(TOP, "bench", "results", "summary.csv"))
    ap.add_argument("--out", default=os.path.join(TOP, "docs", "img", "perf-summary.png"))
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peers = peer_ratios(a.csv)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1, 1.15]})

    labels = [p[0] for p in peers][::-1]
    vals = [p[1] for p in peers][::-1]
    bars = ax1.barh(labels, vals, color=["#6baed6" if p is GO_V2 else "#1f77b4" for p in peers][::-1],
                    xerr=[[p[1] - p[2] for p in peers][::-1], [p[3] - p[1] for p in peers][::-1]],
                    ecolor="#333333", capsize=3)
    ax1.set_xscale("log")
    ax1.set_xticks([1, 2, 5, 10, 20])
    ax1.set_xticklabels(["1", "2", "5", "10", "20"])
    ax1.axvline(1, color="#555555", lw=1)
    ax1.set_xlim(0.8, 60)
    for b, v in zip(bars, vals):
        ax1.text(v * 1.08, b.get_y() + b.get_height() / 2, "%.1fx" % v, va="center", fontsize=9)
    ax1.set_title("faster than the peer: peer p50 / ours, 5 nodes\n"
                  "(dark: one run of every peer, 2026-11-22; light: three runs, 2026-11-23)", fontsize=10)
    ax1.set_xlabel("times faster (log scale; 1 = as fast)")

    labels = [c[0] for c in COSTS][::-1]
    vals = [c[1] for c in COSTS][::-1]
    lo = [c[1] - min(c[2], c[3]) for c in COSTS][::-1]
    hi = [max(c[2], c[3]) - c[1] for c in COSTS][::-1]
    colors = ["#2ca02c" if v <= 1.2 else "#ff7f0e" for v in vals]
    bars = ax2.barh(labels, vals, xerr=[lo, hi], color=colors, ecolor="#333333", capsize=3)
    ax2.axvline(1, color="#555555", lw=1)
    ax2.set_xlim(0, 2.3)
    for b, v, h in zip(bars, vals, hi):
        ax2.text(v + h + 0.04, b.get_y() + b.get_height() / 2, "%.2fx" % v, va="center", fontsize=9)
    ax2.set_title("cost: ours / its baseline in the same run\n"
                  "(whisker: range over runs or cases)", fontsize=10)
    ax2.set_xlabel("ratio (1 = the baseline; lower is cheaper)")

    fig.suptitle("redlock: headline ratios (docs/performance.md, summary)", fontsize=12)
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print("summary_chart.py: wrote " + os.path.relpath(a.out, TOP))


if __name__ == "__main__":
    main()
