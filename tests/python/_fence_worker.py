# SPDX-License-Identifier: BSD-3-Clause
"""A worker of tests/python/test_fence_faults.py: in a loop, take the lock (fencing on), read a
counter from the store, write it back plus one, release. Between the read and the write it says
READ on stdout and waits a moment, so that the test can SIGSTOP it there, past its lock's
validity. With --fenced, the write goes through the fence (a Redis/Valkey Fence, or a PostgreSQL
row's fence column) after advance(); without, it is a plain write. Its last line: DONE <writes
applied> <writes refused>.

    _fence_worker.py redis|pg STORE NODES... --cycles N --ttl MS [--fenced]
"""
from __future__ import annotations

import argparse
import sys
import time

import redlock

RESOURCE = "fence-faults"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=("redis", "pg"))
    ap.add_argument("store")
    ap.add_argument("nodes", nargs="+")
    ap.add_argument("--cycles", type=int, required=True)
    ap.add_argument("--ttl", type=int, required=True)
    ap.add_argument("--fenced", action="store_true")
    ap.add_argument("--resource", default=RESOURCE)
    a = ap.parse_args()
    if a.kind == "redis":
        import redis
        store = redis.Redis.from_url(a.store)
    else:
        import psycopg
        store = psycopg.connect(a.store, autocommit=True)
    applied = refused = 0
    with redlock.Redlock(a.nodes, fencing=True, node_timeout=0.5, retry_delay=0.005, retry_jitter=0.005) as c:
        lock = c.lock(a.resource, ttl=a.ttl / 1000.0)
        for _ in range(a.cycles):
            if not lock.acquire(timeout=60):
                raise SystemExit("not acquired within 60 s: %s" % lock.last_error)
            token = lock.token
            try:
                if a.kind == "redis":
                    fence = redlock.Fence(store, a.resource, token) if a.fenced else None
                    if fence:
                        fence.advance()
                    value = int(store.get(a.resource + ":counter") or 0)
                else:
                    cur = store.cursor()
                    if a.fenced:
                        redlock.fenced_update(cur, "counter", {"id": 1}, {}, token)
                    value = cur.execute("SELECT value FROM counter WHERE id = 1").fetchone()[0]
                print("READ", flush=True)
                time.sleep(0.005)   # the test may stop this process here
                if a.kind == "redis":
                    if fence:
                        fence.set(a.resource + ":counter", value + 1)
                    else:
                        store.set(a.resource + ":counter", value + 1)
                elif a.fenced:
                    redlock.fenced_update(cur, "counter", {"id": 1}, {"value": value + 1}, token)
                else:
                    cur.execute("UPDATE counter SET value = %s WHERE id = 1", (value + 1,))
                applied += 1
            except redlock.FencedOut:
                refused += 1
            try:
                lock.release()
            except (redlock.LockLost, redlock.LockExpired, redlock.LockStateError, redlock.QuorumError):
                pass   # the lease ran out while stopped: a later holder may have the lock
    print("DONE", applied, refused, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
