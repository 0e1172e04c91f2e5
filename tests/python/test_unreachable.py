# SPDX-License-Identifier: BSD-3-Clause
# Nodes that cannot be reached end a wait with NodesUnreachable (a ConnectionError, as redis-py
# raises): ports nothing listens on, a host name that does not resolve. A busy lock still waits.
from __future__ import annotations

import socket
import threading

import pytest

import redlock
from redlock import (InvalidArgument, LockTimeout, NodesUnreachable, QuorumError, RedlockError,
                     redlock as redlock_cm)

# A wait that should end by itself is run with this guard: reaching it fails the test (no
# wall-clock threshold is asserted, only that the wait does not go on forever).
GUARD = 60.0


def closed_ports(n: int = 3) -> list:
    """Loopback ports nothing listens on: each bound once, then closed."""
    ports = []
    for _ in range(n):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    return ports


def run_guarded(fn):
    """Runs fn() on a thread; returns what it raised (or None), failing if it is still
    running after GUARD seconds."""
    box = {}

    def body():
        try:
            fn()
            box["err"] = None
        except BaseException as err:  # noqa: BLE001 - handed to the test
            box["err"] = err

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(GUARD)
    assert not t.is_alive(), f"the acquire still waits after {GUARD} s"
    return box["err"]


def test_readme_example_with_unreachable_ports_raises():
    ports = closed_ports()
    urls = [f"redis://127.0.0.1:{p}" for p in ports]

    def body():
        with redlock_cm("x", nodes=urls, ttl=5):   # the first example of README and python.md
            pytest.fail("acquired a lock on nodes that do not exist")

    err = run_guarded(body)
    assert isinstance(err, NodesUnreachable), repr(err)
    assert isinstance(err, ConnectionError) and isinstance(err, QuorumError)
    assert isinstance(err, RedlockError)
    assert err.error_name == "REDLOCK_EUNREACHABLE"
    assert "no quorum of nodes reachable" in str(err)
    for p in ports:
        assert f"127.0.0.1:{p}" in str(err)    # every node named...
    assert "Connection refused" in str(err)    # ...with what it said


def test_name_that_does_not_resolve_raises(cluster5):
    urls = ["redis://no-such-host.invalid:6379", "redis://also-no-such-host.invalid:6379",
            "redis://third-no-such-host.invalid:6379"]
    client = redlock.Redlock(urls)   # names are resolved when connecting

    def body():
        client.acquire("x", ttl=5.0)

    err = run_guarded(body)
    client.close()
    assert isinstance(err, NodesUnreachable), repr(err)
    for u in urls:
        assert u[len("redis://"):] in str(err)


def test_majority_of_names_unresolvable_raises(cluster5, name):
    # Two nodes of five reachable: not a quorum; their grants are given back.
    urls = [f"redis://no-such-host-{i}.invalid:6379" for i in range(3)] + cluster5.urls[:2]
    client = redlock.Redlock(urls)
    err = run_guarded(lambda: client.acquire(name, ttl=5.0, timeout=GUARD))
    client.close()
    assert isinstance(err, NodesUnreachable), repr(err)
    assert "3 of 5 nodes unreachable" in str(err)


def test_busy_lock_still_waits(cluster5, make_client, name):
    holder = make_client(cluster5.urls)
    # The tightest bound: every node answers, so it never applies.
    waiter = make_client(cluster5.urls, unreachable_timeout=0.001)
    with holder.lock(name, ttl=30.0):
        lock = waiter.lock(name, ttl=5.0)
        assert lock.acquire(timeout=1.0) is False
        assert isinstance(lock.last_error, LockTimeout)
        assert not isinstance(lock.last_error, NodesUnreachable)


def test_none_waits_on(make_client):
    urls = [f"redis://127.0.0.1:{p}" for p in closed_ports()]
    # node_timeout 0.05: the default bound would be 1 s; the wait is longer, and only its
    # own timeout ends it.
    client = make_client(urls, unreachable_timeout=None, node_timeout=0.05)
    lock = client.lock("x", ttl=5.0)
    assert lock.acquire(timeout=2.0) is False
    assert isinstance(lock.last_error, LockTimeout)
    assert "Connection refused" in str(lock.last_error)


def test_explicit_bound(make_client):
    urls = [f"redis://127.0.0.1:{p}" for p in closed_ports()]
    client = make_client(urls, unreachable_timeout=0.3)
    with pytest.raises(NodesUnreachable):
        client.acquire("x", ttl=5.0, timeout=GUARD)


def test_one_attempt_is_not_a_wait(make_client):
    # blocking=False makes one attempt: False, with the same detail in last_error.
    urls = [f"redis://127.0.0.1:{p}" for p in closed_ports()]
    lock = make_client(urls).lock("x", ttl=5.0)
    assert lock.acquire(blocking=False) is False
    assert isinstance(lock.last_error, QuorumError)
    assert "Connection refused" in str(lock.last_error)


@pytest.mark.parametrize("value", [0, 0.0, -1, 8 * 24 * 3600.0])
def test_bad_bound_is_refused(value):
    with pytest.raises(InvalidArgument, match="unreachable_timeout"):
        redlock.Redlock(["redis://127.0.0.1:6379"], unreachable_timeout=value)


def test_bound_of_wrong_type_is_refused():
    with pytest.raises(TypeError, match="unreachable_timeout"):
        redlock.Redlock(["redis://127.0.0.1:6379"], unreachable_timeout="1s")
