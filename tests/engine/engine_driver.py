#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs the engine tests that need a node made slow, killed or paused while a C program uses the
nodes: starts real nodes with the shared harness, puts the fault proxy (tests/safety/proxy.py)
in front of one, drives the faults, and afterwards checks every node directly (not through the
proxy) for keys left behind.

  engine_driver.py slow   TEST_SLOW [--cycles 200] [--delay-ms 20]
  engine_driver.py stress TEST_STRESS [--cycles N] [--threads 8] [--tls] [--phases slow,flap,pause]
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))
sys.path.insert(0, os.path.join(ROOT, "tests", "safety"))
import nodes  # noqa: E402
from proxy import Proxy  # noqa: E402

SETTLE_S = 2.0   # far less than the 30 s TTL the stress program uses: a key still there was left behind


def proxied_url(cluster, i, proxy):
    url = cluster.url(i)
    scheme = url.split("://")[0]
    return "%s://127.0.0.1:%d" % (scheme, proxy.port)


def count_keys(cluster, pattern):
    return [len(cluster.keys(i, pattern)) for i in range(len(cluster.urls))]


def run(cmd, env):
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(p.stdout)
    return p.returncode


def slow(args):
    with nodes.Cluster(5, kind="mixed") as c, Proxy(c.port(0)) as p:
        p.set_mode("latency", ms=args.delay_ms, jitter_ms=0)
        urls = [proxied_url(c, 0, p)] + c.urls[1:]
        env = dict(os.environ, REDLOCK_TEST_NODES=",".join(urls))
        rc = run([args.program, str(args.cycles), "0", str(args.delay_ms)], env)
        time.sleep(max(0.5, 5 * args.delay_ms / 1000))
        left = count_keys(c, "slow-*")
        print("keys left per node (node 0 is the slow one): %s" % left)
        if any(left):
            print("FAIL: released keys left behind")
            return 1
        return rc


def fault_loop(stop, phase, c, p, faults):
    rng = random.Random(7)
    while not stop.is_set():
        if phase in ("flap", "pause"):
            faults.append(phase)
        if phase == "flap":
            time.sleep(rng.uniform(0.3, 0.6))
            c.kill(1)
            time.sleep(rng.uniform(0.05, 0.2))
            c.restart(1)
        elif phase == "pause":
            time.sleep(rng.uniform(0.2, 0.5))
            c.pause(2)
            # Well under the stall limit (4 node timeouts + connect timeout, 600 ms here): the
            # connection is kept, so what was queued on it runs in order when the node resumes.
            # With 0.25 s, a client slowed by a sanitizer on a loaded machine once reached the
            # limit, dropped the connection, and a release on the new one overtook its SET (the
            # known gap of algorithm.md): keys were left for their TTL.
            time.sleep(rng.uniform(0.05, 0.15))
            c.resume(2)
        else:
            stop.wait(0.1)


def stress(args):
    tls = None
    certs = None
    if args.tls:
        certs = tempfile.mkdtemp(prefix="redlock-certs-")
        subprocess.run(["sh", os.path.join(ROOT, "tests", "c", "make-test-certs.sh"), certs], check=True,
                       stdout=subprocess.DEVNULL)
        tls = {"cert": certs + "/server.crt", "key": certs + "/server.key", "ca": certs + "/ca.crt"}
    failed = 0
    with nodes.Cluster(5, kind="mixed", tls=tls) as c, Proxy(c.port(0)) as p:
        urls = [proxied_url(c, 0, p)] + c.urls[1:]
        env = dict(os.environ, REDLOCK_TEST_NODES=",".join(urls))
        if certs:
            env["REDLOCK_TEST_CA"] = certs + "/ca.crt"
        for phase in args.phases.split(","):
            p.set_mode("latency", ms=20, jitter_ms=0) if phase == "slow" else p.set_mode("pass")
            prefix = "stress-%s-%s" % ("tls" if args.tls else "tcp", phase)
            stop = threading.Event()
            faults = []
            t = threading.Thread(target=fault_loop, args=(stop, phase, c, p, faults), daemon=True)
            t.start()
            started = time.monotonic()
            rc = run([args.program, str(args.threads), str(args.cycles), prefix], env)
            stop.set()
            t.join()
            for i in range(len(c.urls)):
                if c.is_paused(i):
                    c.resume(i)
                if not c.is_running(i):
                    c.restart(i)
            time.sleep(SETTLE_S)
            left = count_keys(c, prefix + "-*")
            print("phase %s (%s): %.1f s, %d faults, keys left per node after %.1f s: %s" % (
                phase, "TLS" if args.tls else "TCP", time.monotonic() - started, len(faults), SETTLE_S, left))
            if phase in ("flap", "pause") and not faults:
                print("FAIL: phase %s ran no fault (too few cycles?)" % phase)
                failed += 1
            elif rc != 0 or any(left):
                print("FAIL: phase %s" % phase)
                for i, n in enumerate(left):
                    if n:   # which keys, and what they hold: a lock's value, or the waiters' queue
                        names = sorted(c.keys(i, prefix + "-*"))[:8]
                        print("  node %d: %s" % (i, ", ".join("%s (%s, ttl %s ms)" % (
                            k, c.cmd(i, "TYPE", k), c.cmd(i, "PTTL", k)) for k in names)))
                failed += 1
    print("%d passed, %d failed" % (len(args.phases.split(",")) - failed, failed))
    return 1 if failed else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("slow", "stress"))
    ap.add_argument("program")
    ap.add_argument("--cycles", type=int, default=None)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--delay-ms", type=int, default=20)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--phases", default="slow,flap,pause")
    args = ap.parse_args(argv)
    if args.what == "slow":
        args.cycles = args.cycles or 200
        return slow(args)
    args.cycles = args.cycles or int(os.environ.get("REDLOCK_STRESS_CYCLES", "4000"))
    return stress(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
