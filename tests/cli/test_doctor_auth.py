# SPDX-License-Identifier: BSD-3-Clause
# A node that wants a password (requirepass): doctor and status name the cause and its fix (a
# password missing from the URL, or one the node refuses), and doctor reports nothing else about
# that node: its other checks cannot run on a connection the node refused.
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness"))
import nodes  # noqa: E402

PASSWORD = "doctor-Auth-7"
# The fixes of checks that a refused client cannot run: listed after a NOAUTH before the fix.
UNRELATED = ("+ping", "Lua scripting", "accept writes")


@pytest.fixture(scope="module")
def three():
    """Three nodes, the second of which wants PASSWORD (the harness cannot talk to it after)."""
    with nodes.Cluster(count=3, kind="mixed") as c:
        c.cmd(1, "CONFIG", "SET", "requirepass", PASSWORD)
        yield c


def with_password(url, password):
    scheme, rest = url.split("://", 1)
    return "%s://:%s@%s" % (scheme, password, rest)


def doctor(runner, urls, *extra):
    r = runner.run("doctor", "--clock-probe", "100ms", *extra, "--nodes", ",".join(urls))
    return r


def node1(doc):
    return [f for f in doc["findings"] if f["node"] == 1]


def test_doctor_names_a_missing_password(runner, three):
    urls = three.urls
    r = doctor(runner, urls, "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    mine = node1(doc)
    assert [f["check"] for f in mine] == ["auth"], mine
    assert mine[0]["severity"] == "severe"
    assert "needs a password" in mine[0]["fix"] and "redis://:PASSWORD@" in mine[0]["fix"], mine
    assert "NOAUTH" in mine[0]["message"], mine
    for f in mine:
        assert not any(u in f["fix"] for u in UNRELATED), f
    # the two nodes that take the client still make a quorum
    assert not any(f["check"] == "no-quorum" for f in doc["findings"]), doc["findings"]
    text = doctor(runner, urls).stdout
    block = text.split("\nnode 1 ", 1)[1].split("\nnode 2 ", 1)[0]
    assert "needs a password" in block and block.count("SEVERE") == 1, block
    for u in UNRELATED:
        assert u not in block, block


def test_doctor_names_a_refused_password(runner, three):
    urls = list(three.urls)
    urls[1] = with_password(urls[1], "not-" + PASSWORD)
    r = doctor(runner, urls, "--json")
    assert r.returncode == 1
    mine = node1(json.loads(r.stdout))
    assert [f["check"] for f in mine] == ["auth"], mine
    assert "the password (or user) in the URL is refused" in mine[0]["fix"], mine
    assert "not-" + PASSWORD not in r.stdout
    # and with the right one, no auth finding at all
    urls[1] = with_password(three.url(1), PASSWORD)
    doc = json.loads(doctor(runner, urls, "--json").stdout)
    assert not any(f["check"] == "auth" for f in doc["findings"]), doc["findings"]
    assert any(f["check"] == "clock-rate" for f in node1(doc)), node1(doc)


def test_status_names_the_auth_cause(runner, three):
    urls = list(three.urls)
    r = runner.run("status", "--nodes", ",".join(urls), "auth-status")
    assert r.returncode == 1, r.stdout + r.stderr     # free on the two others: a quorum answered
    row = [line for line in r.stdout.splitlines() if line.strip().startswith("1 ")][0]
    assert "needs a password" in row and "redis://:PASSWORD@" in row, row
    st = json.loads(runner.run("status", "--json", "--nodes", ",".join(urls), "auth-status").stdout)
    assert st["nodes"][1]["state"] == "error" and "needs a password" in st["nodes"][1]["error"], st
    urls[1] = with_password(urls[1], "not-" + PASSWORD)
    r = runner.run("status", "--nodes", ",".join(urls), "auth-status")
    row = [line for line in r.stdout.splitlines() if line.strip().startswith("1 ")][0]
    assert "the password (or user) in the URL is refused" in row, row
