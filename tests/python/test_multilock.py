# SPDX-License-Identifier: BSD-3-Clause
"""client.lock(["a", "b"]): a MultiLock holds several names together, all or none, on real
nodes: any order excludes, a plain Lock on one name excludes it, extend/release/auto-extend,
one fencing token above each name's, wake-up, asyncio, bad input, and two threads taking
{a, b} and {b, a} in a loop both making progress."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import redlock


def test_list_is_a_multilock_and_any_order_excludes(client, other, name):
    a, b = name + ":a", name + ":b"
    x = client.lock([a, b], ttl=10)
    y = other.lock((b, a), ttl=10)
    assert isinstance(x, redlock.MultiLock) and isinstance(y, redlock.MultiLock)
    assert not isinstance(client.lock(a), redlock.MultiLock)   # a str stays a Lock
    assert x.name == y.name == ",".join(sorted([a, b]))
    assert y.names == (b, a)
    assert x.acquire(blocking=False)
    assert not y.acquire(blocking=False)
    assert isinstance(y.last_error, redlock.LockNotAcquired)
    single = other.lock(b)
    assert not single.acquire(blocking=False)       # a mutex on one of the names
    assert x.validity > 0
    x.extend(20)
    assert x.validity > 10
    x.release()
    assert single.acquire(blocking=False)
    assert not y.acquire(blocking=False)
    single.release()
    with y:
        assert y.held
        assert not x.acquire(blocking=False)
    assert not y.held


def test_acquire_raises_and_returns_held(client, other, name):
    names = [name + ":1", name + ":2", name + ":3"]
    held = client.acquire(names, ttl=10)
    try:
        with pytest.raises(redlock.LockNotAcquired):
            other.acquire(list(reversed(names)), blocking=False)
    finally:
        held.release()


def test_fencing_token_above_each_name(cluster5, make_client, name):
    c = make_client(cluster5.urls, fencing=True)
    a, b = name + ":a", name + ":b"
    last = 0
    for _ in range(3):     # b's counter runs ahead
        with c.lock(b) as lb:
            assert lb.token > last
            last = lb.token
    with c.lock([a, b]) as m:
        tok = m.token
        assert tok > last
    with c.lock(a) as la:
        assert la.token > tok


def test_release_of_either_name_wakes_the_waiter(cluster5, make_client, name):
    holder = make_client(cluster5.urls)
    waiter = make_client(cluster5.urls, retry_delay=15.0, retry_jitter=0.0, wake=True)
    a, b = name + ":a", name + ":b"
    h = holder.lock(a, ttl=30)
    assert h.acquire(blocking=False)
    m = waiter.lock([a, b], ttl=30)
    got = []
    t = threading.Thread(target=lambda: got.append(m.acquire(timeout=20)))
    t.start()
    # The waiter listens and is registered in a's queue on every node before the release: a
    # release that comes first finds nobody to wake, and the waiter would poll.
    import redis
    conns = [redis.Redis.from_url(u) for u in cluster5.urls]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (
            all(s == redlock.ListenerState.READY for s in waiter.listener_states())
            and all(r.zcard(a + ":wq") >= 1 for r in conns)):
        time.sleep(0.02)
    assert not any(r.exists(b + ":wq") for r in conns)   # b was free: not queued there
    for r in conns:
        r.close()
    assert not got
    t_rel = time.monotonic()
    h.release()
    t.join(30)
    assert got and got[0], m.last_error
    assert time.monotonic() - t_rel < 15, "the waiter polled instead of being woken"
    m.release()


def test_no_deadlock_in_opposite_orders(cluster5, make_client, name):
    a, b = name + ":a", name + ":b"
    rounds = 25
    counts = {}
    errors = []

    def loop(order):
        c = make_client(cluster5.urls)
        m = c.lock(order, ttl=10)
        n = 0
        for _ in range(rounds):
            if m.acquire(timeout=30):
                n += 1
                m.release()
            else:
                errors.append(m.last_error)
        counts[tuple(order)] = n

    ts = [threading.Thread(target=loop, args=(o,)) for o in ([a, b], [b, a])]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert counts == {(a, b): rounds, (b, a): rounds}


def test_auto_extend_keeps_the_set(client, other, name):
    names = [name + ":a", name + ":b"]
    m = client.lock(names, ttl=0.6, auto_extend=True)
    with m:
        time.sleep(1.5)
        assert m.held and m.validity > 0
        assert not other.lock(names[::-1]).acquire(blocking=False)
    assert other.lock(names).acquire(blocking=False)


def test_async(client, other, name):
    names = [name + ":a", name + ":b"]

    async def main():
        async with client.alock(names) as m:
            assert await m.locked()
            assert not other.lock(names[::-1]).acquire(blocking=False)
        assert not await m.locked()

    asyncio.run(main())


def test_bad_input(client, name):
    with pytest.raises(redlock.InvalidArgument, match="empty"):
        client.lock([])
    with pytest.raises(redlock.InvalidArgument, match="twice"):
        client.lock([name, name])
    with pytest.raises(redlock.InvalidArgument, match="limit"):
        client.lock([f"{name}:{i}" for i in range(redlock.MultiLock.MAX + 1)])
    with pytest.raises(redlock.InvalidArgument, match="resource 2 of 2"):
        client.lock([name, ""])
    with pytest.raises(TypeError):
        client.lock([name, None])
    with pytest.raises(redlock.InvalidArgument, match="NUL"):
        client.lock([name, "a\0b"])
    m = client.lock([f"{name}:{i}" for i in range(redlock.MultiLock.MAX)])
    with m:
        assert m.held


# -- Redlock.try_acquire_many: one attempt at each of many locks, pipelined -----------------------

def test_try_acquire_many(client, other, name):
    locks = [client.lock(f"{name}:{i}", ttl=10) for i in range(50)]
    taken = other.lock(f"{name}:7")
    assert taken.acquire(blocking=False)
    got = client.try_acquire_many(locks)
    assert got == [i != 7 for i in range(50)]
    assert all(lk.held for i, lk in enumerate(locks) if i != 7)
    assert not locks[7].held and isinstance(locks[7].last_error, redlock.LockNotAcquired)
    for lk in locks:
        if lk.held:
            lk.release()
    taken.release()
    assert client.try_acquire_many(locks, ttl=5) == [True] * 50
    assert all(4 < lk.validity <= 5 for lk in locks)
    # already held: each says so, nothing raises
    again = client.try_acquire_many(locks[:3])
    assert again == [False] * 3 and isinstance(locks[0].last_error, redlock.LockStateError)
    for lk in locks:
        lk.release()
    assert client.try_acquire_many([]) == []


def test_try_acquire_many_bad_input(client, other, name):
    a, b = client.lock(name + ":a", ttl=10), client.lock(name + ":b", ttl=20)
    with pytest.raises(ValueError, match="different TTLs"):
        client.try_acquire_many([a, b])
    with pytest.raises(redlock.InvalidArgument, match="twice"):
        client.try_acquire_many([a, a])
    with pytest.raises(redlock.InvalidArgument, match="another client"):
        client.try_acquire_many([a, other.lock(name + ":c")])
    with pytest.raises(TypeError):
        client.try_acquire_many([a, "x"])
    # the list's checks are the C library's, said in its words (the binding has no copy of them)
    with pytest.raises(redlock.InvalidArgument, match=r"'.*:a' is given twice"):
        client.try_acquire_many([a, b, a], ttl=10)
    with pytest.raises(redlock.InvalidArgument, match="over the limit of 65536"):
        client.try_acquire_many([a] * 65537, ttl=10)
    assert not a.held and not b.held
    # a closed client says so (the locks themselves stay usable)
    gone = redlock.Redlock(client.nodes)
    c = gone.lock(name + ":closed", ttl=10)
    gone.close()
    with pytest.raises(redlock.LockStateError, match="client is closed"):
        gone.try_acquire_many([c])
    assert c.acquire(blocking=False)
    c.release()
    # a MultiLock takes part like any other Lock
    m = client.lock([name + ":x", name + ":y"], ttl=10)
    assert client.try_acquire_many([a, m]) == [True, True]
    assert m.held
    m.release()
    a.release()
