#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""This project's Node.js package against node-redlock (v5 over ioredis), in one run on the same
nodes (docs/performance.md, docs/node.md): bench/node/driver.js with --impl libredlock and with
node-redlock, the same code apart from the import, alternating ROUNDS times per case:
  cycle   one worker, uncontended acquire + release of a new name each time (p50, p99, ops/s);
  cycle16 the same with 16 async workers at once, each on its own names (what many locks held
          by one process at a time cost: message handlers, say);
  contend 16 async workers on one name (acquisitions/s, hand-over p50/p99).
Prints each round and the medians, and the ratios ours/node-redlock; "cpu" is the Node process's
CPU (user + system, every thread) per cycle or acquisition, which on a shared machine moves less
than the throughput.

    python3 tests/harness/nodes.py exec --count 5 --kind mixed -- python3 bench/node_compare.py \\
        --node-modules build-node/interop/node_modules [--rounds 5] [--iterations 3000] [--smoke]

Needs `make test-node` first (the addon, and node-redlock + ioredis in build-node/interop).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "node", "driver.js")


def run(impl, case, urls, node_modules, iterations, seconds, workers, prefix):
    env = dict(os.environ, NODE_PATH=node_modules)
    argv = ["node", DRIVER, "--impl", impl, "--case", case, "--urls", ",".join(urls), "--workers", str(workers),
            "--iterations", str(iterations), "--seconds", str(seconds), "--prefix", prefix]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit("%s %s failed: %s" % (impl, case, out.stderr[-2000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    if a.smoke:
        a.rounds, a.iterations, a.seconds = 1, 200, 1.0
    urls = [u for u in os.environ.get("REDLOCK_TEST_NODES", "").split(",") if u]
    if len(urls) < 3:
        sys.exit("node_compare.py: run it under tests/harness/nodes.py exec --count 5")
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("# node_compare: %d nodes, %d rounds; %d CPUs, load %s; node %s; %s" % (
        len(urls), a.rounds, os.cpu_count(), load,
        subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
        time.strftime("%Y-%m-%d %H:%M %Z")))
    res = {}
    for r in range(a.rounds):
        for label, case, workers in (("cycle", "cycle", 1), ("cycle16", "cycle", 16), ("contend", "contend", 16)):
            order = ("libredlock", "node-redlock") if r % 2 == 0 else ("node-redlock", "libredlock")
            for impl in order:
                row = run(impl, case, urls, a.node_modules, a.iterations, a.seconds, workers,
                          "bench:node:%d:%s:%s" % (r, label, impl))
                if row["errors"]:
                    print("  %s %s: %d errors, first: %s" % (impl, case, row["errors"], row["first_error"]))
                res.setdefault((label, impl), []).append(row)
                print("round %d %-8s %-13s %8.0f ops/s  p50 %7.0f us  p99 %7.0f us  cpu %5.0f us/op" % (
                    r, label, impl, row["ops_per_s"], row["p50_us"] or 0, row["p99_us"] or 0,
                    row.get("cpu_us_per_op") or 0))
    print("\n%-8s %-13s %10s %10s %10s %10s" % ("case", "impl", "ops/s", "p50 us", "p99 us", "cpu us/op"))
    med = {}
    for (case, impl), rows in sorted(res.items()):
        m = {k: statistics.median([x.get(k) or 0 for x in rows])
             for k in ("ops_per_s", "p50_us", "p99_us", "cpu_us_per_op")}
        med[(case, impl)] = m
        print("%-8s %-13s %10.0f %10.0f %10.0f %10.0f" % (case, impl, m["ops_per_s"], m["p50_us"], m["p99_us"],
                                                         m["cpu_us_per_op"]))
    for case in ("cycle", "cycle16", "contend"):
        o, p = med[(case, "libredlock")], med[(case, "node-redlock")]
        print("%s: libredlock/node-redlock throughput %.2fx, p50 %.2fx, p99 %.2fx, cpu per op %.2fx" % (
            case, o["ops_per_s"] / p["ops_per_s"], o["p50_us"] / p["p50_us"] if p["p50_us"] else 0,
            o["p99_us"] / p["p99_us"] if p["p99_us"] else 0,
            o["cpu_us_per_op"] / p["cpu_us_per_op"] if p["cpu_us_per_op"] else 0))
    return med


if __name__ == "__main__":
    main()
