# SPDX-License-Identifier: BSD-3-Clause
# Redlock.synchronized(): the decorator for plain and async functions, waiting or skipping.
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import redlock


def test_plain_function_runs_under_the_lock(client, other, name):
    @client.synchronized(name, ttl=5)
    def job(x, y=1):
        """Doc kept."""
        assert other.lock(name).acquire(blocking=False) is False  # held while it runs
        return x + y

    assert job(2, y=3) == 5
    assert job.__name__ == "job" and job.__doc__ == "Doc kept."
    assert other.lock(name).acquire(blocking=False)  # released after


def test_waits_for_a_holder(client, other, name):
    holder = other.acquire(name, ttl=10)
    ran = threading.Event()

    @client.synchronized(name)
    def job():
        ran.set()
        return "done"

    result = []
    t = threading.Thread(target=lambda: result.append(job()))
    t.start()
    assert not ran.wait(0.3)  # still waiting
    holder.release()
    t.join(10)
    assert result == ["done"]


def test_wait_with_timeout_raises(client, other, name):
    holder = other.acquire(name, ttl=10)
    try:
        @client.synchronized(name, timeout=0.2)
        def job():
            raise AssertionError("must not run")

        with pytest.raises(redlock.LockTimeout):
            job()
    finally:
        holder.release()


def test_nonblocking_skips_and_reports(client, other, name, caplog):
    holder = other.acquire(name, ttl=10)
    calls = []
    skips = []

    @client.synchronized(name, blocking=False)
    def job():
        calls.append(1)

    @client.synchronized(name, blocking=False, on_skip=lambda a, b=0: skips.append((a, b)) or "skipped")
    def job2(a, b=0):
        calls.append(2)

    with caplog.at_level("INFO", logger="redlock"):
        assert job() is None
        assert job2(7, b=8) == "skipped"
    assert calls == [] and skips == [(7, 8)]
    assert job.skips == 1 and job2.skips == 1
    assert any("skipped" in r.getMessage() and name in r.getMessage() for r in caplog.records)
    holder.release()
    assert job() is None and calls == [1] and job.skips == 1


def test_exception_releases(client, other, name):
    @client.synchronized(name, blocking=False)
    def job():
        raise KeyError("boom")

    with pytest.raises(KeyError):
        job()
    assert other.lock(name).acquire(blocking=False)


def test_name_from_arguments(client, other, name):
    @client.synchronized(lambda user: f"{name}:{user}", blocking=False)
    def job(user):
        return user

    holder = other.acquire(f"{name}:bob")
    try:
        assert job("alice") == "alice"
        assert job("bob") is None and job.skips == 1
    finally:
        holder.release()


def test_min_hold_keeps_the_lock(client, other, name):
    @client.synchronized(name, blocking=False, min_hold=1.0)
    def job():
        return 1

    started = time.monotonic()
    assert job() == 1
    assert job() is None and job.skips == 1  # a duplicate right after is skipped
    probe = other.lock(name)
    assert probe.acquire(timeout=5)  # the key expires by itself
    assert time.monotonic() - started >= 0.9
    probe.release()


def test_async_function(client, other, name):
    order = []

    @client.synchronized(name, blocking=False, on_skip=lambda: asyncio.sleep(0, result="skip"))
    async def job():
        order.append("in")
        await asyncio.sleep(0.2)
        order.append("out")
        return "ran"

    assert asyncio.iscoroutinefunction(job)

    async def main():
        return await asyncio.gather(job(), job())

    results = sorted(asyncio.run(main()))
    assert results == ["ran", "skip"] and order == ["in", "out"] and job.skips == 1
    assert other.lock(name).acquire(blocking=False)


def test_async_waits(client, name):
    active = []

    @client.synchronized(name)
    async def job(i):
        active.append(i)
        assert len(active) == 1
        await asyncio.sleep(0.05)
        active.remove(i)
        return i

    async def main():
        return await asyncio.gather(*(job(i) for i in range(3)))

    assert asyncio.run(main()) == [0, 1, 2]


def test_bad_arguments(client):
    with pytest.raises(TypeError):
        client.synchronized(None)
    with pytest.raises(TypeError):
        client.synchronized("x", on_skip=3)
    with pytest.raises(redlock.InvalidArgument):
        client.synchronized("x", ttl=0)
    with pytest.raises(redlock.InvalidArgument):
        client.synchronized("", blocking=False)


def test_no_quorum_raises_not_skips(make_client, fresh5, name):
    c = make_client(fresh5.urls, node_timeout=0.2, retry_count=0)
    for i in range(3):
        fresh5.kill(i)

    @c.synchronized(name, blocking=False)
    def job():
        raise AssertionError("must not run")

    with pytest.raises(redlock.QuorumError):
        job()
    assert job.skips == 0
