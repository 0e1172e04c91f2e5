#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Safety soak: K lock clients (client.c) on 5 local nodes for N seconds while random faults are
injected, then the checker's verdict. Only faults under which Redlock promises mutual exclusion
are drawn (a killed node stays down longer than the TTL, no key is deleted by hand), so any
violation is a finding. Usage:
  tests/safety/soak.py --seconds 1800 [--clients 4] [--seed S] [--dir DIR] [--kind mixed]
                       [--no-fencing]
By default the clients mint fencing tokens and write through the fake fencing storage, client 0
holds for longer than the TTL on auto-extend, and the nodes run with appendfsync always (fencing
tokens need nodes that do not forget their counters: docs/fencing.md). --no-fencing: plain
locks, nodes without persistence (a kill loses every key the node held).
Exit 0 if the checker found no violation. Needs $REDLOCK_SAFETY_CLIENT (or build/).
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetylib as S  # noqa: E402
from proxy import Proxy  # noqa: E402

TTL = 1000            # every client's TTL: the largest TTL, which a killed node must stay down for
PROXIED = (0, 1, 2)   # nodes reached through a proxy; 3 and 4 are reached directly, so that a
                      # killed node is also seen as "connection refused" (reconnect backoff)


class Soak:
    def __init__(self, cluster, run, proxies, rng, log):
        self.c = cluster
        self.run = run
        self.f = S.Faults(run, cluster, proxies)
        self.rng = rng
        self.log = log
        self.busy = {}            # node -> monotonic time its fault ends (None: healing pending)
        self.heals = []           # (due, description, fn)
        self.stopped_clients = set()
        self.threads = []
        self.count = 0

    # -- scheduling ------------------------------------------------------------------------------
    def unhealthy(self):
        now = time.monotonic()
        return [n for n, t in self.busy.items() if t is None or t > now]

    def healthy(self, candidates=range(5)):
        bad = set(self.unhealthy())
        return [n for n in candidates if n not in bad]

    def later(self, delay, what, fn, node=None):
        due = time.monotonic() + delay
        self.heals.append((due, what, fn, node))
        if node is not None:
            self.busy[node] = None          # until the heal has run

    def run_heals(self, everything=False):
        now = time.monotonic()
        keep = []
        for due, what, fn, node in sorted(self.heals, key=lambda h: h[0]):
            if everything or due <= now:
                fn()
                if node is not None:
                    self.busy[node] = 0
            else:
                keep.append((due, what, fn, node))
        self.heals = keep

    def background(self, fn):
        t = threading.Thread(target=fn, daemon=True)
        t.start()
        self.threads.append(t)

    # -- faults -----------------------------------------------------------------------------------
    def inject(self):
        r = self.rng
        kinds = ["kill", "pause", "client-pause", "debug-sleep", "script-flush", "client-stop",
                 "latency", "blackhole", "reset", "truncate", "slice", "majority-kill"]
        weights = [3, 3, 2, 2, 1, 2, 3, 2, 1, 1, 1, 0.3]
        kind = r.choices(kinds, weights)[0]
        # At most two nodes faulty at a time (liveness needs a majority); the rare majority
        # outage is the exception, and only starts when every node is healthy.
        if kind == "majority-kill":
            if self.unhealthy():
                return
            nodes = r.sample(range(5), 3)
            for n in nodes:
                self.f.kill(n)
            down = r.uniform(TTL * 1.2, TTL * 2.5) / 1000
            for n in nodes:
                self.later(down, "restart", lambda n=n: self.f.start(n), n)
            self.count += 1
            return
        if kind == "client-stop":
            free = [cid for cid in self.run.procs if cid not in self.stopped_clients]
            if not free:
                return
            cid = r.choice(free)
            self.f.stop_client(cid)
            self.stopped_clients.add(cid)
            self.later(r.uniform(0.05, 2.5 * TTL / 1000), "cont",
                       lambda: (self.f.cont_client(cid), self.stopped_clients.discard(cid)))
            self.count += 1
            return
        if len(self.unhealthy()) >= 2:
            return
        proxy_kind = kind in ("latency", "blackhole", "reset", "truncate", "slice")
        cands = self.healthy(PROXIED if proxy_kind else range(5))
        if not cands:
            return
        n = r.choice(cands)
        if kind == "kill":
            self.f.kill(n)
            self.later(r.uniform(TTL * 1.2, TTL * 3) / 1000, "restart", lambda: self.f.start(n), n)
        elif kind == "pause":
            self.f.pause(n)
            self.later(r.uniform(0.1, 2.0), "resume", lambda: self.f.resume(n), n)
        elif kind == "client-pause":
            ms = r.randint(100, 1500)
            self.f.cmd(n, "CLIENT", "PAUSE", str(ms), "ALL", kind="client-pause")
            self.busy[n] = time.monotonic() + ms / 1000
        elif kind == "debug-sleep":
            s = round(r.uniform(0.1, 1.5), 2)
            self.busy[n] = time.monotonic() + s + 0.5
            self.background(lambda: self._quiet(lambda: self.f.cmd(n, "DEBUG", "SLEEP", str(s),
                                                                     kind="debug-sleep", timeout=30)))
        elif kind == "script-flush":
            self.f.cmd(n, "SCRIPT", "FLUSH", kind="script-flush")
        elif kind == "latency":
            self.f.proxy(n, "latency", ms=r.randint(5, 80), jitter_ms=r.randint(0, 30))
            self.later(r.uniform(0.5, 3.0), "pass", lambda: self.f.proxy(n, "pass"), n)
        else:       # blackhole, reset, truncate, slice
            self.f.proxy(n, kind)
            self.later(r.uniform(0.3, 2.5), "pass", lambda: self.f.proxy(n, "pass"), n)
        self.count += 1

    def _quiet(self, fn):
        try:
            fn()
        except Exception as e:          # a node killed meanwhile, etc.: logged, not fatal
            self.log("fault action failed: %s" % e)


def soak(seconds, clients=4, seed=None, run_dir=None, kind="mixed", log=print, fencing=True):
    seed = seed if seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    own_dir = run_dir is None
    run_dir = run_dir or tempfile.mkdtemp(prefix="redlock-soak-")
    log("soak: %ds, %d clients, seed %d, fencing %s, logs in %s" % (
        seconds, clients, seed, "on (appendfsync always)" if fencing else "off", run_dir))
    with S.nodes.Cluster(5, kind=kind, persistence="aof-always" if fencing else None) as c:
        proxies = {i: Proxy(c.port(i)).start() for i in PROXIED}
        try:
            urls = [proxies[i].url if i in proxies else c.url(i) for i in range(5)]
            run = S.Run(run_dir, urls, "safety:soak")
            try:
                for cid in range(clients):
                    # Half the clients make one attempt per call, so that the checker can bound
                    # their validity from the call's start; the others use the default retries.
                    extra = dict(wait=0, attempt_gap=20) if cid % 2 else {}
                    extra.update(hold=15, gap=10)
                    if fencing:
                        extra["storage"] = True
                        if cid == 0:
                            # longer than the TTL: only the watchdog's extensions keep it
                            extra.update(auto_extend=True, hold=int(TTL * 1.2), gap=1000)
                    run.spawn(cid, ttl=TTL, duration=seconds + 60, **extra)
                s = Soak(c, run, proxies, rng, log)
                t_end = time.monotonic() + seconds
                next_fault = time.monotonic() + 1.0
                next_report = time.monotonic() + 60
                while time.monotonic() < t_end:
                    s.run_heals()
                    now = time.monotonic()
                    if now >= next_fault:
                        s.inject()
                        next_fault = now + rng.uniform(0.2, 1.5)
                    if now >= next_report:
                        log("soak: %.0fs left, %d faults so far" % (t_end - now, s.count))
                        next_report = now + 60
                    for cid, p in run.procs.items():
                        if p.poll() is not None:
                            raise RuntimeError("client %d died with status %s" % (cid, p.returncode))
                    time.sleep(0.02)
                s.run_heals(everything=True)
                for t in s.threads:
                    t.join(30)
                time.sleep(2.0)           # acquisitions after every fault healed
                run.stop()
                r = run.check()
            finally:
                run.close()
        finally:
            for p in proxies.values():
                p.close()
    log(r.summary())
    if r.ok and own_dir:
        shutil.rmtree(run_dir, ignore_errors=True)
    return r


def main(argv):
    ap = argparse.ArgumentParser(description="Redlock safety soak under random faults")
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("SAFETY_SOAK_SECONDS", "60")))
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--dir", default=None, help="keep the logs here (default: a temp dir, removed if clean)")
    ap.add_argument("--kind", default="mixed", choices=("redis", "valkey", "mixed"))
    ap.add_argument("--no-fencing", dest="fencing", action="store_false",
                    help="plain locks and nodes without persistence (default: fencing tokens, the "
                         "fake fencing storage, one auto-extended client, appendfsync always)")
    a = ap.parse_args(argv)
    r = soak(a.seconds, a.clients, a.seed, a.dir, a.kind, log=lambda m: print(m, flush=True),
             fencing=a.fencing)
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
