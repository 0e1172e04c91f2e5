# SPDX-License-Identifier: BSD-3-Clause
"""The quarantine as the CLI shows it (docs/algorithm.md, "Quarantine"; docs/cli.md): a node
restarted without persistence is out of the vote, `redlock run` says so when it cannot get a
quorum, `status` shows the node's reason and time left, `doctor` reports it and the node that
has no marker beside nodes that have one."""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "harness"))

import nodes  # noqa: E402
from clitest import nodes_arg  # noqa: E402


def _markers(cluster, count):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if all(cluster.cmd(i, "EXISTS", "{redlock:epoch}") == 1 for i in range(count)):
            return
        time.sleep(0.02)
    raise AssertionError("the markers did not appear on every node")


def test_restarted_nodes_shown(runner, resource):
    with nodes.Cluster(count=3, kind="mixed") as c:
        urls = nodes_arg(c)
        # A new deployment: the first run marks every node, and nothing is out.
        r = runner.run("run", "--nodes", urls, "--ttl", "4s", resource, "true")
        assert r.returncode == 0, r.stderr
        _markers(c, 3)
        time.sleep(1.2)   # older than a deployment still being marked (RL_EPOCH_YOUNG_MS)
        # Nodes 0 and 1 restart without persistence: a majority lost its keys.
        c.restart(0)
        c.restart(1)
        t0 = time.monotonic()
        r = runner.run("run", "--nodes", urls, "--ttl", "1s", "--wait", "0", resource, "true")
        assert r.returncode != 0
        assert "quarantined" in r.stderr and "lost its keys" in r.stderr, r.stderr
        assert "out of the vote for" in r.stderr, r.stderr
        # status: the two nodes' reason and time left, the third votes
        r = runner.run("status", "--json", resource, "--nodes", urls)
        doc = json.loads(r.stdout)
        by_index = {n["index"]: n for n in doc["nodes"]}
        for i in (0, 1):
            n = by_index[i]
            assert n["marker"] is True, n   # made again by the run that found it out
            assert 0 < n["quarantined_ms"] <= 4000 + 40 + 2 + 1, n   # the 4 s TTL the markers recorded
            assert "lost its keys" in n["quarantine_reason"], n
        assert by_index[2]["quarantined_ms"] == 0 and by_index[2]["quarantine_reason"] is None
        r = runner.run("status", resource, "--nodes", urls)
        assert r.stdout.count("quarantined: lost its keys") == 2, r.stdout
        # doctor: one finding per node out
        r = runner.run("doctor", "--json", "--clock-probe", "0", "--nodes", urls)
        doc = json.loads(r.stdout)
        found = {f["node"]: f for f in doc["findings"] if f["check"] == "quarantined"}
        assert set(found) == {0, 1}, doc["findings"]
        assert all(f["severity"] == "warn" and "out of the vote for" in f["message"] for f in found.values())
        # the bound: after the quarantine, the nodes vote again
        while time.monotonic() - t0 < 4.1:
            time.sleep(0.05)
        r = runner.run("run", "--nodes", urls, "--ttl", "1s", "--wait", "2s", resource, "true")
        assert r.returncode == 0, r.stderr


def test_doctor_no_marker(runner):
    with nodes.Cluster(count=3, kind="mixed") as c:
        urls = nodes_arg(c)
        r = runner.run("run", "--nodes", urls, "--ttl", "2s", "cli-test:marker", "true")
        assert r.returncode == 0, r.stderr
        _markers(c, 3)
        c.cmd(2, "FLUSHALL")
        r = runner.run("doctor", "--json", "--clock-probe", "0", "--nodes", urls)
        doc = json.loads(r.stdout)
        found = [f for f in doc["findings"] if f["check"] == "no-marker"]
        assert [f["node"] for f in found] == [2], doc["findings"]
        assert found[0]["severity"] == "info"
