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
        assert st["mode"] == "write" and st["readers"] == 0, st
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
