#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Lock throughput with each of 3 Redlock nodes a single server, then a cluster of 2 shards,
then 3 (docs/performance.md, "A cluster as a node"). Many threads lock and unlock many resources
through one client; the nodes' CPU (utime + stime of every server process, from /proc) is divided
by the acquisitions. Everything runs on this machine, so the numbers are ratios against the
single-server run of the same invocation, not capacities.

    bench/cluster_scale.py [--seconds 5] [--threads 8] [--resources 2000]
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "harness"))

import nodes  # noqa: E402
import rcluster  # noqa: E402
import redlock  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pids):
    t = 0
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        t += int(fields[11]) + int(fields[12])
    return t / TICK


def run(urls, pids, seconds, threads, resources):
    with redlock.Redlock(urls, node_timeout=1.0, retry_count=0) as c:
        for k in range(resources):   # warm-up: connections and slot maps
            lk = c.lock("bench:%d" % k, ttl=5.0)
            if lk.acquire(blocking=False):
                lk.release()
        i0, it0 = cpu_of(pids), time.monotonic()
        time.sleep(1.0)   # the nodes' own background work (cluster bus, cron), for comparison
        idle = (cpu_of(pids) - i0) / (time.monotonic() - it0)
        done = [0] * threads
        stop = time.monotonic() + seconds

        def worker(w):
            k = w
            while time.monotonic() < stop:
                lk = c.lock("bench:%d" % (k % resources), ttl=5.0)
                if lk.acquire(blocking=False):
                    lk.release()
                    done[w] += 1
                k += threads
        per0 = [cpu_of([p]) for p in pids]
        cpu0, t0 = cpu_of(pids), time.monotonic()
        ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt, cpu = time.monotonic() - t0, cpu_of(pids) - cpu0
        busiest = max(cpu_of([p]) - c0 for p, c0 in zip(pids, per0))
    n = sum(done)
    return n / dt, cpu / n * 1e6 if n else float("nan"), cpu / dt, idle, busiest / n * 1e6 if n else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--resources", type=int, default=2000)
    a = ap.parse_args()
    rows = []
    with nodes.Cluster(count=3) as single:
        rows.append(("3 single servers",) + run(single.urls, [single.pid(i) for i in range(3)], a.seconds,
                                                 a.threads, a.resources))
    for shards in (2, 3):
        made = []
        try:
            for _ in range(3):
                made.append(rcluster.RedisCluster(shards=shards).__enter__())
            pids = [rc.nodes.pid(i) for rc in made for i in range(len(rc))]
            rows.append(("3 clusters x %d shards" % shards,) + run([rc.url() for rc in made], pids, a.seconds,
                                                                  a.threads, a.resources))
        finally:
            for rc in made:
                rc.close()
    base = rows[0]
    print("%-24s %10s %6s %15s %11s %11s %14s" % ("nodes", "acq+rel/s", "ratio", "node CPU us/acq",
                                                     "node CPU/s", "idle CPU/s", "busiest us/acq"))
    for name, rate, us, cps, idle, top in rows:
        print("%-24s %10.0f %6.2f %15.1f %11.2f %11.2f %14.1f" % (name, rate, rate / base[1], us, cps, idle, top))


if __name__ == "__main__":
    main()
