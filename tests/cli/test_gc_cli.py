# SPDX-License-Identifier: BSD-3-Clause
# 'redlock gc' (docs/cli.md, docs/fencing.md "The counters' lifetime"): the fencing counters of
# resources unused for longer than the bound go, two runs apart (the first notes them); those of
# held resources (a lock, a semaphore's permit) and of ones used since the note stay; a bound
# under the fences' retention needs --force.
from __future__ import annotations

import time

import nodes


def test_unused_counters_go_held_and_recent_ones_stay(runner, resource):
    with nodes.Cluster(count=3, kind="mixed") as c:
        urls = ",".join(c.urls)
        env = runner.env(REDLOCK_NODES=urls)
        for name in ("a", "b"):
            assert runner.run("run", "--fencing", "%s-%s" % (resource, name), "true", env=env).returncode == 0
        held = runner.popen("run", "--fencing", resource + "-held", "sleep", "8", env=env)
        sem = runner.popen("run", "--fencing", "-n", "2", "{%s-sem}" % resource, "sleep", "8", env=env)
        assert runner.run("run", "--fencing", resource + "-recent", "true", env=env).returncode == 0
        time.sleep(0.5)
        first = int(c.cmd(0, "GET", resource + "-a:fencing") or c.cmd(1, "GET", resource + "-a:fencing"))
        r = runner.run("gc", "--unused-for", "2s", env=env)
        assert r.returncode == 2 and "--force" in r.stderr   # under the fences' retention
        # The first run only notes the unused counters (their value, and when).
        r = runner.run("gc", "--unused-for", "2s", "--force", env=env)
        assert r.returncode == 0 and r.stdout == "", r
        assert sum(c.cmd(i, "EXISTS", resource + "-a:fencing:gc") for i in range(3)) >= 2
        assert sum(c.cmd(i, "EXISTS", resource + "-held:fencing:gc") for i in range(3)) == 0   # held: no note
        time.sleep(2.2)
        # Used since the note: its value changed, so its clock starts again.
        assert runner.run("run", "--fencing", resource + "-recent", "true", env=env).returncode == 0
        r = runner.run("gc", "--unused-for", "30d", "--dry-run", env=env)
        assert r.returncode == 0 and r.stdout == "", r       # nothing that old
        r = runner.run("gc", "--unused-for", "2s", "--force", "--dry-run", env=env)
        assert r.returncode == 0, r.stderr
        gone = sorted(r.stdout.split())
        # a counter is on each node that took part in the token's round: a majority at least
        names = ["%s-a:fencing" % resource, "%s-b:fencing" % resource]
        assert set(gone) == set(names) and all(gone.count(n) >= 2 for n in names), r.stdout
        before = sum(c.cmd(i, "EXISTS", resource + "-a:fencing") for i in range(3))
        assert before == gone.count(names[0])   # a dry run removes nothing
        r = runner.run("gc", "--unused-for", "2s", "--force", env=env)
        assert r.returncode == 0 and sorted(r.stdout.split()) == gone, r
        assert "counters removed" in r.stderr, r.stderr
        for i in range(3):
            assert c.cmd(i, "EXISTS", resource + "-a:fencing") == 0
            assert c.cmd(i, "EXISTS", resource + "-a:fencing:gc") == 0
        for kept in (resource + "-held:fencing", resource + "-recent:fencing", "{%s-sem}:fencing" % resource):
            assert sum(c.cmd(i, "EXISTS", kept) for i in range(3)) >= 2, kept
        held.wait(10)
        sem.wait(10)
        # A resource used again after its counter went starts its tokens again.
        r = runner.run("run", "--fencing", resource + "-a", "sh", "-c", "echo $REDLOCK_FENCING_TOKEN", env=env)
        assert r.returncode == 0 and int(r.stdout) <= first, (r.stdout, first)


def test_errors(runner):
    r = runner.run("gc", "--unused-for", "30d", env=runner.env(REDLOCK_NODES="redis://127.0.0.1:1"))
    assert r.returncode == 69 and "node 0" in r.stderr, r.stderr
    r = runner.run("gc", "--unused-for", "soon", env=runner.env(REDLOCK_NODES="redis://127.0.0.1:1"))
    assert r.returncode == 2
    r = runner.run("gc", "extra", env=runner.env(REDLOCK_NODES="redis://127.0.0.1:1"))
    assert r.returncode == 2
    r = runner.run("gc", env=runner.env())
    assert r.returncode == 2 and "no nodes" in r.stderr
