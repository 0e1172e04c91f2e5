#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# One node 20 ms slower, for the peer drivers, interleaved: rounds in which every driver runs a
# short healthy block and a short one-slow block (5 nodes, node 4 behind a proxy holding every
# reply 20 ms: redlock_bench --serve-proxy, the C proxy of the C core's one-slow section, or with
# no --c-bench orchestrate.py's asyncio SlowProxy), in rotating order, so that the machine's load
# falls on both states alike. Reports
# per driver the median over rounds of the ratio one-slow p50 / healthy p50 (and p99), and the
# pooled medians of the block p50s and p99s. Run it under the harness:
#
#   python3 tests/harness/nodes.py exec --count 5 -- \
#       python3 bench/drivers/one_slow.py --go-driver PATH [--node-modules DIR] [--python PY] \
#       [--c-bench build/bench/redlock_bench]
#
# Timings are printed only; nothing is asserted.
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from orchestrate import SLOW_DELAY_S, SlowProxy  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go-driver", help="bench/go binary: ours-go and redsync")
    ap.add_argument("--node-modules", help="node_modules with redlock and ioredis: node-redlock")
    ap.add_argument("--python", help="Python with redlock / pottery installed: ours-py, pottery")
    ap.add_argument("--c-bench", help="redlock_bench, whose --serve-proxy is the delaying proxy")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=400, help="cycles per block at most")
    ap.add_argument("--seconds", type=float, default=1.0, help="time per block at most")
    a = ap.parse_args()

    impls = {}
    if a.go_driver:
        for i in ("ours-go", "redsync"):
            impls[i] = [a.go_driver, "--impl", i]
    if a.node_modules and shutil.which("node"):
        impls["node-redlock"] = ["node", os.path.join(ROOT, "bench", "node", "driver.js")]
    if a.python:
        for i in ("ours-py", "pottery"):
            impls[i] = [a.python, os.path.join(HERE, "py_driver.py"), "--impl", i]
    if not impls:
        sys.exit("one_slow.py: give at least one of --go-driver, --node-modules, --python")

    urls = os.environ["REDLOCK_TEST_NODES"].split(",")[:5]
    host, port = re.match(r"redis://([^:/]+):(\d+)", urls[4]).groups()
    if a.c_bench:
        # The C proxy: no interpreter in the reply path, little CPU taken from the drivers.
        proc = subprocess.Popen([a.c_bench, "--serve-proxy", urls[4]], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        slow_url = proc.stdout.readline().strip()
        if not slow_url.startswith("redis://"):
            sys.exit("one_slow.py: redlock_bench --serve-proxy did not start")
        what = "redlock_bench --serve-proxy"
    else:
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # clients closing mid-write
        slow_url = SlowProxy(host, int(port), SLOW_DELAY_S).url()
        what = "orchestrate.py's SlowProxy"
    sets = {"healthy": urls, "one-slow": urls[:4] + [slow_url]}
    env = dict(os.environ)
    if a.node_modules:
        env["NODE_PATH"] = a.node_modules

    blocks = {(i, s): [] for i in impls for s in sets}
    order = [(i, s) for i in impls for s in sets]
    seq = 0
    for r in range(a.rounds):
        for k in range(len(order)):
            impl, state = order[(k + r) % len(order)]
            seq += 1
            argv = impls[impl] + ["--case", "cycle", "--urls", ",".join(sets[state]), "--workers", "1",
                                  "--iterations", str(a.iterations), "--seconds", str(a.seconds),
                                  "--warmup", "20", "--prefix", f"bench:slow:{os.getpid()}:{seq}"]
            p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=a.seconds * 3 + 60)
            lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
            if p.returncode != 0 or not lines:
                print(f"{impl} {state}: driver failed (rc {p.returncode}): {p.stderr.strip()[-300:]}",
                      file=sys.stderr)
                continue
            blocks[(impl, state)].append(json.loads(lines[-1]))

    print(f"5 nodes, node 4 {SLOW_DELAY_S * 1000:.0f} ms slower ({what}) vs healthy; {a.rounds} rounds of "
          f"blocks of <= {a.iterations} cycles or {a.seconds} s; ratios: median over rounds")
    print(f"{'impl':14} {'healthy p50/p99':>18} {'one-slow p50/p99':>18} {'p50 ratio':>10} {'p99 ratio':>10}"
          f" {'errors':>7}")
    for impl in impls:
        h, s = blocks[(impl, "healthy")], blocks[(impl, "one-slow")]
        pairs = [(x, y) for x, y in zip(h, s) if x["p50_us"] and y["p50_us"]]
        if not pairs:
            continue
        r50 = statistics.median(y["p50_us"] / x["p50_us"] for x, y in pairs)
        r99 = statistics.median(y["p99_us"] / x["p99_us"] for x, y in pairs)
        med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
        errs = sum(r["errors"] for r in h + s)
        print(f"{impl:14} {med(h, 'p50_us'):8.0f} / {med(h, 'p99_us'):7.0f} {med(s, 'p50_us'):8.0f} / "
              f"{med(s, 'p99_us'):7.0f} {r50:9.2f}x {r99:9.2f}x {errs:7d}")


if __name__ == "__main__":
    main()
