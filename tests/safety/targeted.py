#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Targeted fault rows: nodes that lose a holder's keys, by a wipe or by a wall clock stepped
forward (docs/safety.md, "Nodes that forget: the targeted rows"). 5 nodes (Redis and Valkey),
4 lock clients (client.c, fencing tokens on) contend for one lock while an injector watches which
nodes hold the current holder's key and strikes at them:

  wipe          2 of the holder's nodes are wiped: killed and restarted at once without
                persistence (--wipe flushall: FLUSHALL instead)
  clock-step    the wall clocks of 2 of the holder's nodes are stepped 2 s forward (the nodes run
                under the clock shim, clockshift.c); Redis and Valkey expire keys on the wall
                clock, so every key with less than 2 s to live goes at once
  random-steps  the wall clock of a random node is stepped forward by 0.1 to 2 s every 0.2 to 1 s,
                whatever it holds, at most 2 distinct nodes (a minority) within any TTL
  random-wipes  a random node is wiped (as in wipe) every 0.3 to 1.2 s, whatever it holds, at
                most 2 distinct nodes (a minority) within any TTL

The injector strikes only at a holder whose key it sees on 3 or 4 nodes (a majority but not all):
on all 5, 3 copies would remain after losing 2 and no contender could win. Run for a bounded time,
then the checker (check.py) reads the logs. Redlock as published promises nothing once a node
forgets a key its holder relies on (docs/algorithm.md, assumptions 1 and 2); this library's
quarantine (c/src/epoch.c, docs/algorithm.md "Quarantine") keeps such a node out of the vote.

protection: on by default (the library's default options), every row must then be clean. Off
(--no-protection, or REDLOCK_SAFETY_PROTECTION=0): the clients run with --no-quarantine, plain
Redlock, and the first two rows are expected to show violations, by design.
REDLOCK_SAFETY_PROTECTION_OPTS adds client.c options to every client with the protection on
(shell words).

Usage: targeted.py --row wipe|clock-step|random-steps|random-wipes [--seconds 60] [--seed S] [--dir DIR]
                   [--wipe restart|flushall] [--no-protection] [--no-fencing]
Exit 0 if the row's result is the expected one. Needs $REDLOCK_SAFETY_CLIENT (or build/).
"""
from __future__ import annotations

import argparse
import os
import random
import shlex
import socket
import sys
import tempfile
import threading
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetylib as S  # noqa: E402

ROWS = ("wipe", "clock-step", "random-steps", "random-wipes")
RANDOM = ("random-steps", "random-wipes")   # blind to who holds what
BY_DESIGN = ("wipe", "clock-step")   # violations expected without a protection
ENV_PROTECTION = "REDLOCK_SAFETY_PROTECTION"
ENV_PROTECTION_OPTS = "REDLOCK_SAFETY_PROTECTION_OPTS"
NODES = 5
CLIENTS = 4
TTL = 1500            # ms; less than the 2 s step, so a step expires every lock key at once
HOLD = 500            # ms in the critical section: time for a contender to win meanwhile
STEP = 2000           # ms, the targeted clock step
RESOURCE = "safety:targeted"
MIN_STRIKES = 3       # a row goes on past its time until it struck this often (up to 3 x)


def protection_from_env():
    return os.environ.get(ENV_PROTECTION, "1") != "0"


def protection_opts():
    return shlex.split(os.environ.get(ENV_PROTECTION_OPTS, ""))


class Watcher:
    """GET of the lock's key on every node, on one kept connection per node (reopened after an
    error: a restarted node, a late reply). A node that does not answer reads as None."""

    def __init__(self, cluster, key, timeout=0.2):
        self.c = cluster
        self.key = key
        self.timeout = timeout
        self.socks = [None] * cluster.count
        self.files = [None] * cluster.count

    def _close(self, i):
        if self.socks[i] is not None:
            try:
                self.files[i].close()
                self.socks[i].close()
            except OSError:
                pass
        self.socks[i] = self.files[i] = None

    def poll(self):
        req = S.nodes.encode_command(["GET", self.key])
        sent = []
        for i in range(self.c.count):
            try:
                if self.socks[i] is None:
                    s = socket.create_connection(("127.0.0.1", self.c.port(i)), timeout=self.timeout)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self.socks[i], self.files[i] = s, s.makefile("rb")
                self.socks[i].sendall(req)
                sent.append(i)
            except OSError:
                self._close(i)
        out = [None] * self.c.count
        for i in sent:
            try:
                r = S.nodes.read_reply(self.files[i])
                out[i] = r if isinstance(r, str) else None
            except (OSError, ConnectionError):
                self._close(i)
        return out

    def close(self):
        for i in range(self.c.count):
            self._close(i)


class Injector:
    def __init__(self, row, cluster, run, rng, wipe="restart", log=None):
        self.row = row
        self.c = cluster
        self.f = S.Faults(run, cluster)
        self.rng = rng
        self.wipe = wipe
        self.log = log or (lambda *a: None)
        self.holders = Counter()      # holders seen, by the number of nodes holding their key
        self.strikes = []             # (t_ns, holder nodes, struck nodes)
        self.steps = []               # random-steps: (monotonic s, node, ms)

    # -- rows (a) and (b): strike at the holder's nodes ------------------------------------------
    def strike(self, holder_nodes):
        struck = sorted(self.rng.sample(holder_nodes, 2))
        t = S.now_ns()
        if self.row == "wipe":
            # both at once: each restart takes tens of ms
            ths = [threading.Thread(target=self.f.wipe, args=(i, self.wipe)) for i in struck]
            for th in ths:
                th.start()
            for th in ths:
                th.join()
        else:
            for i in struck:
                self.f.step_clock(i, STEP)
        self.strikes.append((t, tuple(holder_nodes), tuple(struck)))
        self.log("strike %d: holder on %s, %s %s" % (len(self.strikes), holder_nodes, self.row, struck))

    def watch(self, seconds, cooldown, min_strikes=0, enough=None):
        """Strike for `seconds`, and on (at most 3 x seconds) until min_strikes were made and
        enough() (if given) is true."""
        w = Watcher(self.c, RESOURCE)
        seen = set()
        pending = None              # (value, nodes) seen once: struck if the next poll agrees
        t0 = time.monotonic()
        end, cap = t0 + seconds, t0 + 3 * seconds
        next_strike = t0 + 1.0      # let the clients get going
        try:
            while True:
                now = time.monotonic()
                if now >= cap:
                    break
                if now >= end and len(self.strikes) >= min_strikes and (enough is None or enough()):
                    break
                vals = w.poll()
                holder = None
                for v, n in Counter(x for x in vals if x).items():
                    if n * 2 > self.c.count:
                        holder = (v, [i for i, x in enumerate(vals) if x == v])
                if holder is None:
                    pending = None
                elif holder[0] not in seen:
                    if pending == holder:
                        # the same nodes twice in a row: not a holder whose SETs are in flight
                        seen.add(holder[0])
                        self.holders[len(holder[1])] += 1
                        if len(holder[1]) < self.c.count and time.monotonic() >= next_strike:
                            self.strike(holder[1])
                            next_strike = time.monotonic() + cooldown
                        pending = None
                    else:
                        pending = holder
                time.sleep(0.002)
        finally:
            w.close()

    # -- rows (c) and (d): random steps or wipes of a minority ---------------------------------
    def random_faults(self, seconds):
        end = time.monotonic() + seconds
        time.sleep(1.0)
        while time.monotonic() < end:
            now = time.monotonic()
            recent = {n for t, n, _ in self.steps if now - t < TTL / 1000.0}
            # at most 2 distinct nodes struck within any TTL: a new node only if fewer than 2
            cands = list(range(self.c.count)) if len(recent) < 2 else sorted(recent)
            node = self.rng.choice(cands)
            if self.row == "random-wipes":
                self.f.wipe(node, self.wipe)
                self.steps.append((now, node, 0))
                self.log("wipe node %d" % node)
                time.sleep(self.rng.uniform(0.3, 1.2))
            else:
                ms = self.rng.randint(100, STEP)
                self.f.step_clock(node, ms)
                self.steps.append((now, node, ms))
                self.log("step node %d +%d ms" % (node, ms))
                time.sleep(self.rng.uniform(0.2, 1.0))


def duplicate_tokens(r):
    """Acquisitions whose fencing token an earlier acquisition already had."""
    c = Counter(w.token for w in r.windows if w.token)
    return sum(k - 1 for k in c.values() if k > 1)


def explained(r):
    """True if every overlap started after a key-losing fault that came after the first holder's
    acquire call: the violations are the injected faults' doing, nothing else's."""
    lossy = [f.t for f in r.faults if f.loses_keys]
    return all(any(a.t_call <= t <= b.t_acq for t in lossy) for a, b in r.overlaps)


def stats(row, r, inj, protection, seconds, seed):
    return {
        "row": row, "seconds": seconds, "seed": seed, "protection": protection,
        "acquisitions": len(r.windows),
        "holders_by_nodes": dict(sorted(inj.holders.items())),
        "strikes": len(inj.strikes), "steps": len(inj.steps),
        "violations": len(r.violations), "overlaps": len(r.overlaps),
        "lost_updates": r.lost_updates, "token_order": len(r.token_order),
        "duplicate_tokens": duplicate_tokens(r),
        "unexplained": len(r.unexplained_elost) + len(r.unexplained_lost),
        "other": len(r.validity_excess) + len(r.ext_excess) + len(r.token_missing),
        "explained": explained(r),
    }


def run_row(row, seconds, run_dir, seed=None, protection=None, wipe="restart", log=None, fencing=True):
    """Runs one row; returns (check.Result, stats dict). fencing=False: the clients take no
    fencing tokens (the checker then judges by validity and lost updates alone)."""
    if row not in ROWS:
        raise ValueError("row is one of %s" % ", ".join(ROWS))
    if protection is None:
        protection = protection_from_env()
    seed = seed if seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    shim = S.find_clockshift() if row in ("clock-step", "random-steps") else None
    extra = protection_opts() if protection else ["--no-quarantine"]
    with S.nodes.Cluster(NODES, kind="mixed", clockshift=shim) as c:
        run = S.Run(run_dir, c.urls, RESOURCE)
        try:
            inj = Injector(row, c, run, rng, wipe=wipe, log=log)
            # Contenders retry every 20 to 60 ms and are woken by releases (REDLOCK_OPT_WAKE), so
            # several attempts meet at each release and split the votes: holders on 3 or 4 nodes.
            for cid in range(CLIENTS):
                run.spawn(cid, ttl=TTL, hold=HOLD, fencing=fencing, wake=True, wait=3 * TTL,
                          retry_delay=20, retry_jitter=40, node_timeout=200, gap=5,
                          duration=seconds + 30, extra_args=extra)
            if row in RANDOM:
                inj.random_faults(seconds)
            else:
                # By design (no protection), the row goes on until the checker sees a second
                # holder (not every strike lets one in before the first releases), up to 3 x.
                enough = None
                if row in BY_DESIGN and not protection:
                    enough = lambda: bool(S.check.analyze(run.dir).overlaps)  # noqa: E731
                inj.watch(seconds, cooldown=(TTL + HOLD) / 1000.0, min_strikes=MIN_STRIKES, enough=enough)
            run.stop()
            r = run.check()
        finally:
            run.close()
    st = stats(row, r, inj, protection, seconds, seed)
    st["fencing"] = fencing
    return r, st


def verdict(st, r):
    """The row's expected result: None if met, else why not."""
    if st["other"] or st["unexplained"]:
        return "violations a lost key does not explain (validity, tokens missing, unexplained loss)"
    if not st["explained"]:
        return "an overlap began with no key-losing fault inside it"
    if st["row"] in BY_DESIGN and not st["protection"]:
        if not st["strikes"]:
            return "no holder on 3 or 4 nodes was seen: nothing was struck"
        if not st["overlaps"]:
            return "no overlap: the checker saw no double holder (by design, one was expected)"
        return None
    if st["row"] in RANDOM:
        if not st["steps"]:
            return "no node was struck"
        if not st["protection"]:
            return None     # violations possible, only the kind is checked (test_targeted.py)
    if st["row"] in BY_DESIGN and not st["strikes"]:
        return "no holder on 3 or 4 nodes was seen: nothing was struck"
    if r.violations:
        return "violations: %d" % len(r.violations)
    return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--row", choices=ROWS, required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--dir", help="run directory (kept); default: a temporary one, removed")
    ap.add_argument("--wipe", choices=("restart", "flushall"), default="restart")
    ap.add_argument("--no-protection", dest="protection", action="store_false", default=protection_from_env())
    ap.add_argument("--no-fencing", dest="fencing", action="store_false", default=True,
                    help="the clients take no fencing tokens")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    d = a.dir or tempfile.mkdtemp(prefix="redlock-targeted-")
    log = (lambda m: print(m, flush=True)) if a.verbose else None
    r, st = run_row(a.row, a.seconds, d, seed=a.seed, protection=a.protection, wipe=a.wipe, log=log,
                    fencing=a.fencing)
    print(r.summary())
    print(" ".join("%s=%s" % kv for kv in st.items()))
    why = verdict(st, r)
    print("expected result" if why is None else "NOT the expected result: " + why)
    if not a.dir and why is None:
        import shutil
        shutil.rmtree(d, ignore_errors=True)
    return 0 if why is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
