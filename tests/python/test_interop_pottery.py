# SPDX-License-Identifier: BSD-3-Clause
# Interoperability with pottery's Redlock on the same nodes: its keys are "redlock:" + name, so a
# client with key_prefix="redlock:" contends for the same lock, in both directions.
from __future__ import annotations

import logging
import time

import pytest

from redlock import LockNotAcquired, Redlock

try:
    import redis
    from pottery import Redlock as PotteryRedlock
except ImportError as err:  # a skip with its reason printed, never a silent pass
    pytest.skip(f"pottery interop tests need pottery and redis ({err}); "
                "install them with: python3 -m pip install -r tests/python/requirements.txt",
                allow_module_level=True)

# pottery logs a warning for every node it cannot reach; the tests below reach all of them.
logging.getLogger("pottery").setLevel(logging.ERROR)


@pytest.fixture
def masters(cluster5):
    clients = [redis.Redis.from_url(u) for u in cluster5.urls]
    yield set(clients)
    for c in clients:
        c.close()


@pytest.fixture
def ours(cluster5):
    with Redlock(cluster5.urls, key_prefix="redlock:", node_timeout=0.5) as c:
        yield c


def test_pottery_holds_ours_waits(cluster5, masters, ours, name):
    theirs = PotteryRedlock(key=name, masters=masters, auto_release_time=10.0)
    assert theirs.acquire(blocking=False)
    try:
        # pottery returns once a majority granted; the other SETs may still be in flight.
        assert sum(cluster5.cmd(i, "EXISTS", "redlock:" + name) for i in range(5)) >= 3
        with pytest.raises(LockNotAcquired):
            ours.acquire(name, ttl=5.0, blocking=False)
    finally:
        theirs.release()
    with ours.lock(name, ttl=5.0, blocking=False) as lock:
        assert lock.held


def test_ours_holds_pottery_waits(cluster5, masters, ours, name):
    theirs = PotteryRedlock(key=name, masters=masters, auto_release_time=10.0)
    with ours.lock(name, ttl=10.0) as lock:
        assert lock.held
        # decided at quorum: the SETs to nodes it did not wait for land a moment later
        deadline = time.monotonic() + 5.0
        while sum(cluster5.cmd(i, "EXISTS", "redlock:" + name) for i in range(5)) < 5:
            assert time.monotonic() < deadline, "our key never reached every node"
            time.sleep(0.01)
        assert not theirs.acquire(blocking=False)
        assert not theirs.locked()
    assert theirs.acquire(blocking=False)
    theirs.release()


def test_pottery_context_manager_against_ours(masters, ours, name):
    with PotteryRedlock(key=name, masters=masters, auto_release_time=10.0):
        with pytest.raises(LockNotAcquired):
            with ours.lock(name, ttl=5.0, blocking=False):
                pass
    with ours.lock(name, ttl=5.0, blocking=False):
        pass
