#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Safety checker: reads the logs of the lock clients (client.c) and of the fault injector from
one run directory and verifies mutual exclusion. Usage: check.py RUN_DIR  (exit 1 on a violation).

Run directory: client-*.log (one per client process), faults.log (optional), counter, storage
(optional: the fake fencing storage, "highest_token accepted_writes").
All times are CLOCK_MONOTONIC nanoseconds, shared by every process on the machine.

Client log lines (written by client.c, one write(2) each):
  START id t pid=P ttl=MS drift_ms=D hold=MS margin=MS wait=MS nodes=N fencing=0|1 storage=0|1
        auto_extend=0|1 pre_write=MS
  ACQ   id seq t_call t_ret valid_until [token]  acquire returned 0; token: the fencing token (0
                                             when fencing is off; absent in older logs)
  FAIL  id seq t_call t_ret rc NAME message   acquire failed
  CS    id seq t counter_value_read
  PRE   id seq t_check validity_left_ms       validity was > margin; --pre-write sleep follows
  FENCE id seq t_begin t_at t_done token ACCEPT|REJECT highest_before
                                             the write through the fake fencing storage; t_at is
                                             read under the storage's flock (the storage's order)
  WRITE id seq t_check t_done old new        validity was > margin at t_check, counter written
                                             (with the storage: only after it accepted)
  SKIP  id seq t_check validity_left_ms      validity too short: no write
  EXT   id seq t valid_until automatic       the lock was extended (auto-extend); new validity
  LOST  id seq t code NAME is_held message   the auto-extend lost callback
  AEFAIL id seq t rc NAME                    redlock_lock_auto_extend failed
  REL   id seq t_call t_ret rc NAME message  release result
  END   id t acquired=N
  MODE  id rw write_every=N                  --mode rw: a read-write lock client
  RW    id seq R|W                           --mode rw: the side the ACQ before it took
  (START mode=multi: a multi-resource lock on {R, R:pair}; its windows are checked as a mutex's,
   against every other client on R, whichever order it listed the set in)
  BGHELD id 0 t N                            --background N: all N held (on auto-extend)
  BGWIN  id K t_acq valid_until              --sample S: background lock K (K % S == 0) held
                                             from t_acq, for the whole run unless lost
  BGLOST id seq t code NAME resource message  a background lock lost (its callback)
  BGEND  id seq t total held lost            the background locks counted, then released
  TAKE   id seq t_call t_ret rc holder K valid_until
                                             --take: one attempt at background lock K of client
                                             holder; valid_until 0 unless rc is 0 (then it was
                                             released at once)
Fault log lines (written by faults.py):
  FAULT t kind target loses_keys detail...   loses_keys=1: the fault can remove a lock key
  HEAL  t kind target detail...              (a restart without persistence, DEL, PEXPIRE...)

Checks (each failure is a violation):
  overlap        two windows [t_ret of acquire, min(valid_until, t_call of release)] intersect
                 (valid_until: the latest one logged, by ACQ or EXT), unless both are a read
                 lock's (RW ... R): with a read-write lock, a writer overlapping anyone inside
                 both validities is the violation
  lost update    the counter's final value differs from the number of WRITE lines
  validity       the library granted more validity than the TTL allows: valid_until - t_ret >
                 ttl - drift; or, for a client making one attempt per call (wait=0), whose
                 attempt starts right after t_call, valid_until - t_call > ttl - drift +
                 CALL_SLACK (the client may be descheduled between its clock reading and the
                 library's; with retries the attempt's start is unknown)
                 An extension must not be valid longer than ttl - drift after it was logged.
  unexplained ELOST  a release said REDLOCK_ELOST although it was called within the validity and
                 no key-losing fault happened since the acquire call; likewise a LOST (the
                 auto-extend watchdog's callback, any code) logged before the validity ran out
  token order    with fencing: every acquisition has a token >= 1, and the tokens, in the order in
                 which the acquire calls returned, strictly increase (readers' tokens, the
                 counter as it was, are left out)
  stale write accepted  the fencing storage accepted a write from a holder after it had accepted
                 one from a holder that acquired later (by acquire-return time, not by token)
  fresh write refused   the storage refused a write that it judged (t_at) while the writer was
                 still within its validity: possible only with repeated or disordered tokens or
                 an overlap
  storage mismatch  the storage's count of accepted writes or its highest token differs from the
                 log (accepted FENCE lines, their largest token)
  too many holders  semaphore mode (START mode=sem limit=L): more than L windows contain one
                 instant. Replaces "overlap" (up to L holders at once are the point) and
                 "lost update" (semaphore clients write no counter)
  held lock taken  a TAKE got a sampled background lock (BGWIN) inside the holder's window:
                 from its t_acq to its BGEND (the releases follow it), or to its BGLOST
Reported, not violations: writes that completed after valid_until (the client itself overran its
lease: assumption 5 of docs/algorithm.md); fenced writes that the storage accepted after the
writer's valid_until (a holder that overran its lease while no later holder had written yet:
fencing cannot refuse those, nothing newer has reached the storage); and the longest
unavailability: the longest stretch during which some client was inside an acquire call and
nobody held the lock.
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
    token: int | None = None          # None: not logged (older client)
    acq_valid_until: int = 0          # valid_until as of the acquisition (before extensions)
    extensions: int = 0
    store: "Store | None" = None
    lost: tuple | None = None         # (t, code, name) from the auto-extend lost callback
    kind: str = "X"                   # "R" or "W": a side of a read-write lock (RW); "X" a mutex

    @property
    def end(self):
        """End of the window in which this client may act as the owner."""
        return self.valid_until if self.rel_call is None else min(self.valid_until, self.rel_call)


@dataclass
class Store:
    """One write through the fake fencing storage."""
    client: int
    seq: int
    t_begin: int
    t_at: int
    t_done: int
    token: int
    accepted: bool
    before: int
    window: "Window | None" = None


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
    extensions: list = field(default_factory=list)   # (Window, t_ext, valid_until)
    ext_excess: list = field(default_factory=list)   # (Window, t_ext, valid_until, allowed)
    unexplained_lost: list = field(default_factory=list)   # Windows with a LOST before valid_until
    stores: list = field(default_factory=list)        # Store, in the storage's order (t_at)
    storage: tuple | None = None                      # (highest, accepted) read from the file
    token_missing: list = field(default_factory=list)  # fencing windows without a token
    token_order: list = field(default_factory=list)    # (earlier Window, later Window)
    stale_accepted: list = field(default_factory=list)  # (Store, Store of the later holder before it)
    fresh_refused: list = field(default_factory=list)   # Store
    storage_mismatch: list = field(default_factory=list)  # messages
    expired_accepted: list = field(default_factory=list)  # Store accepted after its valid_until
    max_call_excess_ns: int | None = None            # largest valid_until - t_call - (ttl - drift)
    longest_unavailable_ns: int = 0
    longest_unavailable_at: int | None = None
    t0: int = 0
    sem_limit: int | None = None                     # semaphore mode: L (None: the mutex)
    sem_excess: list = field(default_factory=list)   # (t, [Window...]) more than L inside at t
    bg_windows: dict = field(default_factory=dict)   # (holder, K) -> [t_acq, end or None]
    bg_lost: dict = field(default_factory=dict)      # (holder, K) -> t of BGLOST
    bg_end: dict = field(default_factory=dict)       # holder -> t of BGEND
    takes: list = field(default_factory=list)        # (cid, seq, t_call, t_ret, rc, holder, K, vu)
    taken: list = field(default_factory=list)        # the takes inside the holder's window
    takes_while_held: int = 0

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
        for t, ws in self.sem_excess:
            v.append("too many holders: %d inside their validities at %s, limit %d: %s" % (
                len(ws), self.rel(t), self.sem_limit,
                ", ".join("client %d #%d [%s, %s]" % (w.client, w.seq, self.rel(w.t_acq), self.rel(w.end))
                          for w in ws)))
        if self.counter is not None and self.counter != self.writes:
            v.append("lost update: counter is %d but %d writes were logged" % (self.counter, self.writes))
        for w, allowed in self.validity_excess:
            v.append("validity: client %d #%d valid until %.3f ms after the acquire call, %.3f ms "
                     "after it returned; ttl - drift = %.3f ms" % (
                         w.client, w.seq, (w.acq_valid_until - w.t_call) / 1e6,
                         (w.acq_valid_until - w.t_acq) / 1e6, allowed / 1e6))
        for w, t, vu, allowed in self.ext_excess:
            v.append("validity: client %d #%d extended at %s, valid for %.3f ms; ttl - drift = %.3f ms" % (
                w.client, w.seq, self.rel(t), (vu - t) / 1e6, allowed / 1e6))
        for w in self.unexplained_elost:
            v.append("unexplained ELOST: client %d #%d released at %s, %.3f ms before valid_until, "
                     "and no key-losing fault since %s" % (w.client, w.seq, self.rel(w.rel_call),
                                                           (w.valid_until - w.rel_call) / 1e6,
                                                           self.rel(w.t_call)))
        for w in self.unexplained_lost:
            v.append("unexplained loss: client %d #%d: auto-extend reported %s at %s, %.3f ms before "
                     "valid_until, and no key-losing fault since %s" % (
                         w.client, w.seq, w.lost[2], self.rel(w.lost[0]),
                         (w.valid_until - w.lost[0]) / 1e6, self.rel(w.t_call)))
        for w in self.token_missing:
            v.append("token: client %d #%d acquired with fencing on but logged token %s" % (
                w.client, w.seq, w.token))
        for a, b in self.token_order:
            v.append("token order: client %d #%d (returned at %s) has token %d, after client %d #%d "
                     "(returned at %s) with token %d%s" % (
                         b.client, b.seq, self.rel(b.t_acq), b.token, a.client, a.seq,
                         self.rel(a.t_acq), a.token, " (their windows overlap)" if a.end > b.t_acq else ""))
        for s, newer in self.stale_accepted:
            v.append("stale write accepted: storage accepted client %d #%d (token %d) at %s after it had "
                     "accepted client %d #%d (token %d, acquired later) at %s" % (
                         s.client, s.seq, s.token, self.rel(s.t_at), newer.client, newer.seq,
                         newer.token, self.rel(newer.t_at)))
        for s in self.fresh_refused:
            v.append("fresh write refused: storage refused client %d #%d (token %d, stored %d) at %s, "
                     "%.3f ms before its valid_until" % (
                         s.client, s.seq, s.token, s.before, self.rel(s.t_at),
                         (s.window.valid_until - s.t_at) / 1e6))
        v += ["storage mismatch: " + m for m in self.storage_mismatch]
        for t in self.taken:
            start, end = self.bg_windows[(t[5], t[6])]
            v.append("held lock taken: client %d #%d got background lock %d of client %d at %s, valid "
                     "until %s, while client %d held it [%s, %s]" % (
                         t[0], t[1], t[6], t[5], self.rel(t[3]), self.rel(t[7]), t[5], self.rel(start),
                         self.rel(end)))
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
        ]
        if self.sem_limit is not None:
            lines.append("semaphore: limit %d, most holders at once: %d, instants over the limit: %d" % (
                self.sem_limit, _most_at_once(self.windows), len(self.sem_excess)))
        fenced = [w for w in self.windows if w.token is not None and w.token > 0]
        if fenced or self.token_missing:
            lines.append("fencing: %d acquisitions with a token (from %s to %s), token order violations: %d" % (
                len(fenced), fenced[0].token if fenced else "-", fenced[-1].token if fenced else "-",
                len(self.token_order) + len(self.token_missing)))
        if self.stores or (self.storage is not None and self.storage != (0, 0)):
            acc = [s for s in self.stores if s.accepted]
            rej = [s for s in self.stores if not s.accepted]
            lines.append("fencing storage: %d writes accepted, %d refused (%d of them from a holder past "
                         "its valid_until); stale writes accepted: %d; fresh writes refused: %d; "
                         "accepted after the writer's valid_until with nothing newer stored: %d; stored: %s" % (
                             len(acc), len(rej),
                             sum(1 for s in rej if s.window and s.t_at > s.window.valid_until),
                             len(self.stale_accepted), len(self.fresh_refused), len(self.expired_accepted),
                             "highest token %d, %d writes" % self.storage if self.storage else "n/a"))
        exts = sum(w.extensions for w in self.windows)
        losses = Counter(w.lost[2] for w in self.windows if w.lost)
        if exts or losses:
            lines.append("auto-extend: %d extensions; losses reported: %s" % (
                exts, ", ".join("%s %d" % kv for kv in sorted(losses.items())) or "none"))
        if self.bg_windows or self.takes:
            holders = sorted({h for h, _ in self.bg_windows})
            lines.append("held locks sampled: %d background locks of client %s; tries on them while "
                         "held: %d (refused %d), taken while held: %d; tries in all: %d" % (
                             len(self.bg_windows), ",".join(map(str, holders)) or "-",
                             self.takes_while_held, self.takes_while_held - len(self.taken),
                             len(self.taken), len(self.takes)))
        lines += [
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
                    w.acq_valid_until = w.valid_until
                    if len(p) > 6:
                        w.token = int(p[6])
                    r.windows.append(w)
                    open_w[(cid, w.seq)] = w
                elif tag == "RW":
                    w = open_w.get((cid, int(p[2])))
                    if w is not None:
                        w.kind = p[3]
                elif tag == "EXT":
                    w = open_w.get((cid, int(p[2])))
                    if w is not None:
                        t, vu = int(p[3]), int(p[4])
                        w.extensions += 1
                        r.extensions.append((w, t, vu))
                        w.valid_until = max(w.valid_until, vu)
                elif tag == "LOST":
                    w = open_w.get((cid, int(p[2])))
                    if w is not None:
                        w.lost = (int(p[3]), int(p[4]), p[5])
                elif tag == "FENCE":
                    st = Store(cid, int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6]),
                               p[7] == "ACCEPT", int(p[8]))
                    st.window = open_w.get((cid, st.seq))
                    if st.window is not None:
                        st.window.store = st
                    r.stores.append(st)
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
                elif tag == "BGWIN":
                    r.bg_windows[(cid, int(p[2]))] = [int(p[3]), None]
                elif tag == "BGLOST" and len(p) > 6:
                    k = p[6].rsplit(":", 1)[-1]
                    if k.isdigit():
                        r.bg_lost.setdefault((cid, int(k)), int(p[3]))
                elif tag == "BGEND":
                    r.bg_end[cid] = int(p[3])
                elif tag == "TAKE":
                    r.takes.append((cid, int(p[2]), int(p[3]), int(p[4]), int(p[5]), int(p[6]), int(p[7]),
                                    int(p[8])))
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
    spath = os.path.join(run_dir, "storage")
    if os.path.exists(spath):
        with open(spath) as f:
            nums = f.read(64).split()
            r.storage = (int(nums[0]), int(nums[1])) if len(nums) >= 2 else (0, 0)
    r.stores.sort(key=lambda st: st.t_at)
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
            if (a.client != w.client or a.seq != w.seq) and not (a.kind == "R" and w.kind == "R"):
                out.append((a, w))
        active.append(w)
    return out


def _most_at_once(windows):
    best, active = 0, []
    for w in windows:
        active = [a for a in active if a.end > w.t_acq] + [w]
        best = max(best, len(active))
    return best


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


def _semaphore_limit(r: Result):
    """L if the clients hold permits of a semaphore (START mode=sem), else None."""
    limits = {int(c.get("limit", 1)) for c in r.clients.values() if c.get("mode") == "sem"}
    return min(limits) if limits else None


def _find_excess(windows, limit):
    """Each instant (a window's start) at which more than `limit` windows are open, with them."""
    out = []
    active = []
    for w in windows:            # sorted by t_acq
        active = [a for a in active if a.end > w.t_acq]
        active.append(w)
        if len(active) > limit:
            out.append((w.t_acq, list(active)))
    return out


def analyze(run_dir) -> Result:
    r = load(run_dir)
    r.sem_limit = _semaphore_limit(r)
    if r.sem_limit is not None:
        r.sem_excess = _find_excess(r.windows, r.sem_limit)
    else:
        r.overlaps = _find_overlaps(r.windows)
    for w in r.windows:
        c = r.clients.get(w.client, {})
        if "ttl" in c and "drift_ms" in c:
            # validity_ms is an integer count of ms, so valid_until is never above the true end;
            # 0.5 ms covers the float formatting of the drift.
            allowed = int((float(c["ttl"]) - float(c["drift_ms"])) * 1e6)
            # validity_ms is rounded down, so valid_until never exceeds the library's own end;
            # 0.5 ms covers the drift printed with 3 decimals.
            if w.acq_valid_until - w.t_acq > allowed + 500_000:
                r.validity_excess.append((w, allowed))
            elif c.get("wait") == "0":
                excess = w.acq_valid_until - w.t_call - allowed
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
        # A loss reported by the watchdog must come from a window really cut short: its validity
        # ran out (the time is read after the library saw it run out), or a key was removed.
        if w.lost is not None and w.lost[0] < w.valid_until:
            if not any(f.loses_keys and w.t_call <= f.t <= w.lost[0] for f in r.faults):
                r.unexplained_lost.append(w)
        if c.get("fencing") == "1" and not w.token and w.kind != "R":
            r.token_missing.append(w)
    for w, t, vu in r.extensions:
        c = r.clients.get(w.client, {})
        if "ttl" in c and "drift_ms" in c:
            allowed = int((float(c["ttl"]) - float(c["drift_ms"])) * 1e6)
            if vu - t > allowed + 500_000:
                r.ext_excess.append((w, t, vu, allowed))
    _check_fencing(r)
    _check_takes(r)
    r.longest_unavailable_ns, r.longest_unavailable_at = _longest_unavailable(r)
    return r


def _check_takes(r: Result):
    """Sampled background locks: held from BGWIN to BGEND (or their BGLOST); a contender's take
    whose validity meets that window is a violation. A holder with no BGEND (it died) is held
    until its last take was tried."""
    last = max((t[3] for t in r.takes), default=0)
    for (h, k), win in r.bg_windows.items():
        end = r.bg_end.get(h, last)
        if (h, k) in r.bg_lost:
            end = min(end, r.bg_lost[(h, k)])
        win[1] = end
    for t in r.takes:
        win = r.bg_windows.get((t[5], t[6]))
        if win is None:
            continue
        start, end = win
        if t[2] >= start and t[3] <= end:
            r.takes_while_held += 1
        if t[4] == 0 and t[3] < end and t[7] > start:
            r.taken.append(t)


def _check_fencing(r: Result):
    # Tokens in the order in which the acquisitions returned (r.windows is sorted by t_acq).
    fenced = [w for w in r.windows if w.token and w.kind != "R"]
    for a, b in zip(fenced, fenced[1:]):
        if b.token <= a.token:
            r.token_order.append((a, b))
    # The storage, in its own order (t_at is read under its flock). Fencing promises that once a
    # holder's write is stored, no earlier holder's write is: an accepted write from a holder that
    # acquired before the newest holder already stored is stale.
    newest = None                         # accepted Store whose writer acquired last
    for st in r.stores:
        w = st.window
        if w is None:
            continue
        if st.accepted:
            if newest is not None and newest.window.t_acq > w.t_acq:
                r.stale_accepted.append((st, newest))
            if newest is None or w.t_acq > newest.window.t_acq:
                newest = st
            if st.t_at > w.valid_until:
                r.expired_accepted.append(st)
        elif st.t_at < w.valid_until:
            r.fresh_refused.append(st)
    if r.storage is not None and (r.stores or r.storage != (0, 0)):
        acc = [st for st in r.stores if st.accepted]
        if r.storage[1] != len(acc):
            r.storage_mismatch.append("the storage counted %d accepted writes, the clients logged %d" % (
                r.storage[1], len(acc)))
        top = max((st.token for st in acc), default=0)
        if r.storage[0] != top:
            r.storage_mismatch.append("the storage holds token %d, the largest accepted in the logs is %d" % (
                r.storage[0], top))


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write("usage: check.py RUN_DIR\n")
        return 2
    # Leader election runs (client.c --mode elect) have their own checks.
    import check_elect
    if check_elect.is_elect_run(argv[0]):
        r = check_elect.analyze(argv[0])
    else:
        r = analyze(argv[0])
    print(r.summary())
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
