# SPDX-License-Identifier: BSD-3-Clause
"""Redis/Valkey Clusters for the tests: each one a set of local redis-server or valkey-server
processes (started by nodes.Cluster, so they are killed and cleaned up the same way) with
cluster-enabled yes, joined by hand with CLUSTER MEET and CLUSTER ADDSLOTSRANGE, with
`replicas` replicas per shard (CLUSTER REPLICATE) when a test needs a failover.

A RedisCluster is *one* Redlock node: its url() is redis-cluster://host:port?seed=... .
Tests that want several independent Redlock nodes start several RedisClusters.

    with rcluster.RedisCluster(shards=3) as rc:
        rc.url()                 # redis-cluster://127.0.0.1:P?seed=127.0.0.1:Q&seed=...
        rc.master_for_slot(42)   # index of the process serving slot 42
        rc.cmd(i, "CLUSTER", "INFO")
"""
from __future__ import annotations

import time

import nodes

SLOTS = 16384


def _crc16(data: bytes) -> int:
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def keyslot(key) -> int:
    """The slot of a key, as the servers compute it (hash tags included)."""
    k = key.encode() if isinstance(key, str) else bytes(key)
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return _crc16(k) % SLOTS


class RedisCluster:
    def __init__(self, shards=3, replicas=0, kind="redis", node_timeout_ms=1000, conf=None, tls=None):
        if shards < 1 or replicas < 0:
            raise ValueError("shards >= 1, replicas >= 0")
        self.shards = shards
        self.replicas = replicas
        c = {
            "cluster-enabled": "yes",
            "cluster-config-file": "nodes.conf",
            "cluster-node-timeout": str(node_timeout_ms),
            # A shard whose master is gone (and nobody to promote) must not stop the others.
            "cluster-require-full-coverage": "no",
            # A replica may always be promoted, however long its link was down.
            "cluster-replica-validity-factor": "0",
            # A replica's first sync starts at once (the default waits 5 s for more replicas).
            "repl-diskless-sync-delay": "0",
        }
        if tls is not None:
            # nodes.Cluster's TLS (a TLS port only); the cluster bus and replication over TLS too
            c.update({"tls-cluster": "yes", "tls-replication": "yes"})
        c.update(conf or {})
        self.tls = tls
        self.nodes = nodes.Cluster(count=shards * (1 + replicas), kind=kind, conf=c, tls=tls)
        self.ids = []

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.nodes.close()

    def start(self):
        self.nodes.start()
        n = len(self.nodes)
        self.ids = [self.nodes.cmd(i, "CLUSTER", "MYID") for i in range(n)]
        # Masters are processes 0..shards-1; each owns an even share of the slots.
        per = SLOTS // self.shards
        for s in range(self.shards):
            lo = s * per
            hi = SLOTS - 1 if s == self.shards - 1 else lo + per - 1
            self.nodes.cmd(s, "CLUSTER", "ADDSLOTSRANGE", lo, hi)
            self.nodes.cmd(s, "CLUSTER", "SET-CONFIG-EPOCH", s + 1)
        for i in range(1, n):
            self.nodes.cmd(i, "CLUSTER", "MEET", "127.0.0.1", self.nodes.port(0))
        self._wait(lambda: all(self._knows_all(i) for i in range(n)), "every node to know every other")
        for r in range(self.replicas):
            for s in range(self.shards):
                i = self.shards * (1 + r) + s
                self.nodes.cmd(i, "CLUSTER", "REPLICATE", self.ids[s])
        self.wait_ok()
        # Replicas that have synced, so that a failover has something to promote.
        self._wait(lambda: all("master_link_status:up" in self.nodes.cmd(i, "INFO", "replication")
                               for i in range(self.shards, n)), "the replicas to sync")
        return self

    def _knows_all(self, i):
        lines = self.nodes.cmd(i, "CLUSTER", "NODES").strip().splitlines()
        return len(lines) == len(self.nodes) and all("handshake" not in l for l in lines)

    def _wait(self, cond, what, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                if cond():
                    return
            except (OSError, nodes.ReplyError):
                pass
            if time.monotonic() > deadline:
                raise nodes.HarnessError("cluster: timed out waiting for " + what)
            time.sleep(0.02)

    def wait_ok(self, timeout=30.0):
        """Until every running node says cluster_state:ok and agrees on who serves each slot."""
        def ok():
            maps = []
            for i in range(len(self.nodes)):
                if not self.nodes.is_running(i):
                    continue
                if "cluster_state:ok" not in self.nodes.cmd(i, "CLUSTER", "INFO"):
                    return False
                maps.append(sorted(self._slot_owners(i)))
            return all(m == maps[0] for m in maps)
        self._wait(ok, "cluster_state:ok everywhere", timeout)

    def wait_failover(self, dead, slot, timeout=60.0):
        """Until a replica took over slot from the killed master `dead`, everywhere."""
        def done():
            live = [i for i in range(len(self.nodes)) if self.nodes.is_running(i)]
            owners = {self.master_for_slot(slot, via=i) for i in live}
            return len(owners) == 1 and None not in owners and dead not in owners
        self._wait(done, "a replica to take over from process %d" % dead, timeout)
        self.wait_ok(timeout)

    # -- what the cluster looks like ---------------------------------------------------------------
    def _slot_owners(self, i):
        """[(lo, hi, master port)] as process i sees it (CLUSTER NODES: a flat string)."""
        out = []
        for line in self.nodes.cmd(i, "CLUSTER", "NODES").strip().splitlines():
            f = line.split()
            if "master" not in f[2] or "fail" in f[2].split(","):
                continue
            port = int(f[1].split("@")[0].rsplit(":", 1)[1])
            for r in f[8:]:
                if r.startswith("["):
                    continue   # a migrating/importing marker
                lo, _, hi = r.partition("-")
                out.append((int(lo), int(hi or lo), port))
        return out

    def index_of_port(self, port):
        for i in range(len(self.nodes)):
            if self.nodes.port(i) == port:
                return i
        raise KeyError(port)

    def master_for_slot(self, slot, via=None):
        """Index of the process serving slot, as seen by process `via` (default: a running master)."""
        if via is None:
            via = next(i for i in range(len(self.nodes)) if self.nodes.is_running(i))
        for lo, hi, port in self._slot_owners(via):
            if lo <= slot <= hi:
                return self.index_of_port(port)
        return None

    def master_for_key(self, key, via=None):
        return self.master_for_slot(keyslot(key), via)

    def url(self, seeds=None, host="127.0.0.1"):
        """redis-cluster://first?seed=... (rediss-cluster:// with TLS): `seeds` are process indexes
        (default: the masters), named by `host`."""
        seeds = list(range(self.shards)) if seeds is None else list(seeds)
        first = "%s:%d" % (host, self.nodes.port(seeds[0]))
        rest = "&".join("seed=%s:%d" % (host, self.nodes.port(i)) for i in seeds[1:])
        scheme = "rediss-cluster://" if self.tls is not None else "redis-cluster://"
        return scheme + first + ("?" + rest if rest else "")

    # -- control ---------------------------------------------------------------------------------------
    def cmd(self, i, *args, timeout=2.0):
        return self.nodes.cmd(i, *args, timeout=timeout)

    def kill(self, i):
        self.nodes.kill(i)

    def __len__(self):
        return len(self.nodes)


def start_all(made):
    """Starts several RedisClusters at once (each waits about 2 s for its state to turn ok, a
    delay of the servers); on a failure every one of them is closed. Returns the list."""
    import threading
    errors = []

    def one(rc):
        try:
            rc.start()
        except BaseException as e:   # noqa: B902 (reported below, on the caller's thread)
            errors.append(e)
    threads = [threading.Thread(target=one, args=(rc,)) for rc in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for rc in made:
            rc.close()
        raise errors[0]
    return made


def main(argv=None):
    """rcluster.py exec [--clusters 3] [--shards 3] -- COMMAND...: starts independent clusters,
    runs COMMAND with their redis-cluster:// URLs in REDLOCK_TEST_NODES (comma-separated) and
    each cluster's master ports in REDLOCK_TEST_CLUSTER_PORTS ("p1 p2 p3,p1 p2 p3,..."), stops
    them, and exits with COMMAND's status.

    rcluster.py serve [--clusters 3] [--shards 3]: starts them, prints one line of JSON
    {"urls": [...], "ports": [[p1, p2, p3], ...]} (each cluster's master ports), and stops them
    when its standard input closes: for test suites in other languages (bindings/go)."""
    import argparse
    import json
    import os
    import subprocess
    import sys
    argv = sys.argv[1:] if argv is None else argv
    serve = bool(argv) and argv[0] == "serve"
    if not argv or (argv[0] != "exec" and not serve) or (not serve and "--" not in argv):
        print(main.__doc__, file=sys.stderr)
        return 2
    k = len(argv) if serve else argv.index("--")
    ap = argparse.ArgumentParser(prog="rcluster.py " + argv[0])
    ap.add_argument("--clusters", type=int, default=3)
    ap.add_argument("--shards", type=int, default=3)
    a = ap.parse_args(argv[1:k])
    made = [RedisCluster(shards=a.shards, kind="valkey" if c % 2 else "redis") for c in range(a.clusters)]
    try:
        start_all(made)
        if serve:
            print(json.dumps({"urls": [rc.url() for rc in made],
                              "ports": [[rc.nodes.port(i) for i in range(rc.shards)] for rc in made]}),
                  flush=True)
            sys.stdin.read()
            return 0
        env = dict(os.environ)
        env["REDLOCK_TEST_NODES"] = ",".join(rc.url() for rc in made)
        env["REDLOCK_TEST_CLUSTER_PORTS"] = ",".join(
            " ".join(str(rc.nodes.port(i)) for i in range(rc.shards)) for rc in made)
        return subprocess.call(argv[k + 1:], env=env)
    finally:
        for rc in made:
            rc.close()


if __name__ == "__main__":
    raise SystemExit(main())
