# SPDX-License-Identifier: BSD-3-Clause
# Wake-up and fair mode: Redlock(wake=, fair=) and the per-lock wake=/fair= reach the C lock options,
# a waiting acquire (sync or asyncio) is woken by the holder's release, and the listener states and
# the WOKEN / LISTENER events say what the client's listener does.
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import redlock
from redlock import EventType, ListenerState, LockStateError, Redlock
from _waits import wait_until

# Waiters that only a wake-up gets the lock in time: their next retry is far away. A broken
# wake-up then shows as a missing WOKEN event, not as a hang (the retry still comes).
# Wake-up is opt-in (wake=True).
SLOW_RETRY = {"retry_delay": 20.0, "retry_jitter": 0.0, "wake": True}


class Recorder:
    def __init__(self):
        self.events = []
        self._mutex = threading.Lock()

    def __call__(self, event):
        with self._mutex:
            self.events.append(event)

    def of(self, type_):
        with self._mutex:
            return [e for e in self.events if e.type == type_]


def all_ready(client):
    return client.listener_states() == (ListenerState.READY,) * len(client.nodes)


def test_options_reach_the_lock(make_client, cluster5, name):
    c = make_client(cluster5.urls)
    lock = c.lock(name)
    assert lock.options["wake"] is False and lock.options["fair"] is False  # polling by default
    # Per lock, over the client's, without touching the rest of the policy.
    lock = c.lock(name, wake=True, fair=True, retry_count=7)
    assert lock.options["wake"] is True and lock.options["fair"] is True
    assert lock.options["retry_count"] == 7 and lock.options["retry_delay"] == 0.001
    assert c.alock(name, fair=True).options["fair"] is True
    # The client's flags are the default of its locks; a lock can turn them back.
    c2 = make_client(cluster5.urls, wake=False, fair=True)
    opts = c2.lock(name).options
    # "wake" says how the lock waits, by C's rule (redlock_flags_wake): fair implies wake-up.
    assert opts["wake"] is True and opts["fair"] is True
    assert c2.lock(name, wake=False).options["wake"] is True
    back = c2.lock(name, wake=True, fair=False)
    assert back.options["wake"] is True and back.options["fair"] is False
    # Only the given one changes.
    assert c2.lock(name, fair=False).options["wake"] is False


def test_invalid_wake_and_fair(make_client, cluster5, name):
    with pytest.raises(TypeError, match="wake must be a bool"):
        Redlock(cluster5.urls, wake="no")
    with pytest.raises(TypeError, match="fair must be a bool"):
        Redlock(cluster5.urls, fair=None)
    c = make_client(cluster5.urls)
    with pytest.raises(TypeError, match="fair must be a bool"):
        c.lock(name, fair=1)
    with pytest.raises(TypeError, match="wake must be a bool"):
        c.alock(name, wake="off")
    with pytest.raises(IndexError, match="out of range"):
        c.listener_state(5)
    with pytest.raises(IndexError):
        c.listener_state(-1)
    with pytest.raises(TypeError):
        c.listener_state("0")
    c.close()
    with pytest.raises(LockStateError, match="closed"):
        c.listener_states()


def test_listeners_start_with_the_first_waiting_acquire(make_client, other, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec, **SLOW_RETRY)
    assert c.listener_states() == (ListenerState.OFF,) * 5
    assert c.listener_state(0) == (ListenerState.OFF, "")
    # One attempt does not wait, so it opens no listener.
    holder = other.acquire(name, ttl=30.0)
    try:
        assert c.lock(name).acquire(blocking=False) is False
        assert c.listener_states() == (ListenerState.OFF,) * 5
        waiter = c.lock(name, ttl=10.0)
        got = []
        t = threading.Thread(target=lambda: got.append(waiter.acquire(timeout=60)))
        t.start()
        try:
            wait_until(lambda: all_ready(c), "every listener READY")
            # The listeners can be READY while the attempt that registers the waiter is still on
            # its way; released then, that attempt could take the lock with no wake-up. Once the
            # registration is on a majority, those nodes refused it: the waiter sleeps (20 s)
            # until a wake-up.
            wait_until(lambda: sum(cluster5.cmd(i, "EXISTS", name + ":wq") for i in range(5)) >= 3,
                       "the waiter registered on a majority")
        finally:
            holder.release()
            t.join(60)
    finally:
        if holder.held:
            holder.release()
    assert got == [True]
    waiter.release()
    assert rec.of(EventType.WOKEN), [e.type for e in rec.events]
    # LISTENER events tell each node's way to READY, to the waiting acquire that saw it.
    ready = [e for e in rec.of(EventType.LISTENER) if e.listener_state == ListenerState.READY]
    assert sorted(e.node for e in ready) == [0, 1, 2, 3, 4]
    assert all(e.resource == name and e.node_url == c.nodes[e.node] for e in ready)
    assert all(e.listener_state is None for e in rec.of(EventType.ACQUIRED))
    # The listener stays up for the client's next waits.
    assert all_ready(c)


def test_wake_false_still_acquires_by_polling(make_client, other, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec, wake=False, retry_delay=0.01)
    holder = other.acquire(name, ttl=30.0)
    got = []
    waiter = c.lock(name, ttl=10.0)
    t = threading.Thread(target=lambda: got.append(waiter.acquire(timeout=60)))
    t.start()
    try:
        wait_until(lambda: len(rec.of(EventType.ACQUIRE_FAILED)) >= 2, "the waiter's retries")
    finally:
        holder.release()
        t.join(60)
    assert got == [True]
    waiter.release()
    assert not rec.of(EventType.WOKEN) and not rec.of(EventType.LISTENER)
    assert c.listener_states() == (ListenerState.OFF,) * 5
    # A lock of a wake=False client can still ask for wake-up on its own.
    lock = c.lock(name, wake=True)
    assert lock.options["wake"] is True


def test_asyncio_waiter_is_woken_by_the_release(make_client, cluster5, name):
    # Two tasks on separate clients: the second waits in acquire_async (a C wait on an executor
    # thread) and is woken by the first one's release.
    rec = Recorder()
    first = make_client(cluster5.urls)
    second = make_client(cluster5.urls, on_event=rec, **SLOW_RETRY)

    async def main():
        held = asyncio.Event()
        release = asyncio.Event()

        async def holder():
            async with first.alock(name, ttl=30.0):
                held.set()
                await release.wait()

        async def waiter():
            await held.wait()
            lock = second.alock(name, ttl=10.0)
            ok = await lock.acquire(timeout=60)
            try:
                return ok, lock.held, lock.options["wake"]
            finally:
                if ok:
                    await lock.release()

        h = asyncio.create_task(holder())
        w = asyncio.create_task(waiter())
        deadline = time.monotonic() + 30
        while not (all_ready(second) and rec.of(EventType.ACQUIRE_FAILED)):
            assert time.monotonic() < deadline, "the waiter never started waiting"
            await asyncio.sleep(0.01)
        assert not w.done()
        release.set()
        await h
        return await w

    ok, held, wake = asyncio.run(asyncio.wait_for(main(), 90))
    assert ok is True and held is True and wake is True
    woken = rec.of(EventType.WOKEN)
    assert woken, [e.type for e in rec.events]
    assert woken[0].resource == name and woken[0].node_url in second.nodes
    # The wake-up's attempt is what got the lock.
    assert rec.of(EventType.ACQUIRED)


def test_fair_mode_serves_waiters_in_arrival_order(make_client, cluster5, name):
    recs = [Recorder(), Recorder()]
    holder_client = make_client(cluster5.urls, fair=True)
    waiters = [make_client(cluster5.urls, fair=True, on_event=r, **SLOW_RETRY) for r in recs]
    holder = holder_client.acquire(name, ttl=30.0)
    order = []
    order_mutex = threading.Lock()
    locks = [w.lock(name, ttl=10.0) for w in waiters]
    assert all(lk.options["fair"] for lk in locks)

    def wait(i):
        if locks[i].acquire(timeout=60):
            with order_mutex:
                order.append(i)
            locks[i].release()

    threads = []
    try:
        for i in range(2):
            t = threading.Thread(target=wait, args=(i,))
            t.start()
            threads.append(t)
            # Waiter 0 is queued before waiter 1 starts.
            wait_until(lambda: all_ready(waiters[i]) and recs[i].of(EventType.ACQUIRE_FAILED),
                       f"waiter {i} waiting")
    finally:
        holder.release()
        for t in threads:
            t.join(60)
    assert order == [0, 1]
    assert recs[0].of(EventType.WOKEN) and recs[1].of(EventType.WOKEN)


def test_listener_state_is_exported():
    assert redlock.ListenerState.READY == redlock._lib.REDLOCK_LISTENER_READY
    assert {s.name for s in ListenerState} == {"OFF", "CONNECTING", "READY", "DOWN", "REFUSED"}
    assert EventType.WOKEN == redlock._lib.REDLOCK_EVENT_WOKEN
    assert EventType.LISTENER == redlock._lib.REDLOCK_EVENT_LISTENER
