# SPDX-License-Identifier: BSD-3-Clause
# Redis/Valkey Clusters as Redlock nodes (redis-cluster://, docs/cluster.md), on real clusters from
# tests/harness/rcluster.py. A cluster node names a lock's auxiliary keys so that they share the
# lock key's slot ({K}:wq, {K}:fencing, ... when K has no hash tag); a standalone node keeps the
# names it always had (K:wq, K:fencing), so an upgrade changes nothing there.
from __future__ import annotations

import threading
import time

import pytest

import rcluster
import redlock
from redlock import EventType, Redlock

SLOW_RETRY = {"retry_delay": 20.0, "retry_jitter": 0.0}


def wait_until(pred, what, timeout=30.0):
    # A bound for a hung test, not a timing assertion.
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.fixture(scope="module")
def one_shard():
    """Three independent one-shard clusters (Redis, Valkey, Redis): each enforces CROSSSLOT."""
    made = []
    try:
        for kind in ("redis", "valkey", "redis"):
            made.append(rcluster.RedisCluster(shards=1, kind=kind).__enter__())
        yield made
    finally:
        for rc in made:
            rc.close()


def urls_of(clusters):
    return [rc.url() for rc in clusters]


def exists(rc, key):
    return rc.cmd(rc.master_for_key(key), "EXISTS", key) == 1


def test_aux_keys_share_the_slot_on_cluster_nodes(one_shard, name):
    with Redlock(urls_of(one_shard), fencing=True, node_timeout=0.5) as c:
        tokens = []
        for _ in range(2):
            with c.lock(name, ttl=5.0) as lock:
                assert lock.held
                lock.extend(5.0)
                tokens.append(lock.token)
        assert tokens[0] >= 1 and tokens[1] > tokens[0]
    for rc in one_shard:
        assert exists(rc, "{%s}:fencing" % name)
        assert not exists(rc, name + ":fencing")
        assert rcluster.keyslot("{%s}:fencing" % name) == rcluster.keyslot(name)


def test_a_tagged_name_keeps_its_suffixes(one_shard, name):
    tagged = "{%s}:job" % name
    with Redlock(urls_of(one_shard), fencing=True, node_timeout=0.5) as c:
        with c.lock(tagged, ttl=5.0) as lock:
            assert lock.token >= 1
    for rc in one_shard:
        assert exists(rc, tagged + ":fencing")


def test_standalone_nodes_keep_the_legacy_names(one_shard, cluster5, name):
    # Two cluster nodes and three standalone ones in one client: each node names the keys its way.
    urls = urls_of(one_shard[:2]) + cluster5.urls[:3]
    with Redlock(urls, fencing=True, node_timeout=0.5) as c:
        with c.lock(name, ttl=5.0) as lock:
            assert lock.token >= 1
    for rc in one_shard[:2]:
        assert exists(rc, "{%s}:fencing" % name)
    for i in range(3):
        assert cluster5.cmd(i, "EXISTS", name + ":fencing") == 1
        assert cluster5.cmd(i, "EXISTS", "{%s}:fencing" % name) == 0


def test_a_waiter_is_woken_on_cluster_nodes(one_shard, name):
    rec = []
    with Redlock(urls_of(one_shard), node_timeout=0.5) as other, \
            Redlock(urls_of(one_shard), node_timeout=0.5, on_event=rec.append, **SLOW_RETRY) as c:
        holder = other.acquire(name, ttl=30.0)
        got = []
        waiter = c.lock(name, ttl=10.0)
        t = threading.Thread(target=lambda: got.append(waiter.acquire(timeout=60)))
        t.start()
        try:
            # The waiter's registration, in the queue that shares the lock's slot.
            wait_until(lambda: sum(exists(rc, "{%s}:wq" % name) for rc in one_shard) >= 2,
                       "the waiter registered on a majority")
        finally:
            holder.release()
            t.join(60)
        assert got == [True]
        waiter.release()
        assert any(e.type == EventType.WOKEN for e in rec), [e.type for e in rec]


def test_read_write_lock_and_election_on_cluster_nodes(one_shard, name):
    with Redlock(urls_of(one_shard), node_timeout=0.5) as c:
        rw = c.rwlock(name, ttl=5.0)
        r1, r2 = rw.read(), rw.read()
        assert r1.acquire() and r2.acquire()
        assert rw.write().acquire(blocking=False) is False
        for rc in one_shard:
            assert exists(rc, "{%s}:rd" % name)
        r1.release()
        r2.release()
        with rw.write():
            pass
        e = c.election(name + ":e", ttl=5.0)
        e.campaign(b"me", timeout=10)
        for rc in one_shard:
            assert exists(rc, "{%s:e}:leader" % name)
        e.resign()


def test_semaphore_needs_a_tag_on_cluster_nodes(one_shard, name):
    with Redlock(urls_of(one_shard), node_timeout=0.5) as c:
        with pytest.raises(redlock.InvalidArgument, match="hash tag"):
            c.semaphore(name, 2).acquire()
        sem = c.semaphore("{%s}" % name, 2)
        assert sem.acquire()
        assert c.semaphore("{%s}" % name, 2).acquire()
        assert c.semaphore("{%s}" % name, 2).acquire(blocking=False) is False
        sem.release()


def test_a_key_with_a_brace_but_no_tag_is_refused(one_shard, cluster5):
    with Redlock(urls_of(one_shard), node_timeout=0.5) as c:
        for bad in ("a}b", "x{}y}", "}"):
            with pytest.raises(redlock.InvalidArgument, match="hash tag"):
                c.lock(bad).acquire()
    # On standalone nodes such a name is as good as any.
    with Redlock(cluster5.urls, node_timeout=0.5) as c:
        with c.lock("a}b-%d" % time.monotonic_ns(), ttl=5.0) as lock:
            assert lock.held
