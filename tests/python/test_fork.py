# SPDX-License-Identifier: BSD-3-Clause
# Fork safety: a Lock belongs to the process that acquired it. In a forked child the parent's lock is
# not held, and release(), `with`'s exit, garbage collection and interpreter exit send nothing, so the
# parent's lock survives on every node. Children made by multiprocessing's 'fork' and by os.fork().
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest

import nodes
from redlock import LockStateError, Redlock

if not hasattr(os, "fork"):
    pytest.skip("no os.fork() on this platform", allow_module_level=True)


@pytest.fixture(scope="module")
def cluster3():
    # Our own nodes: the tests count every connection the nodes received.
    with nodes.Cluster(count=3, kind="mixed") as cluster:
        yield cluster


def _connections(cluster):
    """Connections each node received so far (each call adds its own one)."""
    out = []
    for i in range(len(cluster)):
        info = cluster.cmd(i, "INFO", "stats")
        text = info.decode() if isinstance(info, bytes) else str(info)
        line = next(x for x in text.splitlines() if x.startswith("total_connections_received:"))
        out.append(int(line.split(":", 1)[1]))
    return out


def _values(cluster, key):
    return [cluster.cmd(i, "GET", key) for i in range(len(cluster))]


def _untouched(cluster, before):
    # Only our own INFO call is new: nobody else connected to any node.
    return [a - b for a, b in zip(_connections(cluster), before)] == [1] * len(cluster)


def _child_view(lock, conn):
    """Runs in the forked child: what it sees, and what release/extend/__exit__ do there."""
    try:
        seen = {"held": lock.held, "locked": lock.locked(), "validity": lock.validity,
                "token": lock.token}
        lock.release()  # nothing sent, nothing raised
        try:
            lock.extend(30.0)
            seen["extend"] = "extended"
        except LockStateError:
            seen["extend"] = "LockStateError"
        lock.__exit__(None, None, None)
        conn.send(seen)
    except BaseException as err:  # report, never hang the parent
        conn.send({"error": repr(err)})


def test_multiprocessing_fork_child_leaves_the_lock_alone(cluster3, name):
    ctx = multiprocessing.get_context("fork")
    with Redlock(cluster3.urls, node_timeout=0.5, fencing=True) as client:
        with client.lock(name, ttl=30.0) as lock:
            before = _values(cluster3, name)
            assert all(before), before
            conns = _connections(cluster3)
            parent_end, child_end = ctx.Pipe()
            p = ctx.Process(target=_child_view, args=(lock, child_end))
            p.start()
            seen = parent_end.recv() if parent_end.poll(30) else {"error": "no answer"}
            p.join(30)
            assert p.exitcode == 0
            assert seen == {"held": False, "locked": False, "validity": 0.0, "token": None,
                            "extend": "LockStateError"}, seen
            assert _untouched(cluster3, conns), "the child talked to the nodes"
            assert _values(cluster3, name) == before
            assert lock.held and lock.token is not None
        # The parent's release finds its lock on every node: no LockLost.
        assert _values(cluster3, name) == [None] * len(cluster3)


def test_os_fork_child_exits_inside_with(cluster3, name):
    parent = os.getpid()
    r, w = os.pipe()
    with Redlock(cluster3.urls, node_timeout=0.5) as client:
        try:
            with client.lock(name, ttl=30.0) as lock:
                before = _values(cluster3, name)
                conns = _connections(cluster3)
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    os.write(w, b"held=%d locked=%d\n" % (lock.held, lock.locked()))
                    sys.exit(5)  # leaves the `with` in the child: its __exit__ runs here
                os.close(w)
                _, status = os.waitpid(pid, 0)
                with os.fdopen(r, "rb") as f:
                    report = f.read().decode()
                assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 5, (status, report)
                assert report == "held=0 locked=0\nexit ran\n", report
                assert _untouched(cluster3, conns), "the child talked to the nodes"
                assert _values(cluster3, name) == before
                assert lock.held
        except BaseException as err:
            if os.getpid() != parent:  # the child, after the `with` exit ran
                if isinstance(err, SystemExit):
                    os.write(w, b"exit ran\n")
                    os._exit(err.code)
                os.write(w, ("child failed: %r\n" % (err,)).encode())
                os._exit(99)
            raise
    assert _values(cluster3, name) == [None] * len(cluster3)


CHILD_SCRIPT = textwrap.dedent("""
    import os, sys
    import redlock
    client = redlock.Redlock(sys.argv[1:], node_timeout=0.5)
    lock = client.lock(NAME, ttl=30.0, auto_extend=True)
    with lock:
        print("held", flush=True)
        sys.stdin.readline()  # the test counts the nodes' connections now
        pid = os.fork()
        if pid == 0:
            # A child that simply exits inside `with`: __exit__, then the finalizers of the
            # lock and the client and the atexit hooks of a normal interpreter exit.
            del client
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        print("child", os.WEXITSTATUS(status), "parent held", lock.held, flush=True)
        sys.stdin.readline()
    print("released", flush=True)
""")


def test_forked_child_interpreter_exit_sends_nothing(cluster3, name):
    script = CHILD_SCRIPT.replace("NAME", repr(name))
    proc = subprocess.Popen([sys.executable, "-c", script, *cluster3.urls], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held", proc.stderr.read()
        before = _values(cluster3, name)
        assert all(before), before
        conns = _connections(cluster3)
        proc.stdin.write("\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line.split() == ["child", "0", "parent", "held", "True"], (line, proc.stderr.read())
        assert _untouched(cluster3, conns), "the child talked to the nodes"
        assert _values(cluster3, name) == before
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
    finally:
        proc.stdin.close()
        proc.wait(30)
    assert proc.returncode == 0, proc.stderr.read()
    assert _values(cluster3, name) == [None] * len(cluster3)
