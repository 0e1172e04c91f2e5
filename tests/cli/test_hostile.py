# SPDX-License-Identifier: BSD-3-Clause
# Nodes that are not what they claim: a hostile node whose replies would crash a client with an
# unguarded reader, and nodes that answer +OK to everything. They are fake nodes (fakenode.py),
# because no real server can be made to answer so; the honest nodes next to them are real.
from __future__ import annotations

import json
import os
import signal
import time
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakenode import NESTED, OK, FakeNode  # noqa: E402


def assert_no_signal(r, what):
    # A crash shows as a negative returncode (killed by a signal); 139 would be a shell's view.
    assert r.returncode >= 0, "%s died of %s: %s" % (what, signal.Signals(-r.returncode).name, r.stderr)
    assert r.returncode not in (134, 139), (what, r.returncode, r.stderr)


def test_status_survives_a_node_nesting_replies(runner, cluster5, resource):
    with FakeNode(NESTED) as fake:
        # Alone: the one node fails, clearly, and status says the state is unknown.
        r = runner.run("status", "--nodes", fake.url, resource, timeout=60)
        assert_no_signal(r, "status")
        assert r.returncode == 69, (r.returncode, r.stdout, r.stderr)
        assert "protocol error" in r.stdout and "nested" in r.stdout, r.stdout
        # Next to real nodes: the other nodes' answers still count, the fake one is an error.
        urls = cluster5.urls[:2] + [fake.url]
        r = runner.run("status", "--json", "--nodes", ",".join(urls), resource, timeout=60)
        assert_no_signal(r, "status")
        doc = json.loads(r.stdout)
        assert doc["nodes"][2]["state"] == "error"
        assert "protocol error" in doc["nodes"][2]["error"]
        assert [n["state"] for n in doc["nodes"][:2]] == ["free", "free"]
        assert r.returncode == 1   # 2 of 3 answered: a quorum, and the key is free
        assert fake.commands, "the fake node was never asked"


def test_doctor_survives_a_node_nesting_replies(runner, cluster5):
    with FakeNode(NESTED) as fake:
        urls = cluster5.urls[:2] + [fake.url]
        r = runner.run("doctor", "--json", "--clock-probe", "0", "--nodes", ",".join(urls), timeout=60)
        assert_no_signal(r, "doctor")
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
        doc = json.loads(r.stdout)
        mine = [f for f in doc["findings"] if f["node"] == 2]
        assert any(f["check"] == "protocol" and f["severity"] == "severe" and "nested" in f["message"]
                   for f in mine), mine
        # The real nodes were checked as usual.
        assert not [f for f in doc["findings"] if f["node"] in (0, 1) and f["severity"] == "severe"]

        r = runner.run("doctor", "--clock-probe", "0", "--nodes", fake.url, timeout=60)
        assert_no_signal(r, "doctor")
        assert r.returncode == 1
        assert "SEVERE" in r.stdout and "no Redis server sends" in r.stdout, r.stdout


def test_run_survives_a_node_nesting_replies(runner, cluster5, resource):
    # run goes through the library, whose connections are hardened too: the fake node is one
    # failed vote, and the real majority still grants the lock.
    with FakeNode(NESTED) as fake:
        r = runner.run("run", "-n", "--nodes", fake.url, resource, "true", timeout=60)
        assert_no_signal(r, "run")
        assert r.returncode == 69 and "nested" in r.stderr, (r.returncode, r.stderr)
        urls = cluster5.urls[:2] + [fake.url]
        r = runner.run("run", "-n", "--nodes", ",".join(urls), resource, "--", "echo", "ran", timeout=60)
        assert_no_signal(r, "run")
        assert r.returncode == 0 and r.stdout.strip() == "ran", (r.returncode, r.stderr)


def test_a_password_does_not_reach_a_hostile_node_unhardened(runner):
    # AUTH's reply is read by the hardened reader too: a node nesting replies to AUTH fails
    # cleanly at connect time.
    with FakeNode(NESTED) as fake:
        url = "redis://:s3cret-pw@127.0.0.1:%d" % fake.port
        r = runner.run("status", "--nodes", url, "res", timeout=60)
        assert_no_signal(r, "status")
        assert r.returncode == 69
        assert "s3cret-pw" not in r.stdout + r.stderr
        assert "protocol error" in r.stdout


def test_doctor_flags_nodes_that_say_ok_to_everything(runner, cluster5):
    with FakeNode(OK) as f1, FakeNode(OK) as f2, FakeNode(OK) as f3:
        urls = cluster5.urls[:2] + [f1.url, f2.url, f3.url]
        r = runner.run("doctor", "--json", "--clock-probe", "200ms", "--nodes", ",".join(urls), timeout=60)
        assert_no_signal(r, "doctor")
        assert r.returncode == 1, (r.stdout, r.stderr)
        doc = json.loads(r.stdout)
        severe = {(f["node"], f["check"]) for f in doc["findings"] if f["severity"] == "severe"}
        for node in (2, 3, 4):
            for check in ("fake-ok", "info-invalid", "clock-skipped"):
                assert (node, check) in severe, (node, check, doc["findings"])
        # The honest nodes: no severe finding, and their clocks were compared.
        assert not {s for s in severe if s[0] in (0, 1)}, severe
        assert {(f["node"], f["check"]) for f in doc["findings"]} >= {(0, "clock-rate"), (1, "clock-rate")}
        fake_msgs = [f["message"] for f in doc["findings"] if f["check"] == "fake-ok" and f["node"] == 2]
        assert any("SET NX" in m and "+OK" in m for m in fake_msgs), fake_msgs
        assert any("unknown command" in m for m in fake_msgs), fake_msgs

        # Text output says it too.
        r = runner.run("doctor", "--clock-probe", "0", "--nodes", ",".join(urls), timeout=60)
        assert r.returncode == 1
        assert r.stdout.count("[fake-ok]") >= 3 and "[clock-skipped]" in r.stdout


def test_three_lying_nodes_of_five_fail_the_quarantine_check(runner, cluster5, resource):
    # What doctor's fake-ok finding protects against (docs/security.md, Trust model): a majority
    # of nodes answering +OK to everything would say OK to every client's SET NX. The quarantine's
    # check behind each SET (docs/algorithm.md, "Quarantine") wants a reply such a node does not
    # give, so their grants do not count: no run holds the lock, and each says why.
    with FakeNode(OK) as f1, FakeNode(OK) as f2, FakeNode(OK) as f3:
        nodes = ",".join(cluster5.urls[:2] + [f1.url, f2.url, f3.url])
        for _ in range(2):
            r = runner.run("run", "-n", "--nodes", nodes, resource, "--", "true", timeout=30)
            assert r.returncode == 69, (r.returncode, r.stderr)
            assert r.stderr.count("the quarantine check: unexpected reply") == 3, r.stderr
        assert not cluster5.cmd(0, "EXISTS", resource) and not cluster5.cmd(1, "EXISTS", resource)
        with FakeNode(OK) as g:
            honest = ",".join(cluster5.urls[:4] + [g.url])
            first = runner.popen("run", "--nodes", honest, resource + "-b", "--", "sleep", "3")
            try:
                deadline = time.monotonic() + 10
                while not cluster5.cmd(0, "EXISTS", resource + "-b"):
                    assert time.monotonic() < deadline
                    time.sleep(0.02)
                second = runner.run("run", "-n", "--nodes", honest, resource + "-b", "--", "true", timeout=30)
                # One liar of five cannot: the honest majority refuses.
                assert second.returncode == 75, (second.returncode, second.stderr)
            finally:
                first.kill()
                first.wait()


@pytest.mark.parametrize("reply,word", [(b"$0\r\n\r\n", "empty"), (b"$5\r\nhello\r\n", "unparsable"),
                                        (b":1\r\n", "not a text reply")])
def test_doctor_flags_an_empty_or_unparsable_info(runner, cluster5, reply, word):
    with FakeNode(reply) as fake:
        r = runner.run("doctor", "--json", "--clock-probe", "0", "--nodes", fake.url, timeout=60)
        assert_no_signal(r, "doctor")
        assert r.returncode == 1, (r.stdout, r.stderr)
        doc = json.loads(r.stdout)
        found = [f for f in doc["findings"] if f["node"] == 0 and f["check"] == "info-invalid"]
        assert found and found[0]["severity"] == "severe" and word in found[0]["message"], doc["findings"]
        # Whatever it said about itself is not shown as the server's identity.
        assert doc["nodes"][0]["server"] is None and doc["nodes"][0]["run_id"] is None
