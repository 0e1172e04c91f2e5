#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a fenced write costs against a plain one (docs/fencing.md, "Protecting your store";
docs/performance.md), in one run, from Python: on a Redis or Valkey store, redlock.Fence's set
(one EVALSHA of the library's fence script) against a plain SET; on PostgreSQL,
redlock.fenced_update against a plain UPDATE of the same row. Blocks of each alternate, so the
machine's drift falls on both; the ratio is the median over block pairs of the block medians.

    python3 tests/harness/nodes.py exec --count 2 --kind mixed -- build/venv/bin/python bench/fence_cost.py
    bench/fence_cost.py [--ops 5000] [--block 250] [--smoke]

Needs redis-py and psycopg (tests/python/requirements.txt) and Debian's postgresql.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "harness"))

import pgserver  # noqa: E402
import psycopg  # noqa: E402
import redis  # noqa: E402

import redlock  # noqa: E402


def blocks(plain, fenced, ops, block):
    """Alternating blocks; per-op µs medians of each, and the median of the block ratios."""
    ps, fs, ratios = [], [], []
    for i in range(max(1, ops // block)):
        pair = []
        for fn, out in ((plain, ps), (fenced, fs)) if i % 2 == 0 else ((fenced, fs), (plain, ps)):
            t = []
            for _ in range(block):
                t0 = time.perf_counter_ns()
                fn()
                t.append(time.perf_counter_ns() - t0)
            m = statistics.median(t) / 1000.0
            out.append(m)
            pair.append((fn is fenced, m))
        d = dict(pair)
        ratios.append(d[True] / d[False])
    return statistics.median(ps), statistics.median(fs), statistics.median(ratios)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=5000)
    ap.add_argument("--block", type=int, default=250)
    ap.add_argument("--smoke", action="store_true", help="500 ops: the script still works")
    a = ap.parse_args(argv)
    if a.smoke:
        a.ops, a.block = 500, 100
    urls = os.environ.get("REDLOCK_TEST_NODES", "").split(",")
    kinds = os.environ.get("REDLOCK_TEST_NODE_KINDS", "").split(",")
    if not urls or not urls[0]:
        sys.exit("fence_cost.py: no nodes: run it under tests/harness/nodes.py exec")
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("# fence_cost: %d ops in blocks of %d; %d CPUs, load %s; %s" % (
        a.ops, a.block, os.cpu_count(), load, time.strftime("%Y-%m-%d %H:%M %Z")))
    print("%-22s %12s %12s %8s" % ("store", "plain us", "fenced us", "ratio"))
    rows = []
    for i, url in enumerate(urls):
        r = redis.Redis.from_url(url)
        fence = redlock.Fence(r, "bench:fence", 1)
        fence.set("bench:fence:v", "0")   # the script loaded, the fence made
        p, f, ratio = blocks(lambda: r.set("bench:fence:v", "x"), lambda: fence.set("bench:fence:v", "x"),
                             a.ops, a.block)
        name = (kinds[i] if i < len(kinds) and kinds[i] else "node %d" % i) + " SET"
        rows.append((name, p, f, ratio))
        r.close()
    with pgserver.PostgresServer() as pg, psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT, fence BIGINT)")
        conn.execute("INSERT INTO t VALUES (1, 0, 1)")
        cur = conn.cursor()
        p, f, ratio = blocks(lambda: cur.execute("UPDATE t SET v = %s WHERE id = 1", (7,)),
                             lambda: redlock.fenced_update(cur, "t", {"id": 1}, {"v": 7}, 1), a.ops, a.block)
        rows.append(("PostgreSQL UPDATE", p, f, ratio))
    for name, p, f, ratio in rows:
        print("%-22s %12.1f %12.1f %7.2fx" % (name, p, f, ratio))
    bad = [n for n, p, f, _ in rows if not (p > 0 and f > 0)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
