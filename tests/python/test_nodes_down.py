# SPDX-License-Identifier: BSD-3-Clause
# Failure of nodes: the lock survives a minority of five nodes down or paused, fails with
# QuorumError on a majority, and the error detail names the failing nodes.
from __future__ import annotations

import time

import pytest

from redlock import LockNotAcquired, LockTimeout, QuorumError


def test_minority_down_still_locks(fresh5, make_client, name):
    fresh5.kill(1)
    fresh5.kill(3)
    client = make_client(fresh5.urls)
    rival = make_client(fresh5.urls)
    with client.lock(name, ttl=10.0) as lock:
        assert lock.held and lock.validity > 9.0
        assert sum(fresh5.cmd(i, "EXISTS", name) for i in (0, 2, 4)) == 3
        with pytest.raises(LockNotAcquired):
            rival.acquire(name, ttl=5.0, blocking=False)
    assert sum(fresh5.cmd(i, "EXISTS", name) for i in (0, 2, 4)) == 0


def test_minority_paused_still_locks(fresh5, make_client, name):
    fresh5.pause(0)
    fresh5.pause(4)
    try:
        client = make_client(fresh5.urls, node_timeout=0.3)  # paused nodes never answer
        with client.lock(name, ttl=10.0) as lock:
            assert lock.held
    finally:
        fresh5.resume(0)
        fresh5.resume(4)


def test_majority_down_is_a_quorum_error(fresh5, make_client, name):
    for i in (0, 1, 2):
        fresh5.kill(i)
    client = make_client(fresh5.urls)
    with pytest.raises(QuorumError) as info:
        client.acquire(name, ttl=5.0, blocking=False)
    # The detail says which nodes failed and how.
    for i in (0, 1, 2):
        assert fresh5.url(i) in str(info.value)
    assert "no quorum" in str(info.value)
    with pytest.raises(LockTimeout) as info:
        client.acquire(name, ttl=5.0, wait=0.3)  # retried until the wait ended
    assert "no quorum" in str(info.value)  # what the last attempt met


def test_failed_acquire_leaves_no_key_behind(fresh5, make_client, name):
    for i in (0, 1, 2):
        fresh5.kill(i)
    client = make_client(fresh5.urls)
    with pytest.raises(QuorumError):
        client.acquire(name, ttl=30.0, blocking=False)
    # Whatever our SET left on the nodes that were up is deleted again, or
    # nobody could take the lock for the whole TTL once the nodes are back.
    # The clean-up is sent without waiting for replies: wait for its effect,
    # well within the 30 s TTL.
    deadline = time.monotonic() + 10.0
    while [fresh5.cmd(i, "EXISTS", name) for i in (3, 4)] != [0, 0]:
        assert time.monotonic() < deadline, "the clean-up never deleted our keys"
        time.sleep(0.01)


def test_nodes_coming_back(fresh5, make_client, name):
    for i in (0, 1, 2):
        fresh5.kill(i)
    client = make_client(fresh5.urls)
    with pytest.raises(QuorumError):
        client.acquire(name, ttl=5.0, blocking=False)
    fresh5.restart(0)
    with client.lock(name, ttl=5.0, wait=5.0) as lock:  # reconnects with backoff
        assert lock.held
