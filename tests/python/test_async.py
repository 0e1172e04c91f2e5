# SPDX-License-Identifier: BSD-3-Clause
# asyncio: `async with client.alock(...)` hands the wait to C's acquire thread
# (redlock_lock_acquire_async), so the event loop keeps running during a wait, no executor thread
# is taken by it, and cancelling the task cancels the wait in C.
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import pytest

from redlock import InvalidArgument, LockLost, LockNotAcquired, LockStateError, LockTimeout


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_async_with(client, other, name):
    async def main():
        async with client.alock(name, ttl=5.0) as lock:
            assert lock.held and 4.0 < lock.validity <= 5.0
            rival = other.alock(name, ttl=1.0)
            assert await rival.acquire(blocking=False) is False
            assert isinstance(rival.last_error, LockNotAcquired)
            assert await rival.locked() is False
            await lock.extend_async(10.0)
            assert lock.validity > 9.0
        assert not lock.held
        return lock

    run(main())
    other.acquire(name, ttl=1.0, blocking=False).release()


def test_loop_keeps_running_during_a_wait(client, other, name):
    holder = other.acquire(name, ttl=30.0)
    ticks = 0

    async def ticker(stop):
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    async def main():
        stop = asyncio.Event()
        tick_task = asyncio.create_task(ticker(stop))
        try:
            with pytest.raises(LockTimeout):
                async with client.alock(name, ttl=5.0, wait=1.0):
                    pass
        finally:
            stop.set()
            await tick_task

    try:
        run(main())
    finally:
        holder.release()
    assert ticks > 40, f"the loop ticked only {ticks} times in a 1 s wait: it was blocked"


def test_cancelling_the_task_cancels_the_wait(client, other, name):
    holder = other.acquire(name, ttl=30.0)
    lock = client.alock(name, ttl=5.0, wait=30.0)

    async def main():
        async def waiter():
            async with lock:
                pytest.fail("the lock is held elsewhere")

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0.2)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - t0

    try:
        elapsed = run(main())
    finally:
        holder.release()
    assert elapsed < 1.0, f"cancellation took {elapsed:.2f} s"
    # The C acquire has ended: the Lock is free to use again.
    assert not lock.held
    with lock:
        assert lock.held


def test_cancel_right_after_start_is_not_lost(client, other, name):
    holder = other.acquire(name, ttl=30.0)

    async def main():
        lock = client.alock(name, ttl=5.0, wait=30.0)
        task = asyncio.create_task(lock.acquire_async())
        await asyncio.sleep(0)  # the task may not have started the C call yet
        task.cancel()
        t0 = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not lock.held
        return time.monotonic() - t0

    try:
        assert run(main()) < 1.0
    finally:
        holder.release()


def test_exception_in_async_block_releases(client, other, name):
    async def main():
        with pytest.raises(RuntimeError, match="boom"):
            async with client.alock(name, ttl=5.0):
                raise RuntimeError("boom")

    run(main())
    other.acquire(name, ttl=1.0, blocking=False).release()


def test_lost_lock_at_async_exit(client, name):
    async def main():
        with pytest.raises(LockLost):
            async with client.alock(name, ttl=0.2):
                await asyncio.sleep(0.4)

    run(main())


def test_many_tasks_take_turns(client, name):
    inside = 0
    most = 0

    async def worker():
        nonlocal inside, most
        for _ in range(3):
            async with client.alock(name, ttl=5.0, wait=30.0):
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0.005)
                inside -= 1

    async def main():
        await asyncio.gather(*(worker() for _ in range(4)))

    run(main())
    assert most == 1


def test_waits_take_no_executor_thread(client, other, name):
    """Issue 37's case: 48 tasks wait with `async with` for 48 locks held elsewhere and 8 more
    with acquire(timeout=30). The loop's default executor has one thread. While they all wait,
    that thread still answers: no wait sits on it. Once released, every task gets its lock."""
    names = [f"{name}:{i}" for i in range(48)]
    held = [other.acquire(n, ttl=30.0) for n in names]
    threads_before = threading.active_count()
    got = []

    async def with_block(n):
        async with client.alock(n, ttl=5.0, wait=30.0) as lock:
            assert lock.held
            got.append(n)
            await asyncio.sleep(0.005)

    async def with_acquire(n):
        lock = client.alock(n, ttl=5.0)
        assert await lock.acquire(timeout=30) is True
        got.append(n)
        await lock.release()

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=1))
        tasks = [asyncio.create_task(with_block(n)) for n in names]
        tasks += [asyncio.create_task(with_acquire(n)) for n in names[:8]]
        await asyncio.sleep(0.3)
        # Every wait is under way, none done (the locks are held), and the executor answers.
        t0 = time.monotonic()
        await asyncio.wait_for(loop.run_in_executor(None, lambda: None), 10)
        probe = time.monotonic() - t0
        assert not got, "a lock held elsewhere was granted"
        assert all(not t.done() for t in tasks)
        # No thread per waiter: C's acquire thread (and the executor's one) at most.
        assert threading.active_count() - threads_before <= 3
        for h in held:
            await loop.run_in_executor(None, h.release)
        released = time.monotonic()
        await asyncio.gather(*tasks)
        return probe, time.monotonic() - released

    probe, handover = run(main())
    assert sorted(got) == sorted(names + names[:8])
    print(f"executor answered in {probe * 1000:.1f} ms during 56 waits; all 56 held "
          f"{handover * 1000:.0f} ms after the release")


def test_release_and_extend_take_no_executor_thread(client, other, name):
    """An AsyncLock's release and extend run on C's acquire thread
    (redlock_lock_release_async, redlock_lock_extend_async): with the loop's
    default executor busy the whole time, 20 locks are taken, extended and
    released, and each release frees its lock on the nodes."""
    names = [f"{name}:{i}" for i in range(20)]
    gate = threading.Event()

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=1))
        blocker = loop.run_in_executor(None, gate.wait, 30)   # the executor's one thread, busy
        try:
            locks = [client.alock(n, ttl=2.0) for n in names]
            for lock in locks:
                assert await lock.acquire(blocking=False) is True
            await asyncio.wait_for(asyncio.gather(*(lock.extend(20.0) for lock in locks)), 10)
            assert all(lock.validity > 10 for lock in locks)
            await asyncio.wait_for(asyncio.gather(*(lock.release() for lock in locks)), 10)
            assert not any(lock.held for lock in locks)
            assert not blocker.done()
            # released on the nodes: another client takes each at once
            for n in names:
                assert other.lock(n, ttl=1.0).acquire(blocking=False)
            with pytest.raises(LockStateError):   # not held: release's own error
                await locks[0].release()
        finally:
            gate.set()
            await blocker

    run(main())


def test_waits_of_many_loops_share_one_thread(make_client, cluster5, name):
    """Two event loops in two threads wait through one client: each result reaches its own loop."""
    c = make_client(cluster5.urls)
    holder = make_client(cluster5.urls)
    held = [holder.acquire(f"{name}:{i}", ttl=30.0) for i in range(2)]
    results = {}

    def loop_thread(i):
        async def main():
            lock = c.alock(f"{name}:{i}", ttl=5.0)
            ok = await lock.acquire(timeout=20)
            results[i] = (ok, threading.get_ident() == me, lock.held)
            await lock.release()
        me = threading.get_ident()
        asyncio.run(main())

    ts = [threading.Thread(target=loop_thread, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    for h in held:
        h.release()
    for t in ts:
        t.join(30)
    assert results == {0: (True, True, True), 1: (True, True, True)}


def test_second_task_on_one_lock_is_refused(client, other, name):
    holder = other.acquire(name, ttl=30.0)
    lock = client.alock(name, ttl=5.0)

    async def main():
        first = asyncio.create_task(lock.acquire(timeout=20))
        await asyncio.sleep(0.1)
        with pytest.raises(LockStateError, match="in use"):
            await lock.acquire(timeout=1)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first

    try:
        run(main())
    finally:
        holder.release()
    assert not lock.lock.held


class _RefusingExecutor(concurrent.futures.ThreadPoolExecutor):
    """A default executor that records every use and runs nothing."""

    def __init__(self):
        super().__init__(max_workers=1)
        self.used = []

    def submit(self, fn, *args, **kwargs):
        self.used.append(getattr(fn, "__qualname__", repr(fn)))
        raise RuntimeError("the default executor was used")


def test_downgrade_resign_observe_and_min_hold_take_no_executor(client, other, name):
    """The single-round calls of asyncio's shapes run on C's acquire thread, as acquires and
    releases do: a write lock's downgrade (redlock_lock_downgrade_async), a leadership's resign
    at `async with` exit (redlock_election_resign_async), a proclaim
    (redlock_election_proclaim_async), an observer's first read
    (redlock_election_observe_async, one read) and synchronized's min_hold extension. A default
    executor that refuses work sees none of them, and each did what it says."""
    refusing = _RefusingExecutor()

    async def main():
        asyncio.get_running_loop().set_default_executor(refusing)
        rw = client.rwlock(f"{name}:rw", ttl=5.0)
        async with rw.awrite() as w:
            await w.downgrade()
            assert w.held and "downgraded" in repr(w.lock)
            assert other.rwlock(f"{name}:rw").read().acquire(blocking=False)   # readers join now

        election = client.election(f"{name}:e")
        async with election.observe(timeout=0) as changes:   # the first item: no leader yet
            first = [state async for state in changes]
        assert len(first) == 1 and not first[0].present
        async with await election.campaign_async("me") as term:
            assert election.is_leader and term >= 1
            async with election.observe(timeout=0) as changes:
                now = [state async for state in changes]
            assert now[0].present and now[0].value == "me" and now[0].term == term
            await election.proclaim_async("me, again")   # redlock_election_proclaim_async
            seen = other.election(f"{name}:e").leader()
            assert (seen.value, seen.term, seen.revision) == ("me, again", term, 2)
        assert not election.is_leader
        assert not other.election(f"{name}:e").leader().present   # resigned on the nodes
        lead = await election.campaign_async("again")
        await lead.proclaim_async("and again")
        with pytest.raises(InvalidArgument):
            await lead.proclaim_async("x" * 1025)
        assert other.election(f"{name}:e").leader().value == "and again"
        lead.resign()
        with pytest.raises(LockStateError):
            await election.proclaim_async("late")

        @client.synchronized(f"{name}:s", blocking=False, min_hold=5.0)
        async def job():
            return 42

        assert await job() == 42
        assert other.lock(f"{name}:s").acquire(blocking=False) is False   # kept for min_hold

    run(main())
    assert refusing.used == []
