# SPDX-License-Identifier: BSD-3-Clause
# asyncio: `async with client.alock(...)` runs the blocking C calls in the default executor, so the
# event loop keeps running during a wait, and cancelling the task cancels the wait in C.
from __future__ import annotations

import asyncio
import time

import pytest

from redlock import LockLost, LockNotAcquired, LockTimeout


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
    # The worker thread's C call has returned: the Lock is free to use again.
    assert not lock.held
    with lock:
        assert lock.held


def test_cancel_right_after_start_is_not_lost(client, other, name):
    holder = other.acquire(name, ttl=30.0)

    async def main():
        lock = client.alock(name, ttl=5.0, wait=30.0)
        task = asyncio.create_task(lock.acquire_async())
        await asyncio.sleep(0)  # the executor may not have started the C call yet
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
