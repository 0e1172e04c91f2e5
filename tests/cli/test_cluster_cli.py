# SPDX-License-Identifier: BSD-3-Clause
# The redlock command on Redis/Valkey Clusters (docs/cluster.md): redis-cluster:// nodes in
# --nodes and REDLOCK_NODES, and what doctor says of clusters, independent or not.
from __future__ import annotations

import json
import time

import pytest

import rcluster


@pytest.fixture(scope="module")
def clusters():
    made = []
    try:
        made.append(rcluster.RedisCluster(shards=3, replicas=1).__enter__())
        made.append(rcluster.RedisCluster(shards=1, kind="valkey").__enter__())
        made.append(rcluster.RedisCluster(shards=1).__enter__())
        yield made
    finally:
        for rc in made:
            rc.close()


def doctor(runner, urls):
    r = runner.run("doctor", "--json", "--clock-probe", "100ms", "--nodes", ",".join(urls))
    doc = json.loads(r.stdout)
    for f in doc["findings"]:
        assert f["message"] and f["fix"]
    return r, doc


def test_run_on_cluster_nodes(runner, clusters):
    urls = ",".join(rc.url() for rc in clusters)
    for res in ("cli-cluster-a", "cli-cluster-b", "{cli}-c"):
        r = runner.run("run", "--nodes", urls, res, "true")
        assert r.returncode == 0, r.stderr
    r = runner.run("run", res, "true", env=runner.env(REDLOCK_NODES=urls))
    assert r.returncode == 0, r.stderr


def test_doctor_checks_a_cluster_shard_by_shard(runner, clusters):
    r, doc = doctor(runner, [rc.url() for rc in clusters])
    assert doc["severe"] == 0, r.stdout
    mine = [f for f in doc["findings"] if f["node"] == 0]
    info = [f for f in mine if f["check"] == "cluster"]
    assert len(info) == 1 and "3 shard(s) with 3 replica(s)" in info[0]["message"]
    assert "cluster-node-timeout 1000" in info[0]["message"]
    assert any(f["check"] == "cluster-failover" and f["severity"] == "warn" for f in mine)
    # Each shard master other than the seed is checked as a node is, and named.
    a = clusters[0]
    for s in range(1, 3):
        shown = "shard 127.0.0.1:%d: " % a.nodes.port(s)
        assert any(f["check"] == "no-persistence" and f["message"].startswith(shown) for f in mine), shown
        assert any(f["check"] == "has-replicas" and f["message"].startswith(shown) for f in mine), shown
    # Every shard master, the seed too, has its own expiry clock compared with this host's, and
    # each shard says its slots and its replicas.
    for s in range(a.shards):
        shown = "shard 127.0.0.1:%d: " % a.nodes.port(s)
        clock = [f for f in mine if f["check"] == "clock-rate" and f["message"].startswith(shown)]
        assert len(clock) == 1 and clock[0]["severity"] == "info", (shown, clock)
        shard = [f for f in mine if f["check"] == "cluster-shard" and f["message"].startswith(shown)]
        replica = a.shards + s                 # rcluster: the replicas follow the masters
        assert len(shard) == 1, (shown, shard)
        assert "1 replica(s): 127.0.0.1:%d (connected)" % a.nodes.port(replica) in shard[0]["message"], shard
    assert sum(f["check"] == "clock-rate" for f in mine) == a.shards
    # A cluster without replicas says that its shards cannot fail over.
    other = [f for f in doc["findings"] if f["node"] == 1 and f["check"] == "cluster-shard"]
    assert len(other) == 1 and "0 replica(s) (no failover" in other[0]["message"], other
    # The probes stayed on the members' own slots and cleaned up after themselves.
    assert not any(f["check"] in ("set", "scripts", "clock") and f["severity"] == "severe" for f in mine)
    for rc in clusters:
        for i in range(rc.shards):
            assert rc.cmd(i, "KEYS", "*redlock-doctor*") == []


def test_doctor_members_of_one_cluster_are_severe(runner, clusters):
    a = clusters[0]
    # Two masters of one cluster given as separate nodes, and a cluster next to one of its masters.
    for urls in (["redis://127.0.0.1:%d" % a.nodes.port(0), "redis://127.0.0.1:%d" % a.nodes.port(1),
                  clusters[1].url()],
                 [a.url(), "redis://127.0.0.1:%d" % a.nodes.port(2), clusters[2].url()]):
        r, doc = doctor(runner, urls)
        assert r.returncode == 1
        same = [f for f in doc["findings"] if f["check"] == "same-cluster"]
        assert len(same) == 1 and same[0]["severity"] == "severe" and same[0]["node"] == 1, same
        assert "same cluster as node 0" in same[0]["message"]
    r, doc = doctor(runner, ["redis://127.0.0.1:%d" % a.nodes.port(0), clusters[1].url(), clusters[2].url()])
    assert any(f["check"] == "cluster-mode" and f["severity"] == "severe" and f["node"] == 0
               for f in doc["findings"])


def test_status_shows_a_quarantined_slot_on_cluster_nodes(runner):
    # On cluster nodes the quarantine's marker is per slot, on the shard that owns it
    # (c/src/epoch.c): a shard wiped in two of three clusters puts the key's slot out there, and
    # status reads that slot's marker and reason. Clusters of its own: the wipe takes every marker
    # of the shard.
    made = []
    try:
        for kind in ("redis", "valkey", "redis"):
            made.append(rcluster.RedisCluster(shards=1, kind=kind).__enter__())
        urls = ",".join(rc.url() for rc in made)
        res = "cli-cluster-quarantine"
        r = runner.run("run", "--nodes", urls, "--ttl", "3s", res, "true")
        assert r.returncode == 0, r.stderr
        doc = json.loads(runner.run("status", "--json", res, "--nodes", urls).stdout)
        assert [n["marker"] for n in doc["nodes"]] == [True] * 3, doc["nodes"]
        assert all(n["quarantined_ms"] == 0 for n in doc["nodes"]), doc["nodes"]
        time.sleep(1.2)   # older than a deployment still being marked (RL_EPOCH_YOUNG_MS)
        for rc in made[:2]:
            assert rc.cmd(0, "FLUSHALL") == "OK"
        r = runner.run("run", "--nodes", urls, "--ttl", "1s", "--wait", "0", res, "true")
        assert r.returncode != 0
        assert "quarantined" in r.stderr and "lost its keys" in r.stderr, r.stderr
        doc = json.loads(runner.run("status", "--json", res, "--nodes", urls).stdout)
        by_index = {n["index"]: n for n in doc["nodes"]}
        for i in (0, 1):
            assert 0 < by_index[i]["quarantined_ms"] <= 3000 + 30 + 2 + 1, by_index[i]
            assert "lost its keys" in by_index[i]["quarantine_reason"], by_index[i]
        assert by_index[2]["quarantined_ms"] == 0, by_index[2]
    finally:
        for rc in made:
            rc.close()
