#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The election mode of the safety checker: reads the logs of client.c --mode elect (campaigners
and observers) and of the fault injector from one run directory. check.py RUN_DIR comes here when
the clients ran in election mode. Times are CLOCK_MONOTONIC nanoseconds.

Client log lines (client.c, run_elect):
  START  id t pid=P mode=elect role=campaigner|observer ttl=MS drift_ms=D hold=MS margin=MS wait=MS
         nodes=N node_timeout=MS connect_timeout=MS
  LEAD   id seq t_call t_ret valid_until term     campaign returned 0: leader with this term
  EXT    id seq t valid_until automatic           the election's lock was extended
  LOST   id seq t code NAME is_held message       the lost callback
  EWRITE id seq t_check t_at t_done term ACCEPT|REJECT highest_before
                                                  a leader's write to the fenced store (accepted
                                                  when term >= the highest stored; t_at is read
                                                  under the store's flock: the store's order)
  RESIGN id seq t_call t_ret rc NAME
  EFAIL  id seq t_call t_ret rc NAME message      campaign failed
  SEEN   id t_call t_ret present term revision value   what observe returned
  OFAIL  id t rc NAME message                     observe failed (not a timeout)
Fault log: as check.py; the election tests add client-kill (SIGKILL of a client).

Checks (each failure is a violation):
  overlap        two leaderships' windows [t_ret of campaign, min(valid_until, resign call)]
                 intersect (valid_until: the latest logged, by LEAD or EXT)
  term order     terms, in the order in which the campaigns returned, do not strictly increase
  fresh write refused  the fenced store refused a leader's write while the leader was inside its
                 validity (t_at < valid_until): someone stored a higher term meanwhile
  stale write accepted an accepted write of a lower term after one of a higher term
  observer order an observer's sequence goes back: a lower term, a lower or equal revision of the
                 same term, or a leader of term T after "none" after T
  phantom leader an observer saw a leader (term, value) that no campaign returned
  leaderless     after a leader was killed or stopped (client-kill, client-stop), the next
                 leadership began later than TTL + 2 x (node timeout + connect timeout) + the
                 campaigners' retry jitter + SLACK after the fault
Reported: late writes (accepted after the writer's validity: a leader that overran its lease while
nobody newer had written), observers' states, the longest leaderless stretch after a fault.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

SLACK_NS = 1_500_000_000     # a loaded 2-core machine: scheduling, not the algorithm
JITTER_MS = 200              # the library's default retry jitter


@dataclass
class Lead:
    client: int
    seq: int
    t_call: int
    t_ret: int
    valid_until: int
    term: int
    resign_call: int | None = None
    resign_rc: int | None = None
    lost: tuple | None = None
    writes: list = field(default_factory=list)

    @property
    def end(self):
        return self.valid_until if self.resign_call is None else min(self.valid_until, self.resign_call)


@dataclass
class ElectResult:
    run_dir: str
    leads: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)      # observer id -> [(t_ret, present, term, rev, value)]
    ofails: list = field(default_factory=list)
    faults: list = field(default_factory=list)    # (t, kind, target)
    clients: dict = field(default_factory=dict)
    overlaps: list = field(default_factory=list)
    term_order: list = field(default_factory=list)
    fresh_refused: list = field(default_factory=list)
    stale_accepted: list = field(default_factory=list)
    observer_order: list = field(default_factory=list)
    phantom: list = field(default_factory=list)
    leaderless: list = field(default_factory=list)   # (fault, gap_ns, bound_ns)
    late_writes: list = field(default_factory=list)
    writes: list = field(default_factory=list)       # (t_at, term, accepted, Lead)

    @property
    def violations(self):
        v = []
        v += ["overlap: client %d seq %d (term %d) and client %d seq %d (term %d)" % (
            a.client, a.seq, a.term, b.client, b.seq, b.term) for a, b in self.overlaps]
        v += ["term order: term %d (client %d) returned after term %d (client %d)" % (
            b.term, b.client, a.term, a.client) for a, b in self.term_order]
        v += ["fresh write refused: client %d term %d at %d, inside its validity" % (
            l.client, term, t) for t, term, l in self.fresh_refused]
        v += ["stale write accepted: term %d after term %d" % (a, b) for a, b in self.stale_accepted]
        v += ["observer %d went back: %s after %s" % (o, b, a) for o, a, b in self.observer_order]
        v += ["observer %d saw a leader no campaign returned: %s" % (o, s) for o, s in self.phantom]
        v += ["leaderless for %.0f ms after %s %s, bound %.0f ms" % (g / 1e6, f[1], f[2], b / 1e6)
              for f, g, b in self.leaderless if g > b]
        return v

    @property
    def ok(self):
        return not self.violations

    def summary(self):
        lines = ["election run %s: %d leaderships, %d terms from %s to %s, %d fenced writes (%d refused)" % (
            self.run_dir, len(self.leads), len({l.term for l in self.leads}),
            min((l.term for l in self.leads), default="-"), max((l.term for l in self.leads), default="-"),
            len(self.writes), sum(1 for w in self.writes if not w[2]))]
        for o, s in sorted(self.seen.items()):
            lines.append("observer %d: %d states seen" % (o, len(s)))
        for f, g, b in self.leaderless:
            lines.append("leaderless after %s %s: %.0f ms (bound %.0f ms)" % (f[1], f[2], g / 1e6, b / 1e6))
        if self.late_writes:
            lines.append("late writes (leader past its validity, nobody newer had written): %d" %
                         len(self.late_writes))
        lines.append("violations: %d" % len(self.violations))
        lines += ["  " + v for v in self.violations[:50]]
        return "\n".join(lines)


def is_elect_run(run_dir):
    for path in glob.glob(os.path.join(run_dir, "client-*.log")):
        with open(path, errors="replace") as f:
            first = f.readline()
        if first.startswith("START ") and " mode=elect " in first:
            return True
    return False


def _kv(parts):
    return dict(p.split("=", 1) for p in parts if "=" in p)


def load(run_dir) -> ElectResult:
    r = ElectResult(run_dir)
    by_key = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "client-*.log"))):
        with open(path, errors="replace") as f:
            for line in f:
                w = line.rstrip("\n").split(" ")
                tag = w[0]
                try:
                    if tag == "START":
                        r.clients[int(w[1])] = _kv(w[3:])
                    elif tag == "LEAD":
                        l = Lead(int(w[1]), int(w[2]), int(w[3]), int(w[4]), int(w[5]), int(w[6]))
                        by_key[(l.client, l.seq)] = l
                        r.leads.append(l)
                    elif tag == "EXT":
                        l = by_key.get((int(w[1]), int(w[2])))
                        if l is not None and int(w[4]) > l.valid_until:
                            l.valid_until = int(w[4])
                    elif tag == "LOST":
                        l = by_key.get((int(w[1]), int(w[2])))
                        if l is not None:
                            l.lost = (int(w[3]), int(w[4]), w[5])
                    elif tag == "EWRITE":
                        l = by_key.get((int(w[1]), int(w[2])))
                        if l is not None:
                            l.writes.append((int(w[4]), int(w[6]), w[7] == "ACCEPT", int(w[5])))
                    elif tag == "RESIGN":
                        l = by_key.get((int(w[1]), int(w[2])))
                        if l is not None:
                            l.resign_call, l.resign_rc = int(w[3]), int(w[5])
                    elif tag == "SEEN":
                        r.seen.setdefault(int(w[1]), []).append(
                            (int(w[3]), int(w[4]), int(w[5]), int(w[6]), " ".join(w[7:])))
                    elif tag == "OFAIL":
                        r.ofails.append(w)
                except (IndexError, ValueError):
                    continue   # a line cut by SIGKILL
    try:
        with open(os.path.join(run_dir, "faults.log")) as f:
            for line in f:
                w = line.split()
                if len(w) >= 3 and w[0] == "FAULT":
                    r.faults.append((int(w[1]), w[2], w[3]))
    except FileNotFoundError:
        pass
    r.leads.sort(key=lambda l: l.t_ret)
    return r


def _later(now, last):
    """observe's order: (present, term, revision); "none" after T after every revision of T."""
    present, term, rev = now
    lp, lt, lr = last
    if present:
        return term > lt or (term == lt and lp and rev > lr)
    return (lp and term >= lt) or term > lt


def analyze(run_dir) -> ElectResult:
    r = load(run_dir)
    leads = r.leads
    for i, a in enumerate(leads):
        for b in leads[i + 1:]:
            if b.t_ret >= a.end:
                continue
            if b.t_ret < a.end and a.t_ret < b.end:
                r.overlaps.append((a, b))
    for a, b in zip(leads, leads[1:]):
        if b.term <= a.term:
            r.term_order.append((a, b))
    for l in leads:
        for t_at, term, accepted, t_check in l.writes:
            r.writes.append((t_at, term, accepted, l))
            if not accepted and t_at < l.valid_until:
                r.fresh_refused.append((t_at, term, l))
            if accepted and t_at > l.valid_until:
                r.late_writes.append((t_at, term, l))
    r.writes.sort(key=lambda x: x[0])
    top = 0
    for t_at, term, accepted, l in r.writes:
        if accepted:
            if term < top:
                r.stale_accepted.append((term, top))
            top = max(top, term)
    values = {(l.term, "c%d" % l.client) for l in leads}
    for o, states in r.seen.items():
        last = (0, 0, 0)
        for t, present, term, rev, value in states:
            cur = (present, term, rev)
            if not _later(cur, last):
                r.observer_order.append((o, last, cur))
            if present and (term, value) not in values:
                r.phantom.append((o, (term, rev, value)))
            last = cur
    for f in r.faults:
        t, kind, target = f
        if kind not in ("client-kill", "client-stop") or not target.startswith("client"):
            continue
        cid = int(target[len("client"):])
        holder = next((l for l in leads if l.client == cid and l.t_ret <= t <= l.end), None)
        if holder is None:
            continue
        nxt = next((l for l in leads if l.t_ret > t and l.client != cid), None)
        c = r.clients.get(cid, {})
        ttl = int(c.get("ttl", 1000))
        timeouts = int(c.get("node_timeout", 50)) + int(c.get("connect_timeout", 200))
        bound = (ttl + 2 * timeouts + JITTER_MS) * 1_000_000 + SLACK_NS
        gap = (nxt.t_ret - t) if nxt is not None else None
        if gap is None:
            r.leaderless.append((f, float("inf"), bound))
        else:
            r.leaderless.append((f, gap, bound))
    return r
