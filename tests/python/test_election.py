# SPDX-License-Identifier: BSD-3-Clause
# Leader election through the Python binding: campaign as a context manager giving the term,
# proclaim, resign and hand-over, leader(), observe() as a generator and as an async iterator,
# and bad input.
from __future__ import annotations

import asyncio
import threading

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
