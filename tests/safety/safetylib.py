# SPDX-License-Identifier: BSD-3-Clause
"""Shared pieces of the safety tests and the soak: spawning the C lock clients (client.c), logging
fault events on the same clock as the clients, and running the checker (check.py) on the result.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))
sys.path.insert(0, HERE)

import check  # noqa: E402
import nodes  # noqa: E402  (tests/harness/nodes.py)

ENV_CLIENT = "REDLOCK_SAFETY_CLIENT"


def find_client():
    """The safety_client binary: $REDLOCK_SAFETY_CLIENT, else the default build tree."""
    p = os.environ.get(ENV_CLIENT)
    if p:
        if not os.access(p, os.X_OK):
            raise FileNotFoundError("%s=%s is not an executable" % (ENV_CLIENT, p))
        return p
    for cand in (os.path.join(ROOT, "build", "tests", "safety", "safety_client"),
                 os.path.join(ROOT, "build", "safety_client")):
        if os.access(cand, os.X_OK):
            return cand
    raise FileNotFoundError("safety_client not built: build it (tests/safety/CMakeLists.txt) and set "
                            "$%s to its path" % ENV_CLIENT)


ENV_CLOCKSHIFT = "REDLOCK_CLOCKSHIFT_LIB"


def find_clockshift():
    """The clock-step shim (clockshift.c): $REDLOCK_CLOCKSHIFT_LIB, else libclockshift.so next to
    the safety client (both are built in the same directory), else the default build tree."""
    p = os.environ.get(ENV_CLOCKSHIFT)
    if p:
        if not os.path.isfile(p):
            raise FileNotFoundError("%s=%s is not a file" % (ENV_CLOCKSHIFT, p))
        return p
    cands = []
    try:
        cands.append(os.path.join(os.path.dirname(os.path.abspath(find_client())), "libclockshift.so"))
    except FileNotFoundError:
        pass
    cands.append(os.path.join(ROOT, "build", "tests", "safety", "libclockshift.so"))
    for cand in cands:
        if os.path.isfile(cand):
            return cand
    raise FileNotFoundError("libclockshift.so not built: build tests/safety (CMakeLists.txt) and set "
                            "$%s to its path" % ENV_CLOCKSHIFT)


def now_ns():
    # time.monotonic_ns() is CLOCK_MONOTONIC on Linux: the clients' clock.
    return time.monotonic_ns()


class Run:
    """One run directory: the clients' logs, the fault log, the counter file and the fake fencing
    storage (used by clients spawned with storage=True)."""

    def __init__(self, run_dir, urls, resource="safety:r", client_bin=None):
        self.dir = str(run_dir)
        os.makedirs(self.dir, exist_ok=True)
        self.urls = list(urls)
        self.resource = resource
        self.bin = client_bin or find_client()
        self.procs = {}
        self.counter = os.path.join(self.dir, "counter")
        with open(self.counter, "w") as f:
            f.write("0".ljust(31) + "\n")
        self.storage = os.path.join(self.dir, "storage")
        with open(self.storage, "w") as f:
            f.write("0".ljust(20) + " " + "0".ljust(20) + "\n")
        self._faults = open(os.path.join(self.dir, "faults.log"), "a", buffering=1)
        self.t_start = now_ns()

    # -- clients -------------------------------------------------------------------------------
    def log_path(self, cid):
        return os.path.join(self.dir, "client-%d.log" % cid)

    def spawn(self, cid, urls=None, **opts):
        """Start client `cid`. opts: ttl, hold, margin, gap, wait, duration, iterations,
        attempt_gap, node_timeout, connect_timeout, retry_count, retry_delay, retry_jitter,
        pre_write; flags (True/False): fencing, auto_extend, storage (the run's fake fencing
        storage; implies fencing); extra_args: a list of arguments added as they are."""
        argv = [self.bin, "--id", str(cid), "--log", self.log_path(cid), "--counter", self.counter,
                "--resource", self.resource]
        argv += [str(a) for a in (opts.pop("extra_args", None) or [])]
        if opts.pop("storage", False):
            opts["fencing"] = True
            argv += ["--storage", self.storage]
        for k, v in opts.items():
            if v is True:
                argv.append("--" + k.replace("_", "-"))
            elif v is not False and v is not None:
                argv += ["--" + k.replace("_", "-"), str(v)]
        argv += list(urls or self.urls)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.dir, "client-%d.err" % cid), "ab"))
        self.procs[cid] = p
        return p

    def spawn_many(self, k, first_id=0, **opts):
        return [self.spawn(first_id + i, **opts) for i in range(k)]

    def wait(self, timeout=60.0, cids=None):
        """Wait for the clients to exit; SIGKILL the ones still running after `timeout`."""
        deadline = time.monotonic() + timeout
        for cid, p in list(self.procs.items()):
            if cids is not None and cid not in cids:
                continue
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.kill()
                except ProcessLookupError:
                    pass
                p.wait()
                raise AssertionError("client %d did not finish within %.0fs" % (cid, timeout))
        for cid, p in self.procs.items():
            if (cids is None or cid in cids) and p.returncode not in (0, None):
                err = open(os.path.join(self.dir, "client-%d.err" % cid), errors="replace").read()
                raise AssertionError("client %d exited with %s: %s" % (cid, p.returncode, err[-2000:]))

    def stop(self):
        """SIGTERM every client (they finish their current cycle) and wait."""
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self.wait(timeout=30)

    def kill_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.kill()
                except ProcessLookupError:
                    pass
                p.wait()

    def events(self, cid, tag=None):
        """Parsed lines of one client's log: lists of strings, optionally only one tag."""
        out = []
        try:
            with open(self.log_path(cid), errors="replace") as f:
                for line in f:
                    w = line.rstrip("\n").split(" ")
                    if tag is None or w[0] == tag:
                        out.append(w)
        except FileNotFoundError:
            pass
        return out

    def wait_event(self, cid, tag, timeout=10.0, after_seq=0, poll=0.002):
        """Wait until client cid logs a `tag` line with seq > after_seq; returns its words."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for w in self.events(cid, tag):
                if len(w) > 2 and int(w[2]) > after_seq:
                    return w
            p = self.procs.get(cid)
            if p is not None and p.poll() is not None:
                for w in self.events(cid, tag):
                    if len(w) > 2 and int(w[2]) > after_seq:
                        return w
                raise AssertionError("client %d exited before logging %s" % (cid, tag))
            time.sleep(poll)
        raise AssertionError("client %d logged no %s within %.0fs" % (cid, tag, timeout))

    # -- fault log -----------------------------------------------------------------------------
    def fault(self, kind, target, loses_keys=False, detail=""):
        t = now_ns()
        self._faults.write("FAULT %d %s %s %d %s\n" % (t, kind, target, 1 if loses_keys else 0, detail))
        return t

    def heal(self, kind, target, detail=""):
        t = now_ns()
        self._faults.write("HEAL %d %s %s %s\n" % (t, kind, target, detail))
        return t

    def check(self):
        self._faults.flush()
        return check.analyze(self.dir)

    def close(self):
        self.kill_all()
        self._faults.close()


class Faults:
    """Fault actions on a harness cluster and on proxies, each logged in the run's fault log.
    A fault that may remove a lock key is logged with loses_keys=1 so that the checker can
    explain a REDLOCK_ELOST by it."""

    def __init__(self, run: Run, cluster, proxies=None):
        self.run = run
        self.c = cluster
        self.proxies = proxies or {}

    def kill(self, i):
        # Without persistence the node comes back empty: every key it held is lost at the kill.
        self.c.kill(i)
        return self.run.fault("kill", "node%d" % i, loses_keys=self.c.persistence is None)

    def restart(self, i, delay=0.0):
        if self.c.is_running(i):
            self.run.fault("kill", "node%d" % i, loses_keys=self.c.persistence is None)
        self.c.restart(i, delay=delay)
        return self.run.heal("restart", "node%d" % i, "delay=%g" % delay)

    def start(self, i):
        self.c.restart(i)
        return self.run.heal("restart", "node%d" % i)

    def pause(self, i):
        self.c.pause(i)
        return self.run.fault("pause", "node%d" % i)

    def resume(self, i):
        self.c.resume(i)
        return self.run.heal("resume", "node%d" % i)

    def cmd(self, i, *args, kind=None, loses_keys=False, timeout=2.0):
        t = self.run.fault(kind or args[0].lower(), "node%d" % i, loses_keys=loses_keys,
                           detail="_".join(str(a) for a in args))
        return t, self.c.cmd(i, *args, timeout=timeout)

    def proxy(self, i, mode, **params):
        self.proxies[i].set_mode(mode, **params)
        if mode == "pass":
            return self.run.heal("proxy", "node%d" % i)
        return self.run.fault("proxy-" + mode, "node%d" % i,
                              detail=",".join("%s=%s" % kv for kv in sorted(params.items())))

    def wipe(self, i, how="restart"):
        """Node i loses every key: "restart" kills it and starts it again at once (without
        persistence it comes back empty: a crash, or a restart by an operator), "flushall" sends
        FLUSHALL (a wipe by hand). Logged as a key-losing fault; returns the fault's time."""
        if how == "restart":
            if self.c.persistence is not None:
                raise ValueError("wipe by restart: the nodes keep their keys (persistence=%r)"
                                 % self.c.persistence)
            t = self.run.fault("wipe-restart", "node%d" % i, loses_keys=True)
            self.c.restart(i)
            self.run.heal("restart", "node%d" % i, "wiped")
            return t
        if how == "flushall":
            t = self.run.fault("wipe-flushall", "node%d" % i, loses_keys=True)
            self.c.cmd(i, "FLUSHALL")
            return t
        raise ValueError("wipe: how is 'restart' or 'flushall', not %r" % (how,))

    def step_clock(self, i, ms):
        """Step node i's wall clock by ms (the cluster runs under the clock shim:
        nodes.Cluster(clockshift=find_clockshift())). A forward step expires every key with less
        than ms to live at once, so it is logged as key-losing; a backward one keeps keys longer.
        Returns the fault's time."""
        # Logged first: the fault's time is never after the keys went.
        t = self.run.fault("clock-step", "node%d" % i, loses_keys=ms > 0,
                           detail="step=%+dms offset=%+dms" % (ms, self.c.clock_offset(i) + ms))
        self.c.step_clock(i, ms)
        return t

    def stop_client(self, cid):
        self.run.procs[cid].send_signal(signal.SIGSTOP)
        return self.run.fault("client-stop", "client%d" % cid)

    def cont_client(self, cid):
        self.run.procs[cid].send_signal(signal.SIGCONT)
        return self.run.heal("client-cont", "client%d" % cid)


def in_window(t_call, t_ret, start, end):
    """An acquire call [t_call, t_ret] that lies inside [start, end]."""
    return start <= t_call and t_ret <= end


def acquisitions_between(result, start, end):
    return [w for w in result.windows if start <= w.t_acq <= end]


def fails_between(result, start, end):
    """FAIL tuples (client, seq, t_call, t_ret, rc, name, msg) wholly inside [start, end]."""
    return [f for f in result.fails if in_window(f[2], f[3], start, end)]
