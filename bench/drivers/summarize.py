#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Turns bench/results/results.json (written by orchestrate.py) into summary.csv, summary.md (the
# ratio tables and goals quoted in docs/performance.md) and the perf-*.png charts (matplotlib).
"""usage: summarize.py [RESULTS_JSON [OUT_DIR]]"""
from __future__ import annotations

import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = ("c-core", "ours-go", "ours-py")
PEERS = ("redsync", "pottery", "node-redlock", "redis-py")
ORDER = ("floor",) + OURS + ("c-core-try",) + PEERS
COLORS = {"floor": "#888888", "c-core": "#1f77b4", "c-core-try": "#aec7e8", "ours-go": "#2ca02c",
          "ours-py": "#17becf", "redsync": "#d62728", "pottery": "#ff7f0e", "node-redlock": "#9467bd",
          "redis-py": "#8c564b"}


def find(rows, impl, label):
    for r in rows:
        if r["impl"] == impl and r.get("label") == label:
            return r
    return None


def ratio(a, b):
    return a / b if a and b else None


def fx(v, nd=2):
    return "-" if v is None else f"{v:.{nd}f}x"


def us(v):
    return "-" if v is None else f"{v:,.0f}"


def goals(rows):
    out = []
    c, fl = find(rows, "c-core", "nodes=5"), find(rows, "floor", "nodes=5")
    if c and fl:
        r = ratio(c["p50_us"], fl["p50_us"])
        out.append(("C core p50 within 1.15x of the protocol floor at 5 nodes", f"{r:.2f}x", r <= 1.15))
    for ours, peer, want in (("ours-go", "redsync", 2.0), ("ours-py", "pottery", 3.0)):
        o, p = find(rows, ours, "nodes=5"), find(rows, peer, "nodes=5")
        if o and p:
            r = ratio(p["p50_us"], o["p50_us"])
            out.append((f"{ours} at least {want:g}x faster than {peer} (p50, 5 nodes)", f"{r:.2f}x", r >= want))
    for impl, healthy in (("c-core-try", "healthy-phase"), ("ours-go", "nodes=5"), ("ours-py", "nodes=5")):
        h, p = find(rows, impl, healthy), find(rows, impl, "one-paused")
        if h and p:
            r = ratio(p["p99_us"], h["p99_us"])
            out.append((f"{impl}: p99 with one paused node within 1.5x of healthy p99", f"{r:.2f}x", r <= 1.5))
    return out


def tables(data):
    rows, m = data["rows"], data["machine"]
    L = [f"Machine: {m['nproc']} CPUs, {m['cpu']}, Linux {m['kernel']}, 1-minute load {m['load1']:.2f} "
         f"at the start; {m['date']}.", ""]
    ping = find(rows, "ping-rtt", "redis-benchmark ping_inline -c 1")
    if ping:
        L += [f"PING round trip (`redis-benchmark -c 1 -t ping_inline`): mean {ping['mean_us']:.0f} us, "
              f"p50 {us(ping['p50_us'])} us.", ""]
    L += ["Goals:", "", "| goal | measured | met |", "|---|---|---|"]
    L += [f"| {g} | {v} | {'yes' if ok else 'NO'} |" for g, v, ok in goals(rows)]
    ns = sorted({r["nodes"] for r in rows if str(r.get("label", "")).startswith("nodes=")})
    L += ["", "Uncontended acquire+release, one worker, p50 in us (ratio to the C core in brackets):", "",
          "| impl | " + " | ".join(f"N={n}" for n in ns) + " |", "|---" * (len(ns) + 1) + "|"]
    for impl in ORDER:
        cells = []
        for n in ns:
            r, c = find(rows, impl, f"nodes={n}"), find(rows, "c-core", f"nodes={n}")
            cells.append("-" if not r else f"{us(r['p50_us'])} ({fx(ratio(r['p50_us'], c and c['p50_us']))})")
        if any(x != "-" for x in cells):
            L.append(f"| {impl} | " + " | ".join(cells) + " |")
    L += ["", "5 nodes: p50 / p99 in us, and acquire+release cycles per second:", "",
          "| impl | workers=1 | workers=8 | workers=64 | contend=16: hand-over p50/p99, acquisitions min..max per worker |",
          "|---|---|---|---|---|"]
    for impl in ORDER:
        cells = []
        for w in (1, 8, 64):
            r = find(rows, impl, f"workers={w}")
            cells.append("-" if not r else f"{us(r['p50_us'])} / {us(r['p99_us'])}, {us(r['ops_per_s'])}/s")
        r = find(rows, impl, "contend=16")
        cells.append("-" if not r else f"{us(r['p50_us'])} / {us(r['p99_us'])}, "
                     f"{min(r['per_worker'])}..{max(r['per_worker'])} of {r['ops']}")
        if any(x != "-" for x in cells):
            L.append(f"| {impl} | " + " | ".join(cells) + " |")
    L += ["", "5 nodes, faults: p50 / p99 in us (p99 ratio to the same library's healthy 5-node p99):", "",
          "| impl | healthy | one paused | one slowed by 20 ms |", "|---|---|---|---|"]
    for impl in ORDER:
        h = find(rows, impl, "healthy-phase" if impl.startswith("c-core") else "nodes=5")
        p, s = find(rows, impl, "one-paused"), find(rows, impl, "one-slow")
        if not (p or s) or not h:
            continue
        # The C core's one-slow rows have their own healthy baseline, measured in the same rounds.
        hs = find(rows, impl, "slow-healthy") or h
        cell = lambda r, h: "-" if not r else f"{us(r['p50_us'])} / {us(r['p99_us'])} ({fx(ratio(r['p99_us'], h['p99_us']))})"  # noqa: E731
        L.append(f"| {impl} | {us(h['p50_us'])} / {us(h['p99_us'])} | {cell(p, h)} | {cell(s, hs)} |")
    errs = [r for r in rows if r.get("errors")]
    if errs:
        L += ["", "Runs with failed cycles: " + "; ".join(
            f"{r['impl']} {r['label']}: {r['errors']} ({(r.get('first_error') or '')[:60]})" for r in errs)]
    return "\n".join(L) + "\n"


def charts(data, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = data["rows"]
    m = data["machine"]
    note = f"{m['nproc']} CPUs, load {m['load1']:.1f} at start"

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=90)
    for impl in ORDER:
        pts = sorted((r["nodes"], r["p50_us"]) for r in rows
                     if r["impl"] == impl and str(r.get("label", "")).startswith("nodes="))
        if impl == "redis-py" and pts:
            ax.axhline(pts[0][1], color=COLORS[impl], ls=":", label="redis-py Lock (1 node)")
        elif len(pts) > 1:
            ax.plot(*zip(*pts), marker="o", color=COLORS[impl], label=impl,
                    ls="--" if impl in ("floor", "c-core-try") else "-")
    ax.set_yscale("log")
    ax.set_xlabel("nodes")
    ax.set_ylabel("p50 acquire+release (us, log)")
    ax.set_title(f"Uncontended cycle latency vs node count ({note})", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "perf-nodes.png"))

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=90)
    impls = [i for i in ORDER if i != "floor" and any(find(rows, i, f"workers={w}") for w in (1, 8, 64))]
    width = 0.8 / max(1, len(impls))
    for k, impl in enumerate(impls):
        for j, w in enumerate((1, 8, 64)):
            r = find(rows, impl, f"workers={w}")
            if r:
                ax.bar(j + k * width, r["ops_per_s"], width, color=COLORS[impl], label=impl if j == 0 or
                       not find(rows, impl, "workers=1") and w == 8 else None)
    ax.set_xticks([0.4 - width / 2 + i for i in range(3)], ["1 worker", "8 workers", "64 workers"])
    ax.set_ylabel("acquire+release cycles per second")
    ax.set_title(f"Throughput on distinct keys, 5 nodes ({note}; C: threads of redlock_bench)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=.3, axis="y")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "perf-workers.png"))

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.8), dpi=90)
    for impl in ORDER:
        r = find(rows, impl, "contend=16")
        if not r or not r["ops"]:
            continue
        share = sorted((c / r["ops"] * 100 for c in r["per_worker"]), reverse=True)
        a1.plot(range(1, len(share) + 1), share, marker=".", color=COLORS[impl], label=impl)
        a2.bar(impl, r["p50_us"] or 0, color=COLORS[impl])
    a1.axhline(100 / 16, color="k", ls=":", lw=1)
    a1.set_xlabel("worker (most to fewest acquisitions)")
    a1.set_ylabel("% of acquisitions")
    a1.set_title("Fairness, 16 workers on one key", fontsize=9)
    a1.legend(fontsize=7)
    a2.set_yscale("log")
    a2.set_ylabel("hand-over p50 (us, log)")
    a2.set_title("Release to next acquire", fontsize=9)
    a2.tick_params(axis="x", labelrotation=45, labelsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "perf-contend.png"))

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=90)
    impls = [i for i in ORDER if find(rows, i, "one-paused") or find(rows, i, "one-slow")]
    width = 0.8 / max(1, len(impls))
    for k, impl in enumerate(impls):
        h = find(rows, impl, "healthy-phase" if impl.startswith("c-core") else "nodes=5")
        for j, r in enumerate((h, find(rows, impl, "one-paused"), find(rows, impl, "one-slow"))):
            if r:
                ax.bar(j + k * width, r["p99_us"], width, color=COLORS[impl], label=impl if j == 0 else None)
    ax.set_xticks([0.4 - width / 2 + i for i in range(3)], ["healthy", "one node paused", "one node +20 ms"])
    ax.set_yscale("log")
    ax.set_ylabel("p99 acquire+release (us, log)")
    ax.set_title(f"5 nodes with one paused or slow node ({note})", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=.3, axis="y")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "perf-faults.png"))


def main(path=None, out=None):
    path = path or os.path.join(HERE, "..", "results", "results.json")
    out = out or os.path.dirname(path)
    data = json.load(open(path))
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        m = data["machine"]
        f.write(f"# {m['nproc']} CPUs, {m['cpu']}, Linux {m['kernel']}, load1 {m['load1']:.2f}, {m['date']}\n")
        w.writerow(["impl", "label", "nodes", "workers", "ops", "errors", "p50_us", "p99_us", "ops_per_s"])
        for r in data["rows"]:
            w.writerow([r["impl"], r.get("label"), r.get("nodes"), r.get("workers"), r.get("ops"),
                        r.get("errors"), r.get("p50_us"), r.get("p99_us"), r.get("ops_per_s")])
    text = tables(data)
    open(os.path.join(out, "summary.md"), "w").write(text)
    print(text)
    charts(data, out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
