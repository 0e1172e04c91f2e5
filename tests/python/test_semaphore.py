# SPDX-License-Identifier: BSD-3-Clause
"""client.semaphore(name, limit): a counting semaphore across the nodes, in
threading.BoundedSemaphore's shape, and its asyncio form, on real nodes."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import redlock


def test_limit_holders_and_the_next_refused(client, other, name):
    a = client.semaphore(name, 2)
    b = other.semaphore(name, 2)
    assert a.acquire(blocking=False)
    assert b.acquire(blocking=False)
    assert a.held == 1 and b.held == 1
    # both permits taken: a third is refused, a short wait times out
    assert not a.acquire(blocking=False)
    assert isinstance(a.last_error, redlock.LockNotAcquired)
    assert not a.acquire(timeout=0.3)
    assert isinstance(a.last_error, redlock.LockTimeout)
    b.release()
    assert a.acquire(blocking=False)
    assert a.held == 2
    a.release()
    a.release()
    assert a.held == 0


def test_bounded_release_too_many_times(client, name):
    s = client.semaphore(name, 3)
    with pytest.raises(ValueError, match="released too many times"):
        s.release()
    with s:
        assert s.held == 1
        assert s.permits[0].held
        assert s.permits[0].validity > 0
    assert s.held == 0
    with pytest.raises(ValueError, match="released too many times"):
        s.release()


def test_release_wakes_a_waiter(cluster5, make_client, name):
    # A long retry delay: only a wake-up gets the waiter its permit soon.
    holder = make_client(cluster5.urls, node_timeout=0.5)
    waiter = make_client(cluster5.urls, node_timeout=0.5, retry_delay=15.0, retry_jitter=0.0, wake=True)
    h = holder.semaphore(name, 1, ttl=30)
    w = waiter.semaphore(name, 1, ttl=30)
    assert h.acquire(blocking=False)
    got = []

    def wait():
        t0 = time.monotonic()
        got.append((w.acquire(timeout=20), time.monotonic() - t0))

    t = threading.Thread(target=wait)
    t.start()
    # The waiter listens and is registered in the queue on every node before the release: a
    # release that comes first finds nobody to wake, and the waiter would poll.
    import redis
    conns = [redis.Redis.from_url(u) for u in cluster5.urls]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (
            all(s == redlock.ListenerState.READY for s in waiter.listener_states())
            and all(r.zcard(name + ":wq") >= 1 for r in conns)):
        time.sleep(0.02)
    for r in conns:
        r.close()
    assert not got
    t_rel = time.monotonic()
    h.release()
    t.join(30)
    assert got and got[0][0], w.last_error
    assert time.monotonic() - t_rel < 15, "the waiter polled instead of being woken"
    w.release()


def test_limit_mismatch_names_both(client, other, name):
    three = client.semaphore(name, 3)
    assert three.acquire(blocking=False)
    two = other.semaphore(name, 2)
    with pytest.raises(redlock.InvalidArgument) as e:
        two.acquire(timeout=2)
    assert "limit of 3" in str(e.value) and "not 2" in str(e.value)
    three.release()
    assert two.acquire(blocking=False)   # no permit held: the new limit replaces the old one
    two.release()


def test_several_permits_at_once(client, name):
    s = client.semaphore(name, 5)
    assert s.acquire(blocking=False, n=3)
    assert s.held == 3
    assert not s.acquire(blocking=False, n=3)   # two left: all or none
    assert s.acquire(blocking=False, n=2)
    assert not s.acquire(blocking=False)
    with pytest.raises(ValueError, match="release\\(2\\)"):
        s.release()          # the last taken holds 2 at once
    s.release(2)
    s.release(3)
    assert s.held == 0


def test_auto_extend_and_lost(client, name):
    s = client.semaphore(name, 2, ttl=0.6, auto_extend=True)
    assert s.acquire(blocking=False)
    time.sleep(1.5)
    p = s.permits[0]
    assert p.held and not p.lost.is_set()
    p.stop_auto_extend()
    # the permit's slot vanishes from every node: release is an honest LockLost
    import redis
    for url in client.nodes:
        r = redis.Redis.from_url(url)
        for key in r.keys(name + ":s*"):
            r.delete(key)
        r.close()
    with pytest.raises(redlock.LockLost):
        s.release()
    assert s.held == 0


def test_bad_input(client, name):
    with pytest.raises(redlock.InvalidArgument):
        client.semaphore(name, 0)
    with pytest.raises(redlock.InvalidArgument):
        client.semaphore(name, 10**6)
    with pytest.raises(TypeError):
        client.semaphore(name, "3")
    with pytest.raises(TypeError):
        client.semaphore(name, True)
    with pytest.raises(redlock.InvalidArgument):
        client.semaphore("", 2)
    s = client.semaphore(name, 2)
    with pytest.raises(redlock.InvalidArgument):
        s.acquire(n=3)
    with pytest.raises(ValueError, match="non-blocking"):
        s.acquire(blocking=False, timeout=1)
    with pytest.raises(redlock.InvalidArgument):
        redlock.Permit(client, name, 2, 3)


def test_asyncio(client, other, name):
    async def main():
        a = client.asemaphore(name, 1)
        b = other.asemaphore(name, 1)
        async with a:
            assert a.held == 1
            assert not await b.acquire(blocking=False)
        assert await b.acquire(timeout=5)
        await b.release()
        with pytest.raises(ValueError):
            await b.release()
    asyncio.run(main())
