#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# What metrics cost the Python binding: one acquire+release cycle on 5 local nodes with no hook, with
# a hook that does nothing (the events' conversion to Python), and with redlock.otel's RedlockMetrics
# on the OpenTelemetry SDK (the instruments recorded), in interleaved blocks.
"""Usage: python3 bench/otel_overhead.py [--cycles N] [--rounds N]

Needs opentelemetry-sdk (pip install 'libredlock[otel]' opentelemetry-sdk). Starts its own nodes with
tests/harness/nodes.py. Prints the median cycle of each mode and its ratio to the hook-less client
measured in the same run; it never asserts a timing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "harness"))

import nodes  # noqa: E402
import redlock  # noqa: E402


def block(client, n: int, tag: str) -> list:
    out = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        with client.lock(f"bench:otel:{tag}:{i}", ttl=10.0, blocking=False):
            pass
        out.append(time.perf_counter_ns() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=500, help="cycles per block")
    ap.add_argument("--rounds", type=int, default=10, help="blocks per mode, interleaved")
    args = ap.parse_args()
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from redlock.otel import RedlockMetrics

    reader = InMemoryMetricReader()
    metrics = RedlockMetrics(MeterProvider(metric_readers=[reader]))
    with nodes.Cluster(count=5, kind="mixed") as cluster:
        modes = {
            "no hook": redlock.Redlock(cluster.urls),
            "empty hook": redlock.Redlock(cluster.urls, on_event=lambda e: None),
            "RedlockMetrics": redlock.Redlock(cluster.urls, on_event=metrics),
        }
        for name, c in modes.items():
            block(c, 50, "warm" + name)
        samples = {name: [] for name in modes}
        for r in range(args.rounds):
            for name, c in modes.items():
                # The median of each block: blocks interleave, so load drifts hit every mode alike.
                samples[name].append(statistics.median(block(c, args.cycles, f"{r}:{name}")))
        for c in modes.values():
            c.close()
    base = statistics.median(samples["no hook"])
    print(f"acquire+release cycle, 5 nodes, {args.rounds} x {args.cycles} cycles per mode, medians of block medians")
    for name, s in samples.items():
        m = statistics.median(s)
        print(f"  {name:15s} {m / 1000:8.1f} us   {m / base:5.2f}x")
    data = reader.get_metrics_data()
    n = sum(p.count for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
            if m.name == "redlock.acquire.duration" for p in m.data.data_points)
    print(f"  (redlock.acquire.duration holds {n} samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
