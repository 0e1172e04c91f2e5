# SPDX-License-Identifier: BSD-3-Clause
# What `redlock status` may claim from what the nodes hold (docs/cli.md, "redlock status"): a
# lock with one holder and no reader is a mutex, whatever side of a read-write lock took it; the
# waiters that poll (the default) register nowhere, so the count of waiters is a floor, said as
# such; and cluster nodes (redis-cluster://) are read where the key's slot lives.
from __future__ import annotations

import json
import re

import pytest

import rcluster
from clitest import nodes_arg, wait_for

# Words of the read-write lock: none of them fits a lock that no reader ever used.
RW_WORDS = re.compile(r"\b(writers?|readers?)\b", re.I)


def status(runner, nodes, resource, *extra):
    return runner.run("status", "--nodes", nodes, *extra, resource)


def status_json(runner, nodes, resource):
    r = status(runner, nodes, resource, "--json")
    return r.returncode, json.loads(r.stdout)


def stop(*procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(15)
        except Exception:  # noqa: BLE001 (killed below)
            p.kill()
            p.wait()


@pytest.mark.parametrize("how", [[], ["--fair"]], ids=["exclusive", "fair-mutex"])
def test_mutex_with_a_waiter_is_a_mutex(runner, cluster5, resource, how):
    """One holder and one waiter of a lock nobody reads: `redlock run` (the write side) or
    `--fair` (the library's mutex). No reader or writer wording, mode "mutex", and the waiter
    counted: a waiting exclusive `run` leaves its mark, a --fair one is queued."""
    nodes = nodes_arg(cluster5)
    holder = runner.popen("run", *how, "--nodes", nodes, resource, "--", "sleep", "30")
    waiter = None
    try:
        wait_for(lambda: status_json(runner, nodes, resource)[0] == 0, what="the holder")
        waiter = runner.popen("run", *how, "-w", "30s", "--nodes", nodes, resource, "--", "true")

        def waits():   # its intent (exclusive), or its place in the queue (--fair), on a quorum
            st = status_json(runner, nodes, resource)[1]
            return st["writer_waiting"] or sum((n["waiters"] or 0) > 0 for n in st["nodes"]) >= 3
        wait_for(waits, what="the waiter on the nodes")
        rc, st = status_json(runner, nodes, resource)
        assert rc == 0 and st["state"] == "held" and st["mode"] == "mutex", st
        assert st["readers"] == 0 and st["waiter_visibility"] == "partial", st
        r = status(runner, nodes, resource)
        assert r.returncode == 0, r.stderr
        assert not RW_WORDS.search(r.stdout), r.stdout
        assert "held: value" in r.stdout and "1 waiter seen" in r.stdout, r.stdout
        assert "not visible" in r.stdout, r.stdout
    finally:
        stop(*[p for p in (holder, waiter) if p])


def test_semaphore_polling_waiters_are_not_claimed_absent(runner, cluster5, resource):
    """Four jobs on `run -n 2`: two hold, two poll. The nodes keep no trace of the two that
    poll, so status must not say "0 waiting": it says what it cannot see, in text and JSON."""
    nodes = nodes_arg(cluster5)
    jobs = [runner.popen("run", "-n", "2", "--nodes", nodes, resource, "--", "sleep", "30")
            for _ in range(4)]
    try:
        wait_for(lambda: status_json(runner, nodes, resource)[1].get("semaphore", {}).get("permits_held") == 2,
                 what="two permits held")
        assert all(p.poll() is None for p in jobs)   # two hold, two wait
        r = status(runner, nodes, resource)
        assert r.returncode == 0, r.stderr
        assert "2 of 2 permits held on a quorum" in r.stdout, r.stdout
        assert not re.search(r"\b0 waiting\b", r.stdout), r.stdout
        assert "poll" in r.stdout and "not visible" in r.stdout, r.stdout
        rc, st = status_json(runner, nodes, resource)
        assert rc == 0 and st["mode"] == "semaphore", st
        assert st["waiter_visibility"] == "partial" and st["waiters_seen"] == 0, st
        assert st["semaphore"]["waiters"] == 0, st
    finally:
        stop(*jobs)


@pytest.fixture(scope="module")
def clusters3():
    """Three independent clusters of two shards each: the first seed of each owns half of the
    slots, so a key of the other half is answered with MOVED there."""
    made = [rcluster.RedisCluster(shards=2, kind=kind) for kind in ("redis", "valkey", "redis")]
    rcluster.start_all(made)
    try:
        yield made
    finally:
        for rc in made:
            rc.close()


def _moved_name(clusters, stem, tag):
    """A resource whose key (hash tag or not) lives off every cluster's first seed."""
    for k in range(10000):
        name = "{%s%d}" % (stem, k) if tag else "%s%d" % (stem, k)
        slot = rcluster.keyslot(name)
        if all(rc.master_for_slot(slot) != 0 for rc in clusters):
            return name
    raise AssertionError("no name found")


def test_status_on_cluster_nodes(runner, clusters3):
    nodes = ",".join(rc.url() for rc in clusters3)
    lock = _moved_name(clusters3, "status-lock-", tag=False)
    sem = _moved_name(clusters3, "status-sem-", tag=True)
    holder = runner.popen("run", "--nodes", nodes, lock, "--", "sleep", "30")
    permits = [runner.popen("run", "-n2", "--nodes", nodes, sem, "--", "sleep", "30") for _ in range(2)]
    try:
        wait_for(lambda: all(rc.cmd(rc.master_for_key(lock), "EXISTS", lock) for rc in clusters3),
                 what="the lock held on every cluster")
        r = status(runner, nodes, lock)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "MOVED" not in r.stdout and "held: value" in r.stdout, r.stdout
        rc_, st = status_json(runner, nodes, lock)
        assert rc_ == 0 and st["state"] == "held" and st["holder_nodes"] == 3, st
        assert all(n["state"] == "held" for n in st["nodes"]), st
        # a waiter queued for wake-up is found where the library queues it: {KEY}:wq, in the
        # key's slot
        waiter = runner.popen("run", "--fair", "-w", "30s", "--nodes", nodes, lock, "--", "true")
        permits.append(waiter)
        wait_for(lambda: status_json(runner, nodes, lock)[1]["waiters_queued"] == 1, what="the waiter queued")
        wait_for(lambda: status_json(runner, nodes, sem)[1].get("semaphore", {}).get("permits_held") == 2,
                 what="two permits held")
        r = status(runner, nodes, sem)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "held: 2 of 2 permits held on a quorum" in r.stdout and "MOVED" not in r.stdout, r.stdout
    finally:
        stop(holder, *permits)
    r = status(runner, nodes, lock)
    assert r.returncode == 1 and "free" in r.stdout, r.stdout + r.stderr
