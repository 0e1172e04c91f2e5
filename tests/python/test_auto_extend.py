# SPDX-License-Identifier: BSD-3-Clause
# Auto-extension through the Python binding: a short TTL held for many TTLs, loss noticed in the
# background (lock.lost, lock.check(), on_lost), stop, the hold bound, and cleanup of dropped locks.
from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import threading
import time
import weakref

import pytest

from redlock import (EventType, ExtensionLimit, InvalidArgument, LockExpired, LockLost,
                     LockNotAcquired, LockStateError, _callbacks, _client, redlock)
from _waits import eventually as wait_until

TTL = 0.6  # short, so that a lock outliving a few of them must have been extended


def key_count(cluster, key):
    return sum(cluster.cmd(i, "EXISTS", key) for i in range(cluster.count))


def delete_everywhere(cluster, key):
    # The acquire returned once a quorum granted: wait for the SETs to the nodes it did not wait
    # for, so that the DELs come after them (the lock is auto-extended, so the key stays).
    assert wait_until(lambda: key_count(cluster, key) == cluster.count)
    for i in range(cluster.count):
        cluster.cmd(i, "DEL", key)


def released(cluster, lock, key):
    """The nodes that confirmed the release hold the key no more. The release was decided once
    they did: a node it did not wait for may still hold the key for a moment (until the release
    reaches it, or the short TTL runs out), so only the determined part is asserted here."""
    confirmed = [i for i, r in enumerate(lock.node_results) if r.ok]
    assert len(confirmed) >= cluster.count // 2 + 1, lock.node_results
    return [cluster.cmd(i, "EXISTS", key) for i in confirmed] == [0] * len(confirmed)


def test_short_ttl_is_kept_for_several_ttls(client, other, cluster5, name):
    with client.lock(name, ttl=TTL, auto_extend=True) as lock:
        time.sleep(4 * TTL)
        assert lock.held
        lock.check()
        assert not lock.lost.is_set()
        assert 0 < cluster5.cmd(0, "PTTL", name) <= TTL * 1000
        with pytest.raises(LockNotAcquired):
            other.acquire(name, ttl=1.0, blocking=False)
    # The exit released it (no LockLost) and stopped the extension.
    assert released(cluster5, lock, name)
    assert not lock.held
    time.sleep(TTL)
    assert key_count(cluster5, name) == 0


def test_redlock_helper(cluster5, name):
    with redlock(name, nodes=cluster5.urls, ttl=TTL, auto_extend=True, node_timeout=0.5) as lock:
        time.sleep(3 * TTL)
        lock.check()
    assert released(cluster5, lock, name)


def test_auto_extend_method_on_a_held_lock(client, name):
    lock = client.acquire(name, ttl=TTL)
    try:
        lock.auto_extend()
        time.sleep(3 * TTL)
        assert lock.held and lock.validity > 0.0
    finally:
        lock.release()


def test_loss_behind_the_locks_back(client, cluster5, name):
    calls = []

    def on_lost(lock, err):
        calls.append((lock, err, threading.current_thread()))

    lock = client.acquire(name, ttl=TTL, auto_extend=True, on_lost=on_lost)
    delete_everywhere(cluster5, name)
    assert lock.lost.wait(10.0), "the loss was never noticed"
    with pytest.raises(LockLost) as info:
        lock.check()
    assert info.value.resource == name and info.value.detail
    assert not lock.held
    assert wait_until(lambda: calls)
    got_lock, err, thread = calls[0]
    assert got_lock is lock and isinstance(err, LockLost)
    assert thread is not threading.current_thread()  # the client's background thread
    with pytest.raises(LockLost):
        lock.release()  # not ours anywhere
    # A new acquisition starts clean.
    lock.acquire()
    assert not lock.lost.is_set()
    lock.check()
    lock.release()
    assert len(calls) == 1


def test_loss_inside_with_is_raised_at_exit(client, cluster5, name):
    with pytest.raises(LockLost):
        with client.lock(name, ttl=TTL, auto_extend=True) as lock:
            delete_everywhere(cluster5, name)
            assert lock.lost.wait(10.0)
            with pytest.raises(LockLost):
                lock.check()


def test_taken_over_by_another_owner(client, other, cluster5, name):
    lock = client.acquire(name, ttl=TTL, auto_extend=True)
    delete_everywhere(cluster5, name)
    rival = other.acquire(name, ttl=30.0, blocking=False)
    try:
        assert lock.lost.wait(10.0)
        with pytest.raises(LockLost):
            lock.check()
        assert rival.held  # our release must not touch the new owner's keys
        with pytest.raises(LockLost):
            lock.release()
        assert wait_until(lambda: key_count(cluster5, name) == 5)  # the rival's, untouched
    finally:
        rival.release()


def test_on_lost_may_release(client, cluster5, name):
    outcome = []

    def on_lost(lock, err):
        try:
            lock.release()
        except LockLost as e:  # the keys are gone: "no longer ours"
            outcome.append(e)

    lock = client.acquire(name, ttl=TTL, auto_extend=True, on_lost=on_lost)
    delete_everywhere(cluster5, name)
    assert wait_until(lambda: outcome)
    assert not lock.held
    with pytest.raises(LockStateError):
        lock.release()  # already released by the callback


def test_exit_hook_stops_extension(client, cluster5, name):
    lock = client.acquire(name, ttl=TTL, auto_extend=True)
    _callbacks._stop_at_exit()
    assert wait_until(lambda: not lock.held)
    assert wait_until(lambda: key_count(cluster5, name) == 0)
    assert not lock.lost.is_set()


def test_stop_auto_extend(client, name):
    lock = client.acquire(name, ttl=TTL, auto_extend=True)
    assert lock.stop_auto_extend() is True
    assert lock.stop_auto_extend() is False
    assert wait_until(lambda: not lock.held)  # the validity ran out
    with pytest.raises(LockExpired):
        lock.check()
    assert not lock.lost.is_set()  # stopped, not lost


def test_hold_bound(client, name):
    lock = client.acquire(name, ttl=TTL, auto_extend=True, max_hold=2 * TTL)
    assert lock.lost.wait(10.0)
    with pytest.raises(ExtensionLimit):
        lock.check()
    assert not lock.held


def test_client_max_hold_bounds_it_too(make_client, cluster5, name):
    c = make_client(cluster5.urls, max_hold=2 * TTL)
    lock = c.acquire(name, ttl=TTL, auto_extend=True)
    assert lock.lost.wait(10.0)
    with pytest.raises(ExtensionLimit):
        lock.check()


def test_check_without_auto_extension(client, name):
    lock = client.lock(name, ttl=0.2)
    with pytest.raises(LockStateError):
        lock.check()  # never acquired
    lock.acquire()
    lock.check()
    time.sleep(0.4)
    with pytest.raises(LockExpired):
        lock.check()


def test_auto_extend_needs_a_held_lock(client, name):
    lock = client.lock(name, ttl=TTL)
    with pytest.raises(LockStateError):
        lock.auto_extend()


def test_bad_arguments(client, name):
    with pytest.raises(ValueError, match="auto_extend=True"):
        client.lock(name, max_hold=5.0)
    with pytest.raises(ValueError, match="auto_extend=True"):
        client.lock(name, on_lost=print)
    with pytest.raises(TypeError, match="on_lost"):
        client.lock(name, auto_extend=True, on_lost=42)
    with pytest.raises(TypeError, match="auto_extend"):
        client.lock(name, auto_extend=1)
    with pytest.raises(InvalidArgument, match="max_hold"):
        client.lock(name, auto_extend=True, max_hold=0)


def test_callback_exceptions_are_logged_not_raised(client, cluster5, name, caplog):
    def on_lost(lock, err):
        raise RuntimeError("boom from on_lost")

    caplog.set_level(logging.ERROR, logger="redlock")
    lock = client.acquire(name, ttl=TTL, auto_extend=True, on_lost=on_lost)
    delete_everywhere(cluster5, name)
    assert lock.lost.wait(10.0)
    assert wait_until(lambda: any("boom from on_lost" in r.exc_text or ""
                                  for r in caplog.records if r.exc_text))
    # The background thread survived: another lock is still kept alive.
    with client.lock(name + ":2", ttl=TTL, auto_extend=True) as again:
        time.sleep(3 * TTL)
        assert again.held


def test_a_dropped_lock_stops_being_extended(client, cluster5, name):
    lock = client.acquire(name, ttl=TTL, auto_extend=True)
    assert wait_until(lambda: key_count(cluster5, name) == 5)  # kept alive
    del lock
    gc.collect()
    # Its finalizer freed it, which stopped the extension: the keys expire.
    assert wait_until(lambda: key_count(cluster5, name) == 0)


def test_a_lock_collected_on_the_c_thread_is_freed_off_it(make_client, cluster5, name, monkeypatch):
    # The collector can run inside a hook on the C library's auto-extend
    # thread and find there the very lock being extended; C must not be asked
    # to free it from that thread (it still uses it), so the binding defers it.
    freed_on = []
    free = _client._free_lock

    def spy(ptr):
        freed_on.append(threading.current_thread())
        free(ptr)

    def hook(event):
        if event.automatic and event.type == EventType.EXTENDED:
            gc.collect()

    c = make_client(cluster5.urls, on_event=hook)
    lock = c.acquire(name, ttl=TTL, auto_extend=True)
    lock.cycle = lock  # only the collector can free it
    ref = weakref.ref(lock)
    monkeypatch.setattr(_client, "_free_lock", spy)
    gc.disable()  # so that the hook's collection is the one that finds it
    try:
        del lock
        assert wait_until(lambda: ref() is None)
    finally:
        gc.enable()
    assert wait_until(lambda: freed_on)  # the finalizer ran...
    assert not any(isinstance(t, threading._DummyThread) for t in freed_on), freed_on  # ...off C's thread
    assert wait_until(lambda: key_count(cluster5, name) == 0)  # and the extension stopped


def test_lock_kept_by_its_callback_is_freed_after_release(client, name):
    lock = client.acquire(name, ttl=TTL, auto_extend=True, on_lost=lambda lk, err: None)
    ref = weakref.ref(lock)
    lock.release()
    del lock
    gc.collect()
    assert ref() is None


def test_async_with(client, name):
    async def main():
        async with client.alock(name, ttl=TTL, auto_extend=True) as lock:
            await asyncio.sleep(3 * TTL)
            assert lock.held
            lock.check()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_exit_with_a_lock_still_extended_is_clean(cluster5, name):
    # The interpreter must stop the C thread's calls into Python before it
    # finalizes; a crash here would show as a signal exit code.
    code = (
        "import sys, time, redlock\n"
        "c = redlock.Redlock(sys.argv[1].split(','), node_timeout=0.5,\n"
        "                    on_event=lambda ev: None)\n"
        "lock = c.acquire(sys.argv[2], ttl=0.3, auto_extend=True,\n"
        "                 on_lost=lambda lk, err: None)\n"
        "time.sleep(0.5)\n"
        "assert lock.held\n"
        "print('ok')\n"
    )
    for i in range(3):
        proc = subprocess.run([sys.executable, "-c", code, ",".join(cluster5.urls), f"{name}:{i}"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "ok"
