# SPDX-License-Identifier: BSD-3-Clause
# flock(1) compatibility of `redlock run` (docs/cli.md, "flock(1) compatibility"): -c in both
# positions, -n, -w/--timeout, -E, -o, -x, --verbose, and the flock options redlock refuses.
from __future__ import annotations

import time

import pytest

from clitest import nodes_arg, wait_for


@pytest.fixture
def holder(runner, cluster5, resource):
    """Another client holding `resource` for a few seconds."""
    p = runner.popen("run", "--nodes", nodes_arg(cluster5), resource, "--", "sleep", "5")
    wait_for(lambda: cluster5.cmd(0, "EXISTS", resource) or cluster5.cmd(1, "EXISTS", resource), what="holder")
    yield p
    p.kill()
    p.wait()


@pytest.mark.parametrize("order", ["c-first", "c-after"])
def test_dash_c_in_either_position(runner, cluster5, resource, tmp_path, order):
    out = tmp_path / "out"
    shell = 'echo "$REDLOCK_RESOURCE $0" > %s; exit 7' % out
    args = ["-c", shell, resource] if order == "c-first" else [resource, "-c", shell]
    r = runner.run("run", "--nodes", nodes_arg(cluster5), *args)
    assert r.returncode == 7, r.stderr              # the shell's own status, as flock gives
    assert out.read_text().split() == [resource, "/bin/sh"]
    # Like flock, -c takes one command line: nothing may follow it.
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "-c", "true", "extra")
    assert r.returncode == 2 and "extra" in r.stderr


def test_command_options_still_belong_to_the_command(runner, cluster5, resource):
    # After RESOURCE, the first non-option word starts COMMAND: its -c is sh's, not ours.
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "sh", "-c", "exit 5")
    assert r.returncode == 5, r.stderr


def test_nonblock_timeout_and_conflict_code(runner, cluster5, resource, holder):
    nodes = nodes_arg(cluster5)
    for flag in ("-n", "--nonblock", "--nb"):
        r = runner.run("run", flag, "--nodes", nodes, resource, "-c", "echo ran")
        assert r.returncode == 75, (flag, r.returncode, r.stderr)
        assert "ran" not in r.stdout
    r = runner.run("run", "-n", "-E", "1", "--nodes", nodes, "-c", "true", resource)
    assert r.returncode == 1, r.stderr
    r = runner.run("run", "--conflict-exit-code", "9", "-n", "--nodes", nodes, resource, "true")
    assert r.returncode == 9
    for flag in ("-w", "--timeout", "--wait"):
        t0 = time.monotonic()
        r = runner.run("run", flag, "0.4", "--nodes", nodes, resource, "-c", "true")
        took = time.monotonic() - t0
        assert r.returncode == 75, (flag, r.stderr)
        assert 0.35 <= took < 4, (flag, took)
    r = runner.run("run", "-w", "0.3", "-E", "3", "--nodes", nodes, resource, "true")
    assert r.returncode == 3


def test_accepted_no_op_flags_and_verbose(runner, cluster5, resource):
    r = runner.run("run", "-o", "-x", "--close", "--exclusive", "--verbose", "--nodes", nodes_arg(cluster5),
                   resource, "-c", "echo body")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "body"
    assert "getting the lock took" in r.stderr
    assert "running '/bin/sh'" in r.stderr and "released" in r.stderr


@pytest.mark.parametrize("flag", ["-u", "--unlock", "-F", "--no-fork"])
def test_flock_options_redlock_refuses(runner, cluster5, resource, flag):
    r = runner.run("run", flag, "--nodes", nodes_arg(cluster5), resource, "true")
    assert r.returncode == 2, (flag, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1
