# SPDX-License-Identifier: BSD-3-Clause
# The fence under the fault it exists for (docs/fencing.md, "Protecting your store"): worker
# processes increment a counter in a real store under one lock; now and then one of them is
# SIGSTOPped between its read and its write, for three times the lock's TTL, so that another
# holder takes the lock and writes meanwhile. Writing through the fence (a Redis/Valkey Fence,
# a PostgreSQL row's fence column), every late write is refused and no update is lost; writing
# without it, in the same run, the late writes overwrite the others' and updates are lost.
# REDLOCK_FENCE_FAULT_CYCLES sets the cycles per worker (3 workers; default 350).
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest
import redis

import pgserver

HERE = os.path.dirname(os.path.abspath(__file__))
CYCLES = int(os.environ.get("REDLOCK_FENCE_FAULT_CYCLES", "350"))
WORKERS = 3
TTL_MS = 100
PAUSE_EVERY = 40          # a worker is stopped at every 40th of its reads...
PAUSE_S = 3 * TTL_MS / 1000.0   # ...for three TTLs


@pytest.fixture(scope="module")
def pg():
    with pgserver.PostgresServer() as server:
        yield server


def run_workers(kind, store_url, nodes, fenced, resource):
    argv = [sys.executable, os.path.join(HERE, "_fence_worker.py"), kind, store_url, *nodes,
            "--cycles", str(CYCLES), "--ttl", str(TTL_MS), "--resource", resource]
    if fenced:
        argv.append("--fenced")
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(WORKERS)]
    done, pauses, lock = {}, [0], threading.Lock()

    def watch(i, p):
        reads = 0
        for line in p.stdout:
            if line.startswith("READ"):
                reads += 1
                if reads % PAUSE_EVERY == 0:
                    os.kill(p.pid, signal.SIGSTOP)   # between its read and its write (it waits 5 ms)
                    time.sleep(PAUSE_S)
                    os.kill(p.pid, signal.SIGCONT)
                    with lock:
                        pauses[0] += 1
            elif line.startswith("DONE"):
                _, applied, refused = line.split()
                done[i] = (int(applied), int(refused))

    threads = [threading.Thread(target=watch, args=(i, p)) for i, p in enumerate(procs)]
    for t in threads:
        t.start()
    for p in procs:
        try:
            p.wait(240)
        except subprocess.TimeoutExpired:
            p.kill()
    for t in threads:
        t.join(10)
    errs = [p.stderr.read() for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    assert len(done) == WORKERS, (done, errs)
    return sum(a for a, _ in done.values()), sum(r for _, r in done.values()), pauses[0]


@pytest.mark.parametrize("kind", ["redis", "pg"])
def test_late_writes_refused_with_the_fence_and_lost_without(cluster5, pg, kind, name):
    results = {}
    for fenced in (True, False):
        resource = "%s:%s" % (name, "fenced" if fenced else "plain")
        if kind == "redis":
            store_url = cluster5.urls[0]
            redis.Redis.from_url(store_url).delete(resource + ":counter")
        else:
            store_url = pg.dsn
            with psycopg.connect(pg.dsn, autocommit=True) as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS counter (id INT PRIMARY KEY, value BIGINT, fence BIGINT)")
                conn.execute("DELETE FROM counter")
                conn.execute("INSERT INTO counter (id, value) VALUES (1, 0)")
        t0 = time.monotonic()
        applied, refused, pauses = run_workers(kind, store_url, cluster5.urls, fenced, resource)
        if kind == "redis":
            counter = int(redis.Redis.from_url(store_url).get(resource + ":counter") or 0)
        else:
            with psycopg.connect(pg.dsn) as conn:
                counter = conn.execute("SELECT value FROM counter WHERE id = 1").fetchone()[0]
        results[fenced] = (applied, refused, pauses, counter)
        print("%s %s: %d cycles, %d pauses, %d writes applied, %d refused, counter %d, lost %d, %.1f s" % (
            kind, "fenced" if fenced else "plain", WORKERS * CYCLES, pauses, applied, refused, counter,
            applied - counter, time.monotonic() - t0))
    applied, refused, pauses, counter = results[True]
    assert pauses >= WORKERS * (CYCLES // PAUSE_EVERY) - WORKERS, results
    assert applied + refused == WORKERS * CYCLES
    assert refused >= 1, "no late write was refused: the pauses did not land between read and write"
    assert counter == applied, "lost updates through the fence"   # 0 lost
    applied, refused, pauses, counter = results[False]
    assert refused == 0 and applied == WORKERS * CYCLES
    assert counter < applied, "no update lost without the fence: the construction failed"
