# SPDX-License-Identifier: BSD-3-Clause
# Issue 36: a node that refuses the client is never taken for a busy lock. `redlock run` (the
# lock, which is the write side of the read-write lock; -s; -n 2; --also; --wake) and `redlock
# elect` against nodes that want a password and get none or a wrong one, against an ACL user
# without scripting, and against nodes whose EVAL and EVALSHA are disabled: exit 69
# (EX_UNAVAILABLE) with the cause on stderr, within 2 s, with no --wait (forever) and with
# -w 10s. Never 75 ("held elsewhere"), never a wait. One refusing node of three does not stop a
# free lock.
#
# Before the fix, the password cases of `run` (write side), -n 2, --also, --wake and elect never
# returned without -w and exited 75 with -w 10s after 10 s (Redis closes an unauthenticated connection that sends more than 10 arguments,
# which reads as an I/O failure).
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness"))
import nodes  # noqa: E402

from refusing import (COMMAND_RE, NOAUTH_TEXT, OTHER_PW, PW, WRONGPASS_RE, acl_users,  # noqa: E402
                      guarded as guarded_nodes, scripts_disabled, with_user as _with_user)

PROMPT = 2.0          # a refusal must end the command within this
HANG = 15             # what a test waits before it calls the command hung (then kills it)

# How each command is spelled, given the resource; COMMAND is `true`.
COMMANDS = {
    "run": lambda r: ["run", r, "--", "true"],
    "run-shared": lambda r: ["run", "-s", r, "--", "true"],
    "run-semaphore": lambda r: ["run", "-n", "2", r, "--", "true"],
    "run-also": lambda r: ["run", r, "--also", r + "-b", "--", "true"],
    "run-wake": lambda r: ["run", "--wake", r, "--", "true"],
    "elect": lambda r: ["elect", r, "candidate", "--", "true"],
}
WAITS = {"forever": [], "w10s": ["-w", "10s"]}


def _args(command, wait, resource):
    words = COMMANDS[command](resource)
    return words[:1] + WAITS[wait] + words[1:]


def _run(runner, urls, args):
    """Runs the CLI with the nodes in $REDLOCK_NODES; returns (result, seconds). A command still
    running after HANG seconds fails the test (it would have waited for ever)."""
    env = runner.env(REDLOCK_NODES=",".join(urls))
    t0 = time.monotonic()
    try:
        r = runner.run(*args, env=env, timeout=HANG)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"redlock {' '.join(args)} still running after {HANG} s (killed); "
                    f"stderr so far: {e.stderr!r}")
    return r, time.monotonic() - t0


def _refused(runner, urls, command, wait, resource):
    args = _args(command, wait, resource)
    r, elapsed = _run(runner, urls, args)
    assert r.returncode == 69, f"redlock {' '.join(args)}: exit {r.returncode} after {elapsed:.2f} s, " \
                               f"want 69: {r.stderr}"
    assert elapsed < PROMPT, f"redlock {' '.join(args)}: took {elapsed:.2f} s: {r.stderr}"
    return r.stderr


def _names_a_node(stderr, cluster, which=None):
    ports = [cluster.port(i) for i in (which if which is not None else range(len(cluster)))]
    assert any(f"127.0.0.1:{p}" in stderr for p in ports), f"no refusing node named in: {stderr}"


def _no_lock_keys(cluster, resource, bound=1.0):
    """No key of the resource on any node (fencing counters and a semaphore's :limit record
    aside), waiting up to `bound` for the writes a decided round did not wait for."""
    def left():
        out = {}
        for i in range(len(cluster)):
            keys = [k for k in cluster.keys(i, "*" + resource + "*")
                    if not k.endswith(":fencing") and not k.endswith(":limit")]
            if keys:
                out[i] = sorted(keys)
        return out
    deadline = time.monotonic() + bound
    while (found := left()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not found, f"lock keys left behind by a refused command: {found}"


@pytest.fixture(scope="module")
def guarded():
    """Three nodes with requirepass PW."""
    with guarded_nodes() as c:
        yield c


@pytest.fixture(scope="module")
def one_guarded():
    """Three nodes, the last with requirepass PW."""
    with guarded_nodes(only=[2]) as c:
        yield c


@pytest.fixture(scope="module")
def acl():
    """refusing.acl_users: noscript on every node, one_noscript on node 2 only, and others."""
    with acl_users() as c:
        yield c


@pytest.fixture(scope="module")
def renamed():
    """Three nodes started with EVAL and EVALSHA disabled."""
    with scripts_disabled() as c:
        yield c


@pytest.fixture(scope="module")
def no_evalsha():
    """Three nodes started with EVALSHA alone disabled (EVAL works)."""
    with nodes.Cluster(count=3, kind="mixed", conf={"rename-command": ["EVALSHA", ""]}) as c:
        for i in range(3):
            with pytest.raises(nodes.ReplyError, match="unknown command"):
                c.cmd(i, "EVALSHA", "0" * 40, "0")
        yield c


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wait", list(WAITS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_password_exits_69_at_once(runner, guarded, command, wait, resource):
    err = _refused(runner, guarded.urls, command, wait, resource)
    assert NOAUTH_TEXT in err, err
    _names_a_node(err, guarded)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wait", list(WAITS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_wrong_password_exits_69_at_once(runner, guarded, command, wait, resource):
    urls = [_with_user(u, ":" + OTHER_PW) for u in guarded.urls]
    err = _refused(runner, urls, command, wait, resource)
    assert WRONGPASS_RE.search(err), err
    assert NOAUTH_TEXT not in err, err
    assert OTHER_PW not in err
    _names_a_node(err, guarded)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wait", list(WAITS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_acl_user_without_scripting_exits_69_at_once(runner, acl, command, wait, resource):
    urls = [_with_user(u, "noscript:" + PW) for u in acl.urls]
    err = _refused(runner, urls, command, wait, resource)
    assert COMMAND_RE.search(err), f"the refused command is not named: {err}"
    assert PW not in err
    _names_a_node(err, acl)
    _no_lock_keys(acl, resource)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wait", list(WAITS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_disabled_scripting_commands_exit_69_at_once(runner, renamed, command, wait, resource):
    err = _refused(runner, renamed.urls, command, wait, resource)
    assert COMMAND_RE.search(err), f"the refused command is not named: {err}"
    _names_a_node(err, renamed)
    _no_lock_keys(renamed, resource)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_disabled_evalsha_alone_runs_or_exits_69_at_once(runner, no_evalsha, command, resource):
    """EVALSHA disabled, EVAL not: the library can run its scripts with EVAL (it does today), so
    COMMAND either runs, or redlock exits 69 at once naming the command; never 75, never a wait."""
    args = _args(command, "w10s", resource)
    args = args[:-1] + ["sh", "-c", "echo ran"]
    r, elapsed = _run(runner, no_evalsha.urls, args)
    assert elapsed < PROMPT, f"took {elapsed:.2f} s: {r.stderr}"
    if r.returncode == 0:
        assert r.stdout.strip() == "ran", r.stdout
    else:
        assert r.returncode == 69, f"exit {r.returncode}: {r.stderr}"
        assert COMMAND_RE.search(r.stderr), r.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_one_node_without_password_does_not_stop_a_free_lock(runner, one_guarded, command, resource):
    args = _args(command, "w10s", resource)
    args = args[:-1] + ["sh", "-c", "echo ran"]     # `true` replaced: prove COMMAND ran
    r, elapsed = _run(runner, one_guarded.urls, args)
    assert r.returncode == 0, f"redlock {' '.join(args)}: exit {r.returncode}: {r.stderr}"
    assert r.stdout.strip() == "ran", r.stdout
    assert elapsed < PROMPT, f"a free lock took {elapsed:.2f} s with one refusing node: {r.stderr}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_one_node_denying_scripting_does_not_stop_a_free_lock(runner, acl, command, resource):
    urls = [_with_user(u, "one_noscript:" + PW) for u in acl.urls]
    args = _args(command, "w10s", resource)
    # While COMMAND runs: the refusing node holds no key of the resource, the others do.
    probe = ("import sys; sys.path.insert(0, %r); import nodes; "
             "print(*[len([k for k in nodes.resp_call(('tcp', '127.0.0.1', p), ['KEYS', %r]) "
             "if not k.endswith((':fencing', ':limit'))]) for p in %r])"
             % (os.path.dirname(nodes.__file__), "*" + resource + "*", [acl.port(i) for i in range(3)]))
    args = args[:-1] + [sys.executable, "-c", probe]
    r, elapsed = _run(runner, urls, args)
    assert r.returncode == 0, f"redlock {' '.join(args[:4])}...: exit {r.returncode}: {r.stderr}"
    counts = [int(n) for n in r.stdout.split()]
    assert counts[0] > 0 and counts[1] > 0, f"held, but keys per node are {counts}"
    assert counts[2] == 0, f"a lock key on the node whose user cannot run the release script: {counts}"
    assert elapsed < PROMPT, f"a free lock took {elapsed:.2f} s with one refusing node: {r.stderr}"
