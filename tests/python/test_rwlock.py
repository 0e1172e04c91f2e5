# SPDX-License-Identifier: BSD-3-Clause
# The read-write lock (client.rwlock): readers share, a writer excludes readers, writers and mutex
# Locks, downgrade, no upgrade, asyncio, bad input. The algorithm's own cases are the C tests'
# (tests/c/test_rwlock.c); these check the binding's shape.
from __future__ import annotations

import asyncio
import threading

import pytest

import redlock
from redlock import InvalidArgument, LockLost, LockNotAcquired, LockStateError


def test_readers_share_writer_excludes(client, other, name):
    rw, rw2 = client.rwlock(name, ttl=10.0), other.rwlock(name, ttl=10.0)
    with rw.read() as r1, rw2.read() as r2:
        assert isinstance(r1, redlock.ReadLock) and r1.held and r2.held
        w = rw2.write()
        assert w.acquire(blocking=False) is False
        assert isinstance(w.last_error, LockNotAcquired)
        assert other.lock(name).acquire(blocking=False) is False   # a mutex Lock too
    with rw.write() as w:
        assert isinstance(w, redlock.WriteLock) and w.held
        assert rw2.read().acquire(blocking=False) is False
        assert rw2.write().acquire(blocking=False) is False
    with rw2.write(timeout=5.0) as w2:
        assert w2.held


def test_waiting_writer_gets_in_before_new_readers(client, other, name):
    rw = client.rwlock(name, ttl=20.0)
    r1 = rw.read()
    assert r1.acquire(blocking=False)
    w = other.rwlock(name, ttl=10.0).write()
    done = threading.Event()
    t = threading.Thread(target=lambda: (w.acquire(timeout=15.0), done.set()))
    t.start()
    try:
        # once the writer has been refused, new readers wait for it
        r2 = rw.read()
        for _ in range(200):
            if r2.acquire(blocking=False) is False:
                break
            r2.release()
            threading.Event().wait(0.01)
        else:
            pytest.fail("new readers were never held back by the waiting writer")
        assert not done.is_set()
        r1.release()
        assert done.wait(10.0) and w.held
    finally:
        t.join(20)
    w.release()


def test_downgrade_and_no_upgrade(client, other, name):
    rw = client.rwlock(name, ttl=10.0)
    with rw.write() as w:
        w.downgrade()
        assert w.held and "downgraded" in repr(w)
        with other.rwlock(name).read() as r:      # readers may join now
            assert r.held
        assert other.rwlock(name).write().acquire(blocking=False) is False
        with pytest.raises(LockStateError):
            w.acquire(blocking=False)      # held, and a downgraded WriteLock is not a writer again
    assert not w.held
    with pytest.raises(LockStateError):
        w.acquire(blocking=False)
    assert not hasattr(rw.read(), "upgrade")   # no upgrade, by design
    with pytest.raises(LockStateError):
        rw.write().downgrade()    # not held


def test_release_lost_and_extend(client, name, cluster5):
    r = client.rwlock(name, ttl=10.0).read()
    assert r.acquire(blocking=False)
    r.extend(20.0)
    assert r.validity > 15.0
    for i in range(cluster5.count):
        cluster5.cmd(i, "DEL", name, name + ":rd")
    with pytest.raises(LockLost):
        r.release()


def test_auto_extend_reader(client, other, name):
    with client.rwlock(name, ttl=0.6, auto_extend=True).read() as r:
        threading.Event().wait(1.5)
        assert r.held and not r.lost.is_set()
        assert other.rwlock(name).write().acquire(blocking=False) is False


def test_asyncio(client, other, name):
    async def main():
        rw = client.rwlock(name, ttl=5.0)
        async with rw.aread() as a, rw.aread() as b:
            assert a.held and b.held
            assert await other.rwlock(name).awrite().acquire(blocking=False) is False
        async with rw.awrite() as w:
            assert w.held
            await w.downgrade()
            async with other.rwlock(name).aread() as r:
                assert r.held
        async with rw.write():        # Lock's own `async with`, too
            pass

    asyncio.run(asyncio.wait_for(main(), 60))


def test_bad_input(client):
    with pytest.raises(InvalidArgument) as e:
        client.rwlock("").read()
    assert "empty" in str(e.value)
    with pytest.raises(InvalidArgument):
        client.rwlock("x" * 100000).write()
    with pytest.raises(TypeError):
        client.rwlock(None).read()
    with pytest.raises(ValueError):
        client.rwlock("x", ttl=0).read()
