# SPDX-License-Identifier: BSD-3-Clause
# `redlock run -s` (a shared lock, the read side of the read-write lock) and `-x` (exclusive, the
# default: the write side), and what `redlock status` shows of them (docs/cli.md).
from __future__ import annotations

import json

from clitest import nodes_arg, wait_for


def _status(runner, cluster5, resource):
    r = runner.run("status", "--json", "--nodes", nodes_arg(cluster5), resource)
    return r.returncode, json.loads(r.stdout)


def test_shared_holders_overlap_exclusive_waits(runner, cluster5, resource, tmp_path):
    nodes = nodes_arg(cluster5)
    a = runner.popen("run", "-s", "--nodes", nodes, resource, "--", "sleep", "30")
    b = runner.popen("run", "--shared", "--nodes", nodes, resource, "--", "sleep", "30")
    try:
        wait_for(lambda: _status(runner, cluster5, resource)[1]["readers"] == 2, what="two shared holders")
        rc, st = _status(runner, cluster5, resource)
        assert rc == 0 and st["state"] == "held" and st["mode"] == "read", st
        text = runner.run("status", "--nodes", nodes, resource).stdout
        assert "held by readers: 2 on a quorum" in text, text
        # exclusive, one attempt: refused while shared holders hold (default and -x alike)
        for flag in ([], ["-x"]):
            r = runner.run("run", *flag, "-n", "--nodes", nodes, resource, "true")
            assert r.returncode == 75, r.stderr
        # an exclusive holder that waits makes new shared ones wait
        w = runner.popen("run", "-w", "30s", "--nodes", nodes, resource, "--", "true")
        try:
            wait_for(lambda: _status(runner, cluster5, resource)[1]["writer_waiting"], what="the writer's intent")
            assert "a writer waits" in runner.run("status", "--nodes", nodes, resource).stdout
            r = runner.run("run", "-s", "-n", "--nodes", nodes, resource, "true")
            assert r.returncode == 75, r.stderr
            a.terminate()
            b.terminate()
            assert w.wait(30) == 0, w.stderr.read()
        finally:
            w.kill()
            w.wait()
    finally:
        for p in (a, b):
            p.kill()
            p.wait()


def test_exclusive_refuses_shared(runner, cluster5, resource, tmp_path):
    nodes = nodes_arg(cluster5)
    x = runner.popen("run", "--nodes", nodes, resource, "--", "sleep", "30")
    try:
        wait_for(lambda: _status(runner, cluster5, resource)[0] == 0, what="the exclusive holder")
        rc, st = _status(runner, cluster5, resource)
        # a writer holds the key as a mutex holder does: status cannot tell them apart
        assert st["mode"] == "mutex" and st["readers"] == 0, st
        r = runner.run("run", "-s", "-n", "--nodes", nodes, resource, "true")
        assert r.returncode == 75, r.stderr
    finally:
        x.terminate()    # redlock releases the lock, then dies of the signal
        x.wait()
    # -x after -s on one command line: the last one wins, as in flock
    r = runner.run("run", "-s", "-x", "-w", "10s", "--nodes", nodes, resource, "-c", "echo ok")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_shared_with_semaphore_options(runner, cluster5, resource):
    """-s beside the semaphore's -nN/--limit: a semaphore has no shared side, a usage error
    before anything is taken; flock's combined -ns is -n -s, a shared lock with one attempt."""
    nodes = nodes_arg(cluster5)
    for args in (("-s", "--limit", "2"), ("-n2", "--shared")):
        r = runner.run("run", *args, "--nodes", nodes, resource, "true")
        assert r.returncode == 2 and "no shared side" in r.stderr, (args, r.stderr)
    rc, st = _status(runner, cluster5, resource)
    assert rc == 1 and st["state"] == "free", st
    x = runner.popen("run", "-s", "--nodes", nodes, resource, "--", "sleep", "30")
    try:
        wait_for(lambda: _status(runner, cluster5, resource)[1]["readers"] == 1, what="the first reader")
        r = runner.run("run", "-ns", "--nodes", nodes, resource, "-c", "echo shared")
        assert r.returncode == 0 and r.stdout.strip() == "shared", r.stderr
    finally:
        x.terminate()
        x.wait()
    # and -n -s is refused at once while an exclusive holder has it
    x = runner.popen("run", "--nodes", nodes, resource, "--", "sleep", "30")
    try:
        wait_for(lambda: _status(runner, cluster5, resource)[0] == 0, what="the exclusive holder")
        r = runner.run("run", "-ns", "--nodes", nodes, resource, "true")
        assert r.returncode == 75, r.stderr
    finally:
        x.terminate()
        x.wait()


def _form(cluster5, i, resource):
    v = cluster5.cmd(i, "GET", resource)
    return "lone" if v and v.startswith("readers:") else "shared" if v == "readers" else v


def test_status_readers_on_different_majorities(runner, cluster5, resource):
    """Reader A holds nodes 1-3 and reader B nodes 3-5, each with its own node list: the key is
    readers:A, readers:A, readers (both in KEY:rd), readers:B, readers:B. No one value is on a
    quorum, yet two readers hold: status says held by readers, two of them, and a writer on the
    five nodes is refused. Once B leaves, A alone holds nodes 1-3 and status counts one."""
    nodes = nodes_arg(cluster5)
    urls = cluster5.urls
    a = runner.popen("run", "-s", "--nodes", ",".join(urls[:3]), resource, "--", "sleep", "60")
    b = None
    try:
        wait_for(lambda: [_form(cluster5, i, resource) for i in range(5)] == ["lone"] * 3 + [None] * 2,
                 what="reader A on nodes 1-3")
        b = runner.popen("run", "-s", "--nodes", ",".join(urls[2:]), resource, "--", "sleep", "60")
        wait_for(lambda: [_form(cluster5, i, resource) for i in range(5)] ==
                 ["lone", "lone", "shared", "lone", "lone"], what="reader B on nodes 3-5")
        values = [cluster5.cmd(i, "GET", resource) for i in range(5)]
        assert values[0] == values[1] != values[3] == values[4], values

        rc, st = _status(runner, cluster5, resource)
        assert (rc, st["state"], st["mode"], st["readers"]) == (0, "held", "read", 2), st
        assert st["holder"] == "readers" and st["holder_nodes"] == 5, st
        assert [n["readers"] for n in st["nodes"]] == [1, 1, 2, 1, 1], st
        r = runner.run("status", "--nodes", nodes, resource)
        assert r.returncode == 0, r.stdout
        assert "held by readers: 2 on a quorum" in r.stdout, r.stdout
        assert "in a reader's form on 5 of 5 nodes" in r.stdout, r.stdout
        assert "(2 readers)" in r.stdout and "another value" not in r.stdout, r.stdout

        r = runner.run("run", "-n", "--nodes", nodes, resource, "true")
        assert r.returncode == 75, r.stderr

        b.terminate()    # B releases nodes 3-5, then dies of the signal
        b.wait()
        wait_for(lambda: [_form(cluster5, i, resource) for i in range(5)] ==
                 ["lone", "lone", "shared", None, None], what="B gone")
        rc, st = _status(runner, cluster5, resource)
        assert (rc, st["mode"], st["readers"], st["holder_nodes"]) == (0, "read", 1, 3), st
    finally:
        for p in (a, b):
            if p:
                p.kill()
                p.wait()
