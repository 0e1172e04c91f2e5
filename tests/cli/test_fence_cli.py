# SPDX-License-Identifier: BSD-3-Clause
# 'redlock fence' (docs/cli.md): a shell script's write to a Redis/Valkey store through a
# resource's fence, with the token 'redlock run --fencing' gives COMMAND; the library's fence
# script, so the same rules as the bindings' (tests/python/test_fence.py).
from __future__ import annotations

import shlex

import pytest


def cmd(cluster, i, *args):
    return cluster.cmd(i, *args)


def test_writes_refusals_and_replies(runner, cluster5, resource):
    store = cluster5.urls[0]
    env = runner.env(REDLOCK_STORE=store)
    r = runner.run("fence", "--token", "5", resource, "set", resource + ":v", "five", env=env)
    assert (r.returncode, r.stdout) == (0, "OK\n"), r.stderr
    r = runner.run("fence", "--token", "5", resource, "incrby", resource + ":n", "3", env=env)
    assert (r.returncode, r.stdout) == (0, "3\n"), r.stderr
    r = runner.run("fence", "--token", "4", resource, "set", resource + ":v", "late", env=env)
    assert r.returncode == 77 and "REDLOCK_EFENCED" in r.stderr, r
    assert "token 4 is older than 5, the fence of '%s'" % resource in r.stderr, r.stderr
    assert cmd(cluster5, 0, "GET", resource + ":v") == "five"
    r = runner.run("fence", "--token", "9", resource, "advance", env=env)
    assert (r.returncode, r.stdout) == (0, "5\n"), r.stderr            # the fence it had
    r = runner.run("fence", "--token", "8", resource, "rpush", resource + ":l", "x", env=env)
    assert r.returncode == 77
    r = runner.run("fence", "--token", "9", resource, "hset", resource + ":h", "a", "1", "b", "2", env=env)
    assert (r.returncode, r.stdout) == (0, "2\n"), r.stderr
    r = runner.run("fence", "--token", "9", "--px", "30s", resource, "set", resource + ":e", "x", env=env)
    assert r.returncode == 0 and 0 < int(cmd(cluster5, 0, "PTTL", resource + ":e")) <= 30000
    r = runner.run("fence", "--token", "9", resource, "del", resource + ":e", env=env)
    assert (r.returncode, r.stdout) == (0, "1\n")
    pttl = int(cmd(cluster5, 0, "PTTL", "{%s}:fence" % resource))
    assert 7 * 86400 * 1000 - 60000 < pttl <= 7 * 86400 * 1000      # the default retention
    r = runner.run("fence", "--token", str(2**64 - 1), "--retention", "1h", resource, "advance", env=env)
    assert r.returncode == 0
    assert cmd(cluster5, 0, "GET", "{%s}:fence" % resource) == str(2**64 - 1)


@pytest.mark.parametrize("args,why", [
    (["--token", "1", "R", "set", "k"], "takes KEY VALUE"),
    (["--token", "1", "R", "hset", "k", "f"], "takes KEY FIELD VALUE"),
    (["--token", "1", "R", "frob", "k"], "unknown operation"),
    (["--token", "0", "R", "del", "k"], "not an integer from 1"),
    (["--token", "-3", "R", "del", "k"], "not an integer from 1"),
    (["--token", "18446744073709551616", "R", "del", "k"], "not an integer from 1"),
    (["--token", "12abc", "R", "del", "k"], "not an integer from 1"),
    (["R", "del", "k"], "no token"),
    (["--token", "1", "a}b", "del", "k"], "hash tag"),
    (["--token", "1", "", "del", "k"], "RESOURCE must be"),
    (["--token", "1", "R"], "missing OP"),
    (["--token", "1", "--px", "5s", "R", "del", "k"], "--px goes with set only"),
    (["--token", "1", "--px", "0", "R", "set", "k", "v"], "--px"),
    (["--token", "1", "--retention", "soon", "R", "advance"], "--retention"),
])
def test_usage_errors(runner, cluster5, args, why):
    r = runner.run("fence", *args, env=runner.env(REDLOCK_STORE=cluster5.urls[0]))
    assert r.returncode == 2 and why in r.stderr, (r.returncode, r.stderr)


def test_store_errors(runner, cluster5):
    r = runner.run("fence", "--token", "1", "R", "del", "k")
    assert r.returncode == 2 and "no store" in r.stderr
    r = runner.run("fence", "--store", "redis://127.0.0.1:1", "--token", "1", "R", "del", "k")
    assert r.returncode == 69 and "cannot connect" in r.stderr, r.stderr
    r = runner.run("fence", "--store", "nope://x", "--token", "1", "R", "del", "k")
    assert r.returncode == 2, r.stderr
    url = cluster5.urls[0].replace("redis://", "redis://:wrong@")
    r = runner.run("fence", "--store", url, "--token", "1", "R", "del", "k")
    assert r.returncode == 69, r.stderr   # a password the store does not have: refused, not a fence


def test_from_redlock_run(runner, cluster5, resource):
    # The token of the run's acquisition reaches COMMAND, whose fenced writes then fence off
    # the earlier holder: the second run's token is above the first's.
    nodes = ",".join(cluster5.urls)
    script = "redlock_fence() { %s fence \"$@\"; }; redlock_fence %s set %s \"$REDLOCK_FENCING_TOKEN\"" % (
        shlex.quote(runner.cli), shlex.quote(resource), shlex.quote(resource + ":by"))
    env = runner.env(REDLOCK_NODES=nodes, REDLOCK_STORE=cluster5.urls[1])
    for _ in range(2):
        r = runner.run("run", "--fencing", resource, "sh", "-c", script, env=env)
        assert r.returncode == 0, r.stderr
    second = int(cmd(cluster5, 1, "GET", resource + ":by"))
    r = runner.run("fence", "--token", str(second - 1), resource, "set", resource + ":by", "stale", env=env)
    assert r.returncode == 77, r.stderr
    assert int(cmd(cluster5, 1, "GET", resource + ":by")) == second
