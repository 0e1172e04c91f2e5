# SPDX-License-Identifier: BSD-3-Clause
# Lock in threading.Lock's shape (pottery's Redlock is the peer): acquire(blocking, timeout) -> bool,
# release(), locked(), `with`; errors that waiting cannot fix raise at once; per-lock policy via C.
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import redlock
from redlock import (Cancelled, EventType, InvalidArgument, LockNotAcquired, LockStateError,
                     LockTimeout, Redlock)


def test_acquire_returns_true_then_false_while_held(client, other, name):
    mine = client.lock(name, ttl=5.0)
    assert mine.acquire() is True
    assert mine.locked() is True
    rival = other.lock(name, ttl=5.0)
    assert rival.acquire(blocking=False) is False
    assert type(rival.last_error) is LockNotAcquired
    assert rival.locked() is False
    t0 = time.monotonic()
    assert rival.acquire(timeout=0.3) is False
    assert 0.25 <= time.monotonic() - t0 < 2.0
    assert isinstance(rival.last_error, LockTimeout)
    mine.release()
    assert mine.locked() is False
    assert rival.acquire(blocking=False) is True and rival.last_error is None
    rival.release()


def test_default_acquire_waits_until_free(client, other, name):
    holder = other.acquire(name, ttl=10.0)
    threading.Timer(0.5, holder.release).start()
    lock = client.lock(name, ttl=5.0)
    t0 = time.monotonic()
    assert lock.acquire() is True  # blocking=True, timeout=-1: no deadline, no retry_count bound
    assert time.monotonic() - t0 >= 0.4
    lock.release()


def test_with_waits_like_acquire(client, other, name):
    holder = other.acquire(name, ttl=10.0)
    threading.Timer(0.5, holder.release).start()
    with client.lock(name, ttl=5.0) as lock:
        assert lock.held


def test_with_raises_only_when_it_cannot_get_the_lock(client, other, name):
    holder = other.acquire(name, ttl=10.0)
    try:
        with pytest.raises(LockNotAcquired):
            with client.lock(name, ttl=5.0, blocking=False):
                pytest.fail("entered a lock held elsewhere")
        with pytest.raises(LockTimeout):
            with client.lock(name, ttl=5.0, timeout=0.2):
                pytest.fail("entered a lock held elsewhere")
    finally:
        holder.release()


def test_infinite_wait_is_cancellable(client, other, name):
    holder = other.acquire(name, ttl=30.0)
    lock = client.lock(name, ttl=5.0)
    outcome = []
    t = threading.Thread(target=lambda: outcome.append(pytest.raises(Cancelled, lock.acquire)))
    t.start()
    # A cancel with no acquire running yet is dropped: repeat it until the wait has ended. The
    # wait has no end of its own, so only a cancel can end it; the bound keeps a hang finite.
    deadline = time.monotonic() + 30.0
    while t.is_alive() and time.monotonic() < deadline:
        lock.cancel()
        t.join(0.02)
    holder.release()
    assert not t.is_alive() and outcome, "cancel() did not end the wait"


def test_errors_that_waiting_cannot_fix_raise_at_once(client, name):
    lock = client.lock(name, ttl=5.0)
    assert lock.acquire()
    try:
        t0 = time.monotonic()
        with pytest.raises(LockStateError):  # not reentrant: never waits for itself
            lock.acquire()
        assert time.monotonic() - t0 < 1.0
    finally:
        lock.release()
    # A TTL the drift allowance eats entirely: C says EINVAL, which no wait can fix.
    tiny = client.lock(name, ttl=0.002)
    t0 = time.monotonic()
    with pytest.raises(InvalidArgument, match="too small"):
        tiny.acquire()
    assert time.monotonic() - t0 < 1.0


def test_threading_argument_rules(client, name):
    lock = client.lock(name)
    with pytest.raises(ValueError, match="non-blocking"):
        lock.acquire(False, 1.0)
    with pytest.raises(ValueError, match="-1"):
        lock.acquire(timeout=-2)
    with pytest.raises(TypeError, match="ttl="):
        lock.acquire(5.0)  # the TTL was the first argument before
    assert lock.acquire(True, 0) is True  # timeout=0: one attempt, as threading.Lock
    lock.release()
    assert lock.acquire(ttl=3.0) and lock.validity <= 3.0
    lock.release()


def test_older_wait_argument_still_works(client, other, name):
    holder = other.acquire(name, ttl=10.0)
    try:
        lock = client.lock(name, ttl=5.0, wait=0.2)
        assert lock.acquire() is False and isinstance(lock.last_error, LockTimeout)
        with pytest.raises(LockTimeout):
            client.acquire(name, ttl=5.0, wait=0.2)  # the client's acquire() still raises
        with pytest.raises(ValueError, match="not both"):
            client.lock(name, timeout=1.0, wait=1.0)
    finally:
        holder.release()


def test_pottery_spellings(client, name):
    lock = client.lock(name, ttl=0.25)
    assert lock.auto_release_time == lock.ttl == 0.25


def test_per_lock_policy_goes_through_the_c_lock_options(cluster5, make_client, other, name):
    events = []
    c = make_client(cluster5.urls, on_event=events.append, retry_delay=0.001, retry_jitter=0.0)
    slow = c.lock(name, ttl=5.0, retry_delay=0.25, retry_jitter=0, retry_count=1,
                  drift_factor=0.02, drift_min=0.005)
    assert slow.options == {"retry_count": 1, "retry_delay": 0.25, "retry_jitter": 0.0,
                            "drift_factor": 0.02, "drift_min": 0.005, "wake": False, "fair": False}
    plain = c.lock(name + ":plain")
    assert plain.options["retry_delay"] == 0.001 and plain.options["retry_count"] == 3
    holder = other.acquire(name, ttl=10.0)
    try:
        assert slow.acquire(timeout=0.6) is False
        attempts = [e for e in events if e.type == EventType.ACQUIRE_FAILED]
        # 0.25 s apart: 3 or 4 attempts in 0.6 s (the client's 1 ms delay would make hundreds).
        assert 2 <= len(attempts) <= 4, len(attempts)
        events.clear()
        assert slow.acquire(wait=None) is False  # wait=None: this lock's retry_count of 1
        assert [e.attempt for e in events if e.type == EventType.ACQUIRE_FAILED] == [1, 2]
    finally:
        holder.release()
    with pytest.raises(InvalidArgument, match="drift_factor"):
        c.lock(name, drift_factor=0.7)


def test_per_lock_policy_needs_no_client_of_its_own(cluster5, make_client, name):
    c = make_client(cluster5.urls)
    locks = [c.lock(f"{name}:{i}", retry_delay=0.01 * i) for i in range(20)]
    for lk in locks:
        with lk:
            pass
    # One client's connections serve every lock: at most a few per node, not one per lock.
    clients = cluster5.cmd(0, "CLIENT", "LIST")
    text = clients.decode() if isinstance(clients, bytes) else str(clients)
    assert len(text.strip().splitlines()) < 20


def test_async_lock_shape(client, other, name):
    async def main():
        lock = client.alock(name, ttl=5.0)
        assert isinstance(lock, redlock.AsyncLock)
        assert await lock.acquire() is True
        assert await lock.locked() is True
        rival = other.alock(name, ttl=5.0)
        assert await rival.acquire(blocking=False) is False
        assert await rival.acquire(timeout=0.2) is False
        assert isinstance(rival.last_error, LockTimeout)
        await lock.extend(8.0)
        assert lock.validity > 7.0
        await lock.release()
        assert await lock.locked() is False
        async with rival:
            assert await rival.locked() and rival.held
        held = other.acquire(name, ttl=10.0)
        try:
            with pytest.raises(LockTimeout):
                async with client.alock(name, timeout=0.2):
                    pytest.fail("entered a lock held elsewhere")
        finally:
            held.release()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_client_lock_is_the_lock_class(client, name):
    assert isinstance(client.lock(name), redlock.Lock)
    assert isinstance(Redlock, type)
