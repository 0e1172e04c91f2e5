#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Lock throughput with each of 3 Redlock nodes a single server, then a cluster of 2 shards,
then 3 (docs/performance.md, "A cluster as a node"), on Redis and on Valkey. Many threads lock
and unlock many resources through one client; the nodes' CPU (utime + stime of every server
process, from /proc) and the client's own (this process's) are divided by the acquisitions, and
the whole machine's busy CPU (/proc/stat) is shown against its core count: when client and
nodes together use every core, the client's rate is the machine's limit, not the nodes'.
Everything runs on this machine, so the numbers are ratios against the single-server run of the
same invocation, not capacities.

    bench/cluster_scale.py [--seconds 5] [--threads 8] [--resources 2000] [--kind both]
    bench/cluster_scale.py --smoke     # a second per row, Redis only: the script still works

make bench-cluster runs the full form.
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


def own_cpu():
    t = os.times()
    return t.user + t.system


def machine_busy():
    """CPU-seconds the whole machine has spent busy (every core, every process)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)   # idle + iowait
    return (sum(v[:8]) - idle) / TICK


def run(urls, pids, seconds, threads, resources, idle_s=1.0):
    with redlock.Redlock(urls, node_timeout=1.0, retry_count=0) as c:
        for k in range(resources):   # warm-up: connections and slot maps
            lk = c.lock("bench:%d" % k, ttl=5.0)
            if lk.acquire(blocking=False):
                lk.release()
        i0, it0 = cpu_of(pids), time.monotonic()
        time.sleep(idle_s)   # the nodes' own background work (cluster bus, cron), for comparison
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
        cpu0, own0, busy0, t0 = cpu_of(pids), own_cpu(), machine_busy(), time.monotonic()
        ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt, cpu = time.monotonic() - t0, cpu_of(pids) - cpu0
        own, busy = own_cpu() - own0, machine_busy() - busy0
        busiest = max(cpu_of([p]) - c0 for p, c0 in zip(pids, per0))
    n = sum(done)
    per = (lambda x: x / n * 1e6) if n else (lambda x: float("nan"))
    return {"rate": n / dt, "acquired": n, "node_us": per(cpu), "node_cps": cpu / dt, "idle_cps": idle,
            "busiest_us": per(busiest), "client_us": per(own), "client_cps": own / dt,
            "machine_cps": busy / dt}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--resources", type=int, default=2000)
    ap.add_argument("--kind", choices=("redis", "valkey", "both"), default="both")
    ap.add_argument("--smoke", action="store_true", help="a second per row, Redis only, 2 shards at most")
    a = ap.parse_args(argv)
    kinds = ["redis", "valkey"] if a.kind == "both" else [a.kind]
    shard_counts = (2, 3)
    idle_s = 1.0
    if a.smoke:
        a.seconds, a.resources, idle_s, kinds, shard_counts = 1.0, 200, 0.2, kinds[:1], (2,)
    ncpu = os.cpu_count()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("%s, %d CPUs, load average %s before the runs" % (time.strftime("%Y-%m-%d %H:%M %Z"), ncpu, load))
    rows = []
    for kind in kinds:
        with nodes.Cluster(count=3, kind=kind) as single:
            rows.append((kind, "3 single servers", run(single.urls, [single.pid(i) for i in range(3)], a.seconds,
                                                      a.threads, a.resources, idle_s)))
        for shards in shard_counts:
            made = rcluster.start_all([rcluster.RedisCluster(shards=shards, kind=kind) for _ in range(3)])
            try:
                pids = [rc.nodes.pid(i) for rc in made for i in range(len(rc))]
                rows.append((kind, "3 clusters x %d shards" % shards,
                             run([rc.url() for rc in made], pids, a.seconds, a.threads, a.resources, idle_s)))
            finally:
                for rc in made:
                    rc.close()
    print("%-7s %-22s %9s %6s %9s %9s %9s %9s %9s %9s" % (
        "kind", "nodes", "acq+rel/s", "ratio", "node us", "busiest", "client us", "node", "client",
        "machine"))
    print("%-7s %-22s %9s %6s %9s %9s %9s %9s %9s %9s" % (
        "", "", "", "", "/acq", "us/acq", "/acq", "CPU-s/s", "CPU-s/s", "CPU-s/s"))
    for kind, name, r in rows:
        base = next(x for k, n, x in rows if k == kind)
        print("%-7s %-22s %9.0f %6.2f %9.1f %9.1f %9.1f %9.2f %9.2f %9.2f" % (
            kind, name, r["rate"], r["rate"] / base["rate"], r["node_us"], r["busiest_us"], r["client_us"],
            r["node_cps"], r["client_cps"], r["machine_cps"]))
    print("node CPU-s/s at rest (cluster bus, cron): %s" % ", ".join("%.3f" % r["idle_cps"] for _, _, r in rows))
    print("machine CPU-s/s is every process's busy time over the run; this machine has %d" % ncpu)
    return rows


if __name__ == "__main__":
    main()
