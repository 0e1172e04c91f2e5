# SPDX-License-Identifier: BSD-3-Clause
"""The fault matrix on Redis/Valkey Clusters as Redlock nodes (docs/cluster.md, docs/algorithm.md
"A cluster as a node"): real lock client processes (client.c) against three independent clusters
of three shards, one redis-cluster:// URL each, faults inside one cluster, verdicts from
check.py. Where the assumptions hold, zero violations."""
import os
import time

import pytest

import rcluster
import safetylib as S

# About 25 s: in make test-cluster, not in make test's budget (docs/cluster.md).
pytestmark = pytest.mark.skipif(os.environ.get("REDLOCK_CLUSTER_LONG") != "1",
                                reason="cluster fault matrix: make test-cluster (REDLOCK_CLUSTER_LONG=1)")

RESOURCE = "safety:cluster"


def finish(run):
    run.stop()
    r = run.check()
    print(r.summary())
    return r


def acq_between(r, start, end):
    return [w for w in r.windows if start <= w.t_acq <= end]


def clusters(n=3, shards=3):
    made = []
    try:
        for k in range(n):
            made.append(rcluster.RedisCluster(shards=shards, kind="valkey" if k % 2 else "redis").__enter__())
    except BaseException:
        for rc in made:
            rc.close()
        raise
    return made


def test_cluster_shard_master_killed_and_restarted(make_run):
    """The shard that owns the resource's slot in one cluster is SIGKILLed, kept down longer than
    the TTL (assumption 2), and restarted empty: that node fails for the slot meanwhile, the other
    two keep granting, no violation, and the shard is used again after its restart."""
    ttl = 1000
    made = clusters()
    try:
        a = made[0]
        victim = a.master_for_key(RESOURCE)
        run = make_run([rc.url() for rc in made], RESOURCE)
        f = S.Faults(run, a.nodes)
        run.spawn_many(3, ttl=ttl, duration=60)
        time.sleep(1.0)
        t_kill = f.kill(victim)
        time.sleep(1.5)                      # > ttl: every key it held has expired
        t_back = f.restart(victim)
        a.wait_ok()
        time.sleep(1.5)
        sets = a.cmd(victim, "INFO", "commandstats")
        r = finish(run)
    finally:
        for rc in made:
            rc.close()
    assert r.ok, "violations:\n" + "\n".join(r.violations)
    assert len(acq_between(r, t_kill, t_back)) > 3, "acquisitions stopped while one cluster's shard was down"
    assert len(acq_between(r, t_back, S.now_ns())) > 3
    assert "cmdstat_set:calls=" in sets or "cmdstat_eval" in sets, "the restarted shard received no lock command"


def test_cluster_slot_migrated_under_load(make_run):
    """The resource's slot moves to another shard (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE)
    while clients contend for it: no violation, and acquisitions go on during and after."""
    ttl = 1000
    made = clusters()
    try:
        a = made[0]
        slot = rcluster.keyslot(RESOURCE)
        src = a.master_for_slot(slot)
        dst = (src + 1) % a.shards
        run = make_run([rc.url() for rc in made], RESOURCE)
        run.spawn_many(3, ttl=ttl, duration=60)
        time.sleep(1.0)
        t0 = run.fault("migrate", "node0", detail="slot%d" % slot)
        a.cmd(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", a.ids[src])
        a.cmd(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", a.ids[dst])
        for _ in range(20):                   # keys come and go under load: move them in rounds
            keys = a.cmd(src, "CLUSTER", "GETKEYSINSLOT", slot, 1000)
            if keys:
                try:
                    a.cmd(src, "MIGRATE", "127.0.0.1", a.nodes.port(dst), "", 0, 5000, "KEYS", *keys)
                except S.nodes.ReplyError:
                    pass                      # a key that expired meanwhile: the next round
            time.sleep(0.05)
        for i in range(a.shards):
            a.cmd(i, "CLUSTER", "SETSLOT", slot, "NODE", a.ids[dst])
        a.wait_ok()
        t1 = run.heal("migrate", "node0")
        time.sleep(1.5)
        r = finish(run)
        assert a.master_for_slot(slot) == dst
    finally:
        for rc in made:
            rc.close()
    assert r.ok, "violations:\n" + "\n".join(r.violations)
    assert len(acq_between(r, t0, t1)) > 3
    assert len(acq_between(r, t1, S.now_ns())) > 3
