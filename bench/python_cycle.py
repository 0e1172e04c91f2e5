#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark of the Python binding: latency of one `with client.lock(...)` cycle on distinct keys over
# 5 local nodes, against the C core called through the same cffi module, and against pottery's Redlock.
"""Usage: python3 bench/python_cycle.py [--cycles N] [--rounds N] [--nodes N] [--kind redis|valkey|mixed]

Starts its own nodes with tests/harness/nodes.py, unless REDLOCK_TEST_NODES is set (as under
`python3 tests/harness/nodes.py exec --count 5 -- python3 bench/python_cycle.py`).
Prints p50/p99 per cycle and the ratios; it measures, it never asserts a timing.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "harness"))

import redlock  # noqa: E402
from redlock import _ffi as ffi  # noqa: E402
from redlock import _lib as lib  # noqa: E402


def percentiles(samples_ns):
    s = sorted(samples_ns)
    p = lambda q: s[min(len(s) - 1, int(q * len(s)))] / 1000.0  # noqa: E731  (ns -> us)
    return {"p50": p(0.50), "p99": p(0.99), "mean": statistics.fmean(s) / 1000.0, "n": len(s)}


def bench_c_core(urls, keys):
    """acquire + release through the cffi lib in a tight loop: the C cost plus one cffi call each,
    with no Python object of ours in between. Handles are made beforehand."""
    c_urls = [ffi.new("char[]", u.encode()) for u in urls]
    arr = ffi.new("const char *[]", c_urls)
    out = ffi.new("redlock_client **")
    redlock._errors.check(lib.redlock_client_open(out, arr, len(c_urls), ffi.NULL, ffi.NULL, 0))
    client = ffi.gc(out[0], lib.redlock_client_free)
    handles = []
    lk = ffi.new("redlock_lock **")
    for k in keys:
        redlock._errors.check(lib.redlock_lock_new(lk, client, k.encode()))
        handles.append(ffi.gc(lk[0], lib.redlock_lock_free))
    acquire, release, now = lib.redlock_lock_acquire, lib.redlock_lock_release, time.perf_counter_ns
    samples = []
    failures = 0
    for h in handles:
        t0 = now()
        rc = acquire(h, 10000, 0)
        rc2 = release(h) if rc == 0 else rc
        samples.append(now() - t0)
        if rc or rc2:
            failures += 1
            print("C-core cycle failed:", ffi.string(lib.redlock_lock_errmsg(h)).decode(errors="replace"))
    return samples, failures


def bench_ours(urls, keys):
    samples = []
    failures = 0
    now = time.perf_counter_ns
    with redlock.Redlock(urls) as client:
        for k in keys:
            t0 = now()
            try:
                with client.lock(k, ttl=10.0, blocking=False):
                    pass
            except redlock.RedlockError as err:  # a loaded machine can miss the 50 ms node timeout
                failures += 1
                print("redlock cycle failed:", err)
            samples.append(now() - t0)
    return samples, failures


def bench_pottery(urls, keys):
    try:
        import logging

        import redis
        from pottery import Redlock as PotteryRedlock
    except ImportError as err:
        return None, f"pottery not installed ({err}): pip install -r tests/python/requirements.txt"
    logging.getLogger("pottery").setLevel(logging.ERROR)
    masters = {redis.Redis.from_url(u) for u in urls}
    samples = []
    now = time.perf_counter_ns
    for k in keys:
        t0 = now()
        with PotteryRedlock(key=k, masters=masters, auto_release_time=10.0):
            pass
        samples.append(now() - t0)
    for m in masters:
        m.close()
    return samples, 0


@contextlib.contextmanager
def node_urls(count, kind):
    env = os.environ.get("REDLOCK_TEST_NODES")
    if env:
        yield env.split(",")
        return
    import nodes
    with nodes.Cluster(count=count, kind=kind) as cluster:
        yield cluster.urls


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=3000)
    ap.add_argument("--pottery-cycles", type=int, default=1000, help="pottery is slower; fewer cycles")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of each contender")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--kind", default="redis", choices=("redis", "valkey", "mixed"))
    args = ap.parse_args()

    run = uuid.uuid4().hex[:8]
    with node_urls(args.nodes, args.kind) as urls:
        print(f"redlock {redlock.__version__} (C library {redlock.LIBRARY_VERSION}), "
              f"{len(urls)} nodes, {args.cycles} cycles on distinct keys")
        # Warm-up: connections and server-side scripts exist before anything is timed.
        warm = [f"bench:{run}:warm:{i}" for i in range(50)]
        bench_c_core(urls, warm)
        bench_ours(urls, [k + ":py" for k in warm])

        # Interleaved rounds, so that a change of machine load hits every contender alike.
        c_s, py_s, pot_s, why = [], [], [], None
        per = max(1, args.cycles // args.rounds)
        per_pot = max(1, args.pottery_cycles // args.rounds)
        for r in range(args.rounds):
            s, fails = bench_c_core(urls, [f"bench:{run}:c:{r}:{i}" for i in range(per)])
            c_s += s
            s, fails = bench_ours(urls, [f"bench:{run}:py:{r}:{i}" for i in range(per)])
            py_s += s
            s, why = bench_pottery(urls, [f"bench:{run}:pottery:{r}:{i}" for i in range(per_pot)])
            if s is not None:
                pot_s += s
        results = {
            "C core via cffi (acquire+release)": percentiles(c_s),
            "redlock: with client.lock(...)": percentiles(py_s),
        }
        if pot_s:
            results["pottery: with Redlock(...)"] = percentiles(pot_s)
        else:
            print(f"pottery: skipped: {why}")

    base = results["C core via cffi (acquire+release)"]
    ours = results["redlock: with client.lock(...)"]
    print(f"{'cycle':40} {'n':>6} {'p50 us':>10} {'p99 us':>10} {'p50 vs C':>9} {'p99 vs C':>9}")
    for label, r in results.items():
        print(f"{label:40} {r['n']:>6} {r['p50']:>10.1f} {r['p99']:>10.1f} "
              f"{r['p50'] / base['p50']:>8.2f}x {r['p99'] / base['p99']:>8.2f}x")
    pot = results.get("pottery: with Redlock(...)")
    if pot:
        print(f"pottery / redlock: p50 {pot['p50'] / ours['p50']:.2f}x, p99 {pot['p99'] / ours['p99']:.2f}x")


if __name__ == "__main__":
    main()
