# SPDX-License-Identifier: BSD-3-Clause
# Leader election through the Python binding: campaign as a context manager giving the term,
# proclaim, resign and hand-over, leader(), observe() as a generator and as an async iterator,
# its timeout and close(), and bad input.
from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref

import pytest

from redlock import Cancelled, InvalidArgument, Leader, LockStateError, LockTimeout


def test_campaign_leader_proclaim_resign(client, other, name):
    a = client.election(name)
    b = other.election(name)
    assert b.leader() == Leader(False, 0, 0, None)
    with a.campaign("alpha") as term:
        assert term >= 1 and a.term == term and a.is_leader
        assert b.leader() == Leader(True, term, 1, "alpha")
        with pytest.raises(LockTimeout):
            b.campaign("beta", timeout=0.2)
        with pytest.raises(LockStateError):
            b.proclaim("beta")
        a.proclaim("alpha-2")
        assert b.leader() == Leader(True, term, 2, "alpha-2")
    assert not a.is_leader and a.term == 0
    assert b.leader() == Leader(False, term, 0, None)
    with b.campaign("beta") as term2:
        assert term2 > term
        assert a.leader().value == "beta"


def test_hand_over_wakes_the_next_campaigner(client, other, name):
    a = client.election(name)
    b = other.election(name)
    lead = a.campaign("a")
    got = []
    t = threading.Thread(target=lambda: got.append(b.campaign("b")))
    t.start()
    t.join(0.2)
    assert t.is_alive()   # waiting while a leads
    lead.resign()
    t.join(10)
    assert got and got[0].term > lead.term and b.is_leader
    got[0].resign()


def test_observe_generator_sees_every_change_in_order(client, other, name):
    a = client.election(name)
    watcher = other.election(name)
    seen = []
    ready = threading.Event()

    def watch():
        for state in watcher.observe():
            seen.append(state)
            ready.set()
            if len(seen) == 5:
                return

    t = threading.Thread(target=watch)
    t.start()
    assert ready.wait(10)   # the current state: none

    def until_seen(value):
        # Each change waits until the observer has it: two changes within one of its reads
        # would be coalesced into the later one (as documented).
        for _ in range(1000):
            if seen[-1].value == value:
                return
            t.join(0.01)
        raise AssertionError("the observer did not see %r: %r" % (value, seen))

    lead = a.campaign("v1")
    until_seen("v1")
    for v in ("v2", "v3"):
        a.proclaim(v)
        until_seen(v)
    lead.resign()
    t.join(10)
    assert [s.value for s in seen] == [None, "v1", "v2", "v3", None]
    assert [s.revision for s in seen[1:4]] == [1, 2, 3]
    assert all(s.term == lead.term for s in seen[1:])


def test_observe_async_iterator(client, other, name):
    a = client.election(name)
    watcher = other.election(name)

    async def main():
        seen = []
        it = watcher.observe(current=False)
        task = asyncio.ensure_future(it.__anext__())
        await asyncio.sleep(0.1)
        lead = await asyncio.get_running_loop().run_in_executor(None, a.campaign, "x")
        seen.append(await asyncio.wait_for(task, 10))
        lead.resign()
        seen.append(await asyncio.wait_for(it.__anext__(), 10))
        return seen, lead.term

    seen, term = asyncio.run(main())
    assert seen == [Leader(True, term, 1, "x"), Leader(False, term, 0, None)]


def test_bad_input_and_cancel(client, name):
    with pytest.raises(InvalidArgument):
        client.election("")
    with pytest.raises(InvalidArgument):
        client.election(name + ":fencing")
    e = client.election(name)
    with pytest.raises(InvalidArgument):
        e.campaign("v" * 1025)
    with pytest.raises(InvalidArgument):
        e.campaign("v", ttl=0)
    with pytest.raises(LockStateError):
        e.resign()
    e.cancel()
    with pytest.raises(Cancelled):
        e.campaign("v")
    e.reset_cancel()
    with e.campaign("v" * 1024) as term:
        assert e.leader().value == "v" * 1024 and term >= 1


# -- observe(timeout=...) and close() ---------------------------------------------------------

# How much later than asked an ended wait may return, on a loaded machine.
MARGIN = 0.5


def test_observe_timeout_ends_the_loop_when_nothing_changes(client, name):
    e = client.election(name)
    seen = []
    start = time.monotonic()
    changes = e.observe(timeout=0.4)
    for leader in changes:
        seen.append((leader, time.monotonic()))
    ended = time.monotonic()
    assert [s for s, _ in seen] == [Leader(False, 0, 0, None)]   # the current state, then nothing
    quiet = ended - seen[0][1]
    assert 0.4 - 0.01 <= quiet < 0.4 + MARGIN, quiet
    assert ended - start < 0.4 + 2 * MARGIN
    assert changes.timed_out and changes.closed
    with pytest.raises(StopIteration):   # an ended iterator stays ended
        next(changes)


def test_observe_timeout_restarts_with_each_change(client, other, name):
    a = client.election(name)
    watcher = other.election(name)
    seen = []
    done = threading.Event()

    def watch():
        for leader in watcher.observe(current=False, timeout=1.5):
            seen.append(leader.value)
        done.set()

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.2)
    lead = a.campaign("v1")
    for v in ("v2", "v3"):   # each change within the timeout of the last: the loop goes on
        time.sleep(0.9)
        assert not done.is_set()
        a.proclaim(v)
    changed = time.monotonic()
    assert done.wait(1.5 + 2 * MARGIN)
    assert 1.5 - 0.05 <= time.monotonic() - changed < 1.5 + 2 * MARGIN
    t.join()
    lead.resign()
    assert seen == ["v1", "v2", "v3"]


def test_observe_timeout_zero_reads_once(client, other, name):
    a = client.election(name)
    watcher = other.election(name)
    changes = watcher.observe(timeout=0)
    assert next(changes) == Leader(False, 0, 0, None)
    with a.campaign("x") as term:
        start = time.monotonic()
        assert next(changes) == Leader(True, term, 1, "x")   # already changed: yielded
        with pytest.raises(StopIteration):                    # nothing more: ended at once
            next(changes)
        assert time.monotonic() - start < MARGIN and changes.timed_out
    with pytest.raises(InvalidArgument):
        watcher.observe(timeout=-1)


def test_observe_close_from_another_thread_ends_the_loop_at_once(client, name):
    e = client.election(name)
    changes = e.observe()
    seen = []
    ended = []

    def watch():
        for leader in changes:
            seen.append(leader)
        ended.append(time.monotonic())

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.3)   # the thread is in the C wait by now
    assert t.is_alive() and len(seen) == 1
    closed = time.monotonic()
    changes.close()
    t.join(5)
    assert not t.is_alive() and ended
    # Prompt: the C wait itself is cancelled, not left to its 500 ms slice.
    assert ended[0] - closed < 0.25, ended[0] - closed
    assert changes.closed and not changes.timed_out and changes._ptr is None   # C handle freed
    changes.close()   # idempotent
    assert list(e.observe(timeout=0.1)) == [Leader(False, 0, 0, None)]   # the election is unharmed


def test_observe_with_block_and_break_release_the_handle(client, name):
    e = client.election(name)
    with e.observe() as changes:
        for leader in changes:
            break
    assert changes.closed and changes._ptr is None and len(e._observers) == 0
    # break alone: the dropped observer is collected, and with it its C handle.
    for leader in e.observe():
        assert not leader.present
        break
    gc.collect()
    assert len(e._observers) == 0
    dropped = e.observe()
    ref = weakref.ref(dropped)
    assert len(e._observers) == 1
    del dropped
    gc.collect()
    assert ref() is None and len(e._observers) == 0


def test_election_cancel_ends_observers_with_cancelled(client, name):
    e = client.election(name)
    changes = e.observe(current=False)
    got = []

    def watch():
        try:
            next(changes)
        except BaseException as err:   # noqa: B902  (what ended it is the point)
            got.append(err)

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.3)
    e.cancel()
    t.join(2)
    assert not t.is_alive() and got and isinstance(got[0], Cancelled), got
    with pytest.raises(Cancelled):   # sticky until reset_cancel()
        next(changes)
    e.reset_cancel()
    assert list(e.observe(timeout=0.1)) == [Leader(False, 0, 0, None)]


def test_observe_async_timeout_close_and_cancel(client, other, name):
    a = client.election(name)
    watcher = other.election(name)

    async def main():
        loop = asyncio.get_running_loop()
        # 1. async for ends with the timeout.
        seen = []
        start = time.monotonic()
        async with watcher.observe(timeout=0.3) as changes:
            async for leader in changes:
                seen.append(leader)
        quiet = time.monotonic() - start
        assert seen == [Leader(False, 0, 0, None)] and changes.timed_out
        assert 0.3 - 0.01 <= quiet < 0.3 + 2 * MARGIN, quiet

        # 2. close() from another task ends async for at once.
        changes = watcher.observe(current=False)
        ends = []

        async def consume():
            async for leader in changes:
                seen.append(leader)
            ends.append(time.monotonic())

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0.3)
        closed = time.monotonic()
        changes.close()
        await asyncio.wait_for(task, 5)
        assert ends[0] - closed < 0.25, ends[0] - closed

        # 3. a cancelled await stops its thread at once, and the change it read is not lost.
        changes = watcher.observe(current=False)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(changes.__anext__(), 0.2)
        lead = await loop.run_in_executor(None, a.campaign, "y")
        first = await asyncio.wait_for(changes.__anext__(), 10)
        await loop.run_in_executor(None, lead.resign)
        second = await asyncio.wait_for(changes.__anext__(), 10)
        changes.close()
        return first, second, lead.term

    first, second, term = asyncio.run(main())
    assert first == Leader(True, term, 1, "y") and second == Leader(False, term, 0, None)


def test_campaign_async_waits_without_a_thread_and_leads_after_the_resign(client, other, name):
    leader = other.election(name)
    first = leader.campaign("one")
    candidate = client.election(name)

    async def main():
        loop = asyncio.get_running_loop()
        import concurrent.futures
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=1))
        task = asyncio.create_task(candidate.campaign_async("two", timeout=20))
        await asyncio.sleep(0.3)
        assert not task.done()
        # The one executor thread is free: the campaign does not sit on it.
        await asyncio.wait_for(loop.run_in_executor(None, lambda: None), 5)
        with pytest.raises(LockStateError, match="campaign"):
            candidate.resign()
        await loop.run_in_executor(None, first.resign)
        leadership = await asyncio.wait_for(task, 20)
        async with leadership as term:
            assert candidate.is_leader and term > first.term
            assert candidate.leader().value == "two"
        assert not candidate.is_leader

    asyncio.run(main())


def test_campaign_async_cancelled_by_the_task(client, other, name):
    leader = other.election(name)
    held = leader.campaign("one")
    candidate = client.election(name)

    async def main():
        task = asyncio.create_task(candidate.campaign_async("two"))
        await asyncio.sleep(0.2)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - t0 < 2.0
        # The campaign's cancel was the task's own: the next one is not cancelled.
        with pytest.raises(LockTimeout):
            await candidate.campaign_async("two", timeout=0.2)

    try:
        asyncio.run(main())
    finally:
        held.resign()
    assert not candidate.is_leader


def test_async_observers_take_no_executor_thread(client, other, name):
    """Eight `async for` observers wait for a change with a one-thread default executor: the
    executor still answers while they wait (their waits are C's), and each hears the leader."""
    import concurrent.futures
    watched = client.election(name)
    leader = other.election(name)
    seen = []

    async def watch():
        async with watched.observe(current=False, timeout=20) as changes:
            async for state in changes:
                seen.append(state.value)
                return

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=1))
        tasks = [asyncio.create_task(watch()) for _ in range(8)]
        await asyncio.sleep(0.3)
        assert not any(t.done() for t in tasks)
        await asyncio.wait_for(loop.run_in_executor(None, lambda: None), 5)
        held = await loop.run_in_executor(None, lambda: leader.campaign("new-leader"))
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
        await loop.run_in_executor(None, held.resign)

    asyncio.run(main())
    assert seen == ["new-leader"] * 8
