#!/usr/bin/env python3
"""Safety checker: reads the logs of the lock clients (client.c) and of the fault injector from
one run directory and verifies mutual exclusion. Usage: check.py RUN_DIR  (exit 1 on a violation).

Run directory: client-*.log (one per client process), faults.log (optional), counter.
All times are CLOCK_MONOTONIC nanoseconds, shared by every process on the machine.

Client log lines (written by client.c, one write(2) each):
  START id t pid=P ttl=MS drift_ms=D hold=MS margin=MS nodes=N
  ACQ   id seq t_call t_ret valid_until      acquire returned 0
  FAIL  id seq t_call t_ret rc NAME message   acquire failed
  CS    id seq t counter_value_read
  WRITE id seq t_check t_done old new        validity was > margin at t_check, counter written
  SKIP  id seq t_check validity_left_ms      validity too short: no write
  REL   id seq t_call t_ret rc NAME message  release result
  END   id t acquired=N
Fault log lines (written by faults.py):
  FAULT t kind target loses_keys detail...   loses_keys=1: the fault can remove a lock key
  HEAL  t kind target detail...              (a restart without persistence, DEL, PEXPIRE...)

Checks (each failure is a violation):
  overlap        two windows [t_ret of acquire, min(valid_until, t_call of release)] intersect
  lost update    the counter's final value differs from the number of WRITE lines
  validity       the library granted more validity than the TTL allows: valid_until - t_ret >
                 ttl - drift; or, for a client making one attempt per call (wait=0), whose
                 attempt starts right after t_call, valid_until - t_call > ttl - drift +
                 CALL_SLACK (the client may be descheduled between its clock reading and the
                 library's; with retries the attempt's start is unknown)
  unexplained ELOST  a release said REDLOCK_ELOST although it was called within the validity and
                 no key-losing fault happened since the acquire call
Reported, not violations: writes that completed after valid_until (the client itself overran its
lease: assumption 5 of docs/algorithm.md), and the longest unavailability: the longest stretch
during which some client was inside an acquire call and nobody held the lock.
"""
from __future__ import annotations

import glob
import os
import sys
from collections import Counter
from dataclasses import dataclass, field

ELOST = -6
CALL_SLACK_NS = 25_000_000   # see "validity" above: scheduling, never a real round trip


@dataclass
class Window:
    client: int
    seq: int
    t_call: int
    t_acq: int
    valid_until: int
    rel_call: int | None = None
    rel_ret: int | None = None
    rel_rc: int | None = None
    wrote: bool = False
    write_done: int | None = None

    @property
    def end(self):
        """End of the window in which this client may act as the owner."""
        return self.valid_until if self.rel_call is None else min(self.valid_until, self.rel_call)


@dataclass
class Fault:
    t: int
    kind: str
    target: str
    loses_keys: bool
    heal: bool
    detail: str = ""


@dataclass
class Result:
    run_dir: str
    windows: list = field(default_factory=list)
    fails: list = field(default_factory=list)        # (client, seq, t_call, t_ret, rc, name, msg)
    faults: list = field(default_factory=list)
    clients: dict = field(default_factory=dict)      # id -> START fields
    writes: int = 0
    skips: int = 0
    counter: int | None = None
    overlaps: list = field(default_factory=list)     # (Window, Window)
    validity_excess: list = field(default_factory=list)
    unexplained_elost: list = field(default_factory=list)
    late_writes: list = field(default_factory=list)
    max_call_excess_ns: int | None = None            # largest valid_until - t_call - (ttl - drift)
    longest_unavailable_ns: int = 0
    longest_unavailable_at: int | None = None
    t0: int = 0

    @property
    def lost_updates(self):
        return None if self.counter is None else self.writes - self.counter

    @property
    def violations(self):
        v = []
        for a, b in self.overlaps:
            v.append("overlap: client %d #%d [%s, %s] and client %d #%d [%s, %s]" % (
                a.client, a.seq, self.rel(a.t_acq), self.rel(a.end),
                b.client, b.seq, self.rel(b.t_acq), self.rel(b.end)))
        if self.counter is not None and self.counter != self.writes:
            v.append("lost update: counter is %d but %d writes were logged" % (self.counter, self.writes))
        for w, allowed in self.validity_excess:
            v.append("validity: client %d #%d valid until %.3f ms after the acquire call, %.3f ms "
                     "after it returned; ttl - drift = %.3f ms" % (
                         w.client, w.seq, (w.valid_until - w.t_call) / 1e6,
                         (w.valid_until - w.t_acq) / 1e6, allowed / 1e6))
        for w in self.unexplained_elost:
            v.append("unexplained ELOST: client %d #%d released at %s, %.3f ms before valid_until, "
                     "and no key-losing fault since %s" % (w.client, w.seq, self.rel(w.rel_call),
                                                           (w.valid_until - w.rel_call) / 1e6,
                                                           self.rel(w.t_call)))
        return v

    @property
    def ok(self):
        return not self.violations

    def rel(self, t):
        return "%.3fs" % ((t - self.t0) / 1e9) if t is not None else "-"

    def releases(self):
        return Counter(w.rel_rc for w in self.windows if w.rel_rc is not None)

    def fail_codes(self):
        return Counter(f[5] for f in self.fails)

    def injected(self):
        return [f for f in self.faults if not f.heal]

    def summary(self):
        rel = self.releases()
        lines = [
            "run: %s" % self.run_dir,
            "clients: %d" % len(self.clients),
            "acquisitions: %d (failed acquire calls: %d%s)" % (
                len(self.windows), len(self.fails),
                "".join(", %s %d" % kv for kv in sorted(self.fail_codes().items()))),
            "releases: %s" % (", ".join("%s %d" % ("OK" if k == 0 else _code_name(k), n)
                                        for k, n in sorted(rel.items(), reverse=True)) or "none"),
            "counter: %s, writes logged: %d, skipped writes: %d" % (self.counter, self.writes, self.skips),
            "faults injected: %d (%s)" % (len(self.injected()), ", ".join(
                "%s %d" % kv for kv in sorted(Counter(f.kind for f in self.injected()).items())) or "none"),
            "writes after valid_until (client overran its lease): %d" % len(self.late_writes),
            "validity past call start + ttl - drift, one-attempt clients: %s" % (
                "max %.3f ms (allowed %.0f ms for scheduling)" % (self.max_call_excess_ns / 1e6,
                                                                 CALL_SLACK_NS / 1e6)
                if self.max_call_excess_ns is not None else "n/a"),
            "longest unavailability: %.1f ms%s" % (
                self.longest_unavailable_ns / 1e6,
                " (ending at %s)" % self.rel(self.longest_unavailable_at)
                if self.longest_unavailable_at else ""),
            "violations: %d" % len(self.violations),
        ]
        lines += ["  " + v for v in self.violations[:50]]
        if len(self.violations) > 50:
            lines.append("  ... %d more" % (len(self.violations) - 50))
        return "\n".join(lines)


_NAMES = {0: "OK", -1: "EINVAL", -2: "ENOMEM", -3: "ENOTACQUIRED", -4: "ENOQUORUM", -5: "EEXPIRED",
          -6: "ELOST", -7: "ETIMEDOUT", -8: "EIO", -9: "ESERVER", -10: "EAUTH", -11: "ETLS",
          -12: "ENOTSUP", -13: "ECANCELED", -14: "ELIMIT", -15: "ESTATE"}


def _code_name(rc):
    return "REDLOCK_" + _NAMES.get(rc, str(rc))


def _parse_kv(parts):
    d = {}
    for p in parts:
        if "=" in p:
            k, v = p.split("=", 1)
            d[k] = v
    return d


def load(run_dir) -> Result:
    r = Result(run_dir=run_dir)
    starts = []
    open_w = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "client-*.log"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                p = line.rstrip("\n").split(" ")
                if not p or len(p) < 3:
                    continue
                tag = p[0]
                cid = int(p[1])
                if tag == "START":
                    d = _parse_kv(p[3:])
                    d["t"] = int(p[2])
                    r.clients[cid] = d
                    starts.append(int(p[2]))
                elif tag == "ACQ":
                    w = Window(cid, int(p[2]), int(p[3]), int(p[4]), int(p[5]))
                    r.windows.append(w)
                    open_w[(cid, w.seq)] = w
                elif tag == "FAIL":
                    r.fails.append((cid, int(p[2]), int(p[3]), int(p[4]), int(p[5]), p[6], " ".join(p[7:])))
                elif tag == "WRITE":
                    r.writes += 1
                    w = open_w.get((cid, int(p[2])))
                    if w is not None:
                        w.wrote = True
                        w.write_done = int(p[4])
                elif tag == "SKIP":
                    r.skips += 1
                elif tag == "REL":
                    w = open_w.get((cid, int(p[2])))
                    if w is not None:
                        w.rel_call, w.rel_ret, w.rel_rc = int(p[3]), int(p[4]), int(p[5])
    fpath = os.path.join(run_dir, "faults.log")
    if os.path.exists(fpath):
        with open(fpath, encoding="utf-8", errors="replace") as f:
            for line in f:
                p = line.rstrip("\n").split(" ")
                if len(p) < 4:
                    continue
                if p[0] == "FAULT":
                    r.faults.append(Fault(int(p[1]), p[2], p[3], p[4] == "1", False, " ".join(p[5:])))
                elif p[0] == "HEAL":
                    r.faults.append(Fault(int(p[1]), p[2], p[3], False, True, " ".join(p[4:])))
    r.faults.sort(key=lambda f: f.t)
    cpath = os.path.join(run_dir, "counter")
    if os.path.exists(cpath):
        with open(cpath) as f:
            s = f.read(32).strip()
            r.counter = int(s) if s else 0
    r.t0 = min(starts) if starts else (min(w.t_call for w in r.windows) if r.windows else 0)
    r.windows.sort(key=lambda w: w.t_acq)
    return r


def _find_overlaps(windows):
    """Every pair of windows that intersect (open intervals: touching ends are not an overlap)."""
    out = []
    active = []      # windows whose end is after the current start
    for w in windows:
        active = [a for a in active if a.end > w.t_acq]
        for a in active:
            if a.client != w.client or a.seq != w.seq:
                out.append((a, w))
        active.append(w)
    return out


def _merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _longest_unavailable(r: Result):
    """Longest stretch inside the union of acquire calls that no holding interval covers."""
    held = _merge([(w.t_acq, min(w.valid_until, w.rel_ret) if w.rel_ret is not None else w.valid_until)
                   for w in r.windows])
    trying = _merge([(w.t_call, w.t_acq) for w in r.windows] + [(f[2], f[3]) for f in r.fails])
    best, at = 0, None
    i = 0
    for s, e in trying:
        # subtract the held intervals from [s, e]
        cur = s
        while i < len(held) and held[i][1] <= cur:
            i += 1
        j = i
        while cur < e:
            if j < len(held) and held[j][0] < e:
                hs, he = held[j]
                if hs > cur and hs - cur > best:
                    best, at = hs - cur, hs
                cur = max(cur, he)
                j += 1
            else:
                if e - cur > best:
                    best, at = e - cur, e
                cur = e
    return best, at


def analyze(run_dir) -> Result:
    r = load(run_dir)
    r.overlaps = _find_overlaps(r.windows)
    for w in r.windows:
        c = r.clients.get(w.client, {})
        if "ttl" in c and "drift_ms" in c:
            # validity_ms is an integer count of ms, so valid_until is never above the true end;
            # 0.5 ms covers the float formatting of the drift.
            allowed = int((float(c["ttl"]) - float(c["drift_ms"])) * 1e6)
            # validity_ms is rounded down, so valid_until never exceeds the library's own end;
            # 0.5 ms covers the drift printed with 3 decimals.
            if w.valid_until - w.t_acq > allowed + 500_000:
                r.validity_excess.append((w, allowed))
            elif c.get("wait") == "0":
                excess = w.valid_until - w.t_call - allowed
                if r.max_call_excess_ns is None or excess > r.max_call_excess_ns:
                    r.max_call_excess_ns = excess
                if excess > CALL_SLACK_NS:
                    r.validity_excess.append((w, allowed))
        if w.wrote and w.write_done is not None and w.write_done > w.valid_until:
            r.late_writes.append(w)
        if w.rel_rc == ELOST and w.rel_call is not None and w.rel_call <= w.valid_until:
            explained = any(f.loses_keys and w.t_call <= f.t <= w.rel_call for f in r.faults)
            if not explained:
                r.unexplained_elost.append(w)
    r.longest_unavailable_ns, r.longest_unavailable_at = _longest_unavailable(r)
    return r


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write("usage: check.py RUN_DIR\n")
        return 2
    r = analyze(argv[0])
    print(r.summary())
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
