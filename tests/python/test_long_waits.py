# SPDX-License-Identifier: BSD-3-Clause
# Waits longer than C's longest finite one (REDLOCK_MAX_WAIT_MS, seven days) go to C as one wait
# without an end, cancelled at the deadline, not as a chain of seven-day waits: a fair waiter keeps
# its place. C's limit is lowered to 200 ms here so that the deadline comes within the test.
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import redlock._lock
from redlock import LockTimeout

LIMIT_MS = 200


@pytest.fixture
def short_c_limit(monkeypatch):
    monkeypatch.setattr(redlock._lock, "_MAX_WAIT_MS", LIMIT_MS)


def test_wait_beyond_c_ends_at_its_deadline(client, other, name, short_c_limit):
    holder = other.acquire(name, ttl=30.0)
    lock = client.lock(name, ttl=5.0, fair=True)
    t0 = time.monotonic()
    assert lock.acquire(timeout=0.8) is False
    took = time.monotonic() - t0
    assert 0.8 <= took < 0.8 + 1.5, took
    assert isinstance(lock.last_error, LockTimeout)
    assert "within 0.8 s: ended at the deadline after" in str(lock.last_error), str(lock.last_error)
    # The timer's cancel is gone with the wait: the next acquire waits as asked.
    holder.release()
    assert lock.acquire(timeout=2.0) is True
    lock.release()


def test_wait_beyond_c_gets_the_lock_when_released(client, other, name, short_c_limit):
    holder = other.acquire(name, ttl=30.0)
    lock = client.lock(name, ttl=5.0)
    threading.Timer(0.5, holder.release).start()
    t0 = time.monotonic()
    assert lock.acquire(timeout=5.0) is True   # past C's (lowered) limit: one wait, no chain
    assert 0.4 <= time.monotonic() - t0 < 4.0
    lock.release()


def test_fair_waiter_beyond_c_keeps_its_place(client, other, name, short_c_limit):
    # The first fair waiter waits 6 limits' worth; a chain of C waits would put it behind the
    # second at each link (it leaves the queue when a link ends, and comes back at its end).
    holder = other.acquire(name, ttl=30.0)
    first = client.lock(name, ttl=5.0, fair=True)
    second = other.lock(name, ttl=5.0, fair=True)
    order = []

    def wait(lock, tag):
        if lock.acquire(timeout=10.0):
            order.append(tag)
            time.sleep(0.05)
            lock.release()

    t1 = threading.Thread(target=wait, args=(first, "first"))
    t1.start()
    time.sleep(0.3)
    t2 = threading.Thread(target=wait, args=(second, "second"))
    t2.start()
    time.sleep(1.2)   # six of C's lowered limits
    holder.release()
    t1.join(15)
    t2.join(15)
    assert order == ["first", "second"]


def test_async_wait_beyond_c_ends_at_its_deadline(client, other, name, short_c_limit):
    holder = other.acquire(name, ttl=30.0)

    async def main():
        lock = client.lock(name, ttl=5.0)
        t0 = time.monotonic()
        got = await lock.acquire_async(timeout=0.8)
        return got, time.monotonic() - t0, lock.last_error

    got, took, err = asyncio.run(main())
    assert got is False
    assert 0.8 <= took < 0.8 + 1.5, took
    assert isinstance(err, LockTimeout)
    holder.release()
