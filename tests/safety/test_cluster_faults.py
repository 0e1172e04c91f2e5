# SPDX-License-Identifier: BSD-3-Clause
"""The fault matrix on Redis/Valkey Clusters as Redlock nodes (docs/cluster.md, docs/algorithm.md
"A cluster as a node"): real lock client processes (client.c) against three independent clusters,
one redis-cluster:// URL each, faults inside the clusters, verdicts from check.py.

Short form (make test, through make test-safety): each row on small clusters and short runs,
about 30 s in all. Long form (make test-cluster, REDLOCK_CLUSTER_LONG=1): three clusters of three
shards, longer runs, and the failover rows that only show a limit already shown in make test.

Where the assumptions hold, zero violations. Where a failover promotes a replica that missed the
last writes on a majority of the nodes that granted a lock, the checker reports the overlap: the
same limit as a restart without persistence (test_faults.py, test_crash_restart)."""
import os
import time

import pytest

import rcluster
import safetylib as S

LONG = os.environ.get("REDLOCK_CLUSTER_LONG") == "1"
long_only = pytest.mark.skipif(not LONG, reason="long form: make test-cluster (REDLOCK_CLUSTER_LONG=1)")

RESOURCE = "safety:cluster"
ENOQUORUM = -4
ELOST = -6


def finish(run):
    run.stop()
    r = run.check()
    print(r.summary())
    return r


def assert_safe(r):
    assert r.ok, "violations:\n" + "\n".join(r.violations)


def acq_between(r, start, end):
    return [w for w in r.windows if start <= w.t_acq <= end]


def clusters(specs):
    """specs: (shards, replicas) per cluster; kinds alternate redis, valkey, redis."""
    return rcluster.start_all([rcluster.RedisCluster(shards=shards, replicas=replicas,
                                                     kind="valkey" if k % 2 else "redis")
                               for k, (shards, replicas) in enumerate(specs)])


def close_all(made):
    for rc in made:
        rc.close()


# ---------------------------------------------------------------------------------------------
# A shard of one cluster dies; a slot moves under load

def test_cluster_shard_master_killed_and_restarted(make_run):
    """The shard that owns the resource's slot in one cluster is SIGKILLed, kept down longer than
    the TTL (assumption 2), and restarted empty: that node fails for the slot meanwhile, the other
    two keep granting, no violation, and the shard is used again after its restart.
    Short form: that cluster has three shards, the others one."""
    ttl = 1000
    made = clusters([(3, 0)] * 3 if LONG else [(3, 0), (1, 0), (1, 0)])
    try:
        a = made[0]
        victim = a.master_for_key(RESOURCE)
        run = make_run([rc.url() for rc in made], RESOURCE)
        f = S.Faults(run, a.nodes)
        run.spawn_many(3, ttl=ttl, duration=60)
        time.sleep(1.0 if LONG else 0.5)
        t_kill = f.kill(victim)
        time.sleep(1.5 if LONG else 1.2)     # > ttl: every key it held has expired
        t_back = f.restart(victim)
        a.wait_ok()
        time.sleep(1.5 if LONG else 0.8)
        sets = a.cmd(victim, "INFO", "commandstats")
        r = finish(run)
    finally:
        close_all(made)
    assert_safe(r)
    least = 3 if LONG else 0
    assert len(acq_between(r, t_kill, t_back)) > least, "acquisitions stopped while one cluster's shard was down"
    assert len(acq_between(r, t_back, S.now_ns())) > least
    assert "cmdstat_set:calls=" in sets or "cmdstat_eval" in sets, "the restarted shard received no lock command"


def test_cluster_slot_migrated_under_load(make_run):
    """The resource's slot moves to another shard (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE)
    while clients contend for it: no violation, and acquisitions go on during and after.
    Short form: that cluster has two shards, the others one, and fewer rounds of MIGRATE."""
    ttl = 1000
    made = clusters([(3, 0)] * 3 if LONG else [(2, 0), (1, 0), (1, 0)])
    try:
        a = made[0]
        slot = rcluster.keyslot(RESOURCE)
        src = a.master_for_slot(slot)
        dst = (src + 1) % a.shards
        run = make_run([rc.url() for rc in made], RESOURCE)
        run.spawn_many(3, ttl=ttl, duration=60)
        time.sleep(1.0 if LONG else 0.5)
        t0 = run.fault("migrate", "node0", detail="slot%d" % slot)
        a.cmd(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", a.ids[src])
        a.cmd(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", a.ids[dst])
        moved = 0
        for _ in range(20 if LONG else 8):    # keys come and go under load: move them in rounds
            keys = a.cmd(src, "CLUSTER", "GETKEYSINSLOT", slot, 1000)
            if keys:
                try:
                    a.cmd(src, "MIGRATE", "127.0.0.1", a.nodes.port(dst), "", 0, 5000, "KEYS", *keys)
                    moved += len(keys)
                except S.nodes.ReplyError:
                    pass                      # a key that expired meanwhile: the next round
            time.sleep(0.05)
        for i in range(a.shards):
            a.cmd(i, "CLUSTER", "SETSLOT", slot, "NODE", a.ids[dst])
        a.wait_ok()
        t1 = run.heal("migrate", "node0", detail="moved=%d" % moved)
        time.sleep(1.5 if LONG else 0.8)
        r = finish(run)
        assert a.master_for_slot(slot) == dst
    finally:
        close_all(made)
    assert_safe(r)
    least = 3 if LONG else 0
    assert len(acq_between(r, t0, t1)) > least
    assert len(acq_between(r, t1, S.now_ns())) > least


# ---------------------------------------------------------------------------------------------
# A failover that promotes a replica which missed the last writes (no WAIT)
#
# Each cluster is one shard with one replica. To make "the replica missed the grant" certain
# rather than a race with asynchronous replication (which on one machine almost always wins),
# the replica is SIGSTOPped and its master drops the replication link *before* the grant: every
# write after that reaches the master only. The master is SIGKILLed right after the grant, and
# the replica, resumed, is promoted at once with CLUSTER FAILOVER TAKEOVER (no delay for the TTL
# to outlast: the worst case). Client A holds a long lease meanwhile; client B then asks.

def cut_replication(rc):
    """From now on the replica (process 1) hears nothing from its master (process 0)."""
    rc.nodes.pause(1)
    rc.cmd(0, "CLIENT", "KILL", "TYPE", "replica")


def fail_over(run, rc, node):
    """SIGKILL the master of cluster `node`, promote its replica (which missed what the master
    wrote since cut_replication); logged as a fault that loses keys. Returns how many bytes of
    the master's replication stream the promoted replica never saw."""
    master_off = int(info(rc, 0, "replication")["master_repl_offset"])
    rc.kill(0)
    run.fault("failover", "node%d" % node, loses_keys=True, detail="takeover")
    rc.nodes.resume(1)
    replica_off = int(info(rc, 1, "replication")["master_repl_offset"])
    rc.cmd(1, "CLUSTER", "FAILOVER", "TAKEOVER")
    deadline = time.monotonic() + 30
    while rc.master_for_slot(0, via=1) != 1:
        assert time.monotonic() < deadline, "the replica of cluster %d was not promoted" % node
        time.sleep(0.01)
    run.heal("failover", "node%d" % node)
    return master_off - replica_off


def info(rc, i, section):
    out = {}
    for line in rc.cmd(i, "INFO", section).splitlines():
        k, sep, v = line.partition(":")
        if sep:
            out[k] = v.strip()
    return out


def failover_urls(made):
    """Each cluster's URL names its replica as a seed too: the client finds the promoted one."""
    return [rc.url(seeds=[0, 1]) for rc in made]


@pytest.mark.parametrize("case", [
    "one-of-three",
    pytest.param("two-of-three", marks=long_only),
    pytest.param("two-of-three-unmarked", marks=long_only),
    pytest.param("one-of-bare-majority", marks=long_only),
    pytest.param("one-of-bare-majority-no-quarantine", marks=long_only),
])
def test_cluster_failover_without_wait(make_run, case):
    """The slot's quarantine markers (c/src/epoch.c) are made and replicated first, as in a
    deployment that has run for a while, except in "-unmarked".
    - one-of-three: A holds on all three clusters; one of them fails over and forgets A's key.
      B gets that one node only and waits: no violation. This is the case docs/algorithm.md
      argues: a failover in one independent cluster is one forgetting node, and a lock granted
      by all three survives it.
    - two-of-three: two clusters fail over within A's lease and both forget A's key, but the
      promoted replicas have the slot's marker, so the quarantine cannot see the loss: B gets a
      majority while A holds. The checker reports the overlap and the lost update: a majority of
      forgetting nodes, the limit of assumption 2.
    - two-of-three-unmarked: the same, but the replicas also missed the marker (made at A's first
      acquisition): the quarantine sees the loss and B waits for A. No violation.
    - one-of-bare-majority: A acquired while cluster 2 was down, so its majority is exactly
      clusters 0 and 1; cluster 0 fails over and forgets; cluster 2 comes back empty. Without its
      marker, cluster 2 is quarantined: B cannot make a majority while A holds. No violation.
    - one-of-bare-majority-no-quarantine: the same with plain Redlock: B gets {0, 2} while A
      holds: one failover is enough when the lock had no node to spare."""
    ttl = 10000
    made = clusters([(1, 1)] * 3)
    try:
        urls = failover_urls(made)
        run = make_run(urls, RESOURCE)
        forget = {"one-of-three": [0], "two-of-three": [0, 1], "two-of-three-unmarked": [0, 1],
                  "one-of-bare-majority": [0], "one-of-bare-majority-no-quarantine": [0]}[case]
        plain = case.endswith("-no-quarantine")
        extra = ["--no-quarantine"] if plain else []
        if not case.endswith("-unmarked"):
            # The markers of the slot, on every master and, acknowledged, on its replica.
            run.spawn(2, ttl=2000, hold=1, iterations=1, node_timeout=1000, duration=20, extra_args=extra)
            run.wait(timeout=30, cids=[2])
            for rc in made:
                assert rc.cmd(0, "WAIT", 1, 5000) == 1, "the replica did not acknowledge the markers"
        bare = case.startswith("one-of-bare-majority")
        if bare:
            made[2].kill(0)                        # cluster 2 down: no master for the slot
            run.fault("kill", "node2", loses_keys=True)
        for k in forget:
            cut_replication(made[k])
        run.spawn(0, ttl=ttl, hold=3000, margin=100, iterations=1, node_timeout=1000, duration=60,
                  extra_args=extra)
        run.wait_event(0, "ACQ", timeout=10)
        run.wait_event(0, "CS", timeout=10)
        held = [rc.cmd(0, "EXISTS", RESOURCE) if rc.nodes.is_running(0) else 0 for rc in made]
        missed = [fail_over(run, made[k], k) for k in forget]
        # The promoted replicas do not have A's key: the grant's write was lost with the master.
        after = [made[k].cmd(1, "EXISTS", RESOURCE) for k in forget]
        if bare:
            made[2].nodes.restart(0)               # back, empty, as the master of its slots
            run.heal("restart", "node2")
            made[2].wait_ok()
        run.spawn(1, ttl=ttl, hold=20, iterations=1, wait=3 * ttl, retry_delay=20, retry_jitter=50, duration=60,
                  extra_args=extra)
        run.wait(timeout=3 * ttl / 1000 + 10)
        r = run.check()
        print(r.summary())
    finally:
        close_all(made)
    expect_held = [1, 1, 0] if bare else [1, 1, 1]
    assert held == expect_held, "A's grant is not on the clusters the construction needs: %s" % held
    assert all(m > 0 for m in missed), "a promoted replica saw the whole stream: %s" % missed
    assert after == [0] * len(forget), "a promoted replica has A's key: the write was not lost"
    a = next(w for w in r.windows if w.client == 0)
    b = [w for w in r.windows if w.client == 1]
    assert b, "client B never acquired"
    b = b[0]
    if case in ("one-of-three", "two-of-three-unmarked", "one-of-bare-majority"):
        assert_safe(r)
        assert b.t_acq >= a.end, "B acquired while A held"
    else:
        assert b.t_acq < a.end, "B did not acquire while A held: the construction failed"
        assert [(x.client, y.client) for x, y in r.overlaps] == [(0, 1)], "the checker missed the overlap"
        assert r.lost_updates == 1, "the checker missed the lost update"
        assert not r.ok
        # A's release finds its lock gone on a majority (ELOST), or meets the dead master on its
        # old connection first, which fails that node for this one command (ENOQUORUM): either
        # way it does not report a lock it lost as released.
        assert a.rel_rc in (ELOST, ENOQUORUM), a.rel_rc
        assert not r.unexplained_elost
