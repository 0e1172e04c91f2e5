# SPDX-License-Identifier: BSD-3-Clause
# Threads and signals: C calls run without the GIL, Ctrl-C ends a long wait at once, a harmless
# signal does not end it, and Lock.cancel() from another thread does.
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from redlock import Cancelled, LockTimeout


@pytest.fixture
def held(other, name):
    """`name` held by another client for the whole test."""
    lock = other.acquire(name, ttl=60.0)
    yield lock
    lock.release()


def test_gil_is_released_during_a_wait(client, held, name):
    started = threading.Event()
    outcome = []

    def waiter():
        started.set()
        try:
            client.acquire(name, ttl=5.0, wait=1.0)  # one C call of about a second
        except LockTimeout as err:
            outcome.append(err)

    t = threading.Thread(target=waiter)
    t.start()
    started.wait()
    time.sleep(0.05)  # let the waiter get into the C call
    count = 0
    while t.is_alive():
        count += 1
    t.join()
    assert outcome, "the waiter should have timed out"
    # With the GIL held by the waiter for the whole second, this loop could
    # not have run at all; without it, it runs millions of times.
    assert count > 10_000, count


def test_waits_in_two_threads_overlap(client, held, name):
    def wait_once():
        with pytest.raises(LockTimeout):
            client.acquire(name, ttl=5.0, wait=1.0)

    t0 = time.monotonic()
    ts = [threading.Thread(target=wait_once) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.monotonic() - t0
    assert elapsed < 2.0, f"three 1 s waits took {elapsed:.2f} s: they ran one after another"


@pytest.fixture
def default_sigint():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_interrupts_a_long_wait(client, held, name, default_sigint):
    lock = client.lock(name, ttl=5.0, wait=30.0)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with lock:
                pytest.fail("the lock is held elsewhere: the block must not run")
    finally:
        timer.cancel()
    elapsed = time.monotonic() - t0
    assert elapsed < 1.3, f"KeyboardInterrupt took {elapsed:.2f} s"
    assert not lock.held
    assert held.held


def _under_two_harmless_signals(wait):
    """Runs wait() (a wait of 1 s) while SIGUSR1, whose handler raises nothing, comes at 0.2 s and
    0.4 s; checks both were handled and the wait went on after each, for what was left."""
    calls = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: calls.append(signum))
    timers = [threading.Timer(d, os.kill, (os.getpid(), signal.SIGUSR1)) for d in (0.2, 0.4)]
    try:
        t0 = time.monotonic()
        for t in timers:
            t.start()
        wait()
        elapsed = time.monotonic() - t0
    finally:
        for t in timers:
            t.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert calls == [signal.SIGUSR1, signal.SIGUSR1]
    assert 0.9 < elapsed < 3.0, elapsed


def test_harmless_signal_does_not_end_the_wait(client, held, name):
    def wait():
        with pytest.raises(LockTimeout):
            client.acquire(name, ttl=5.0, wait=1.0)

    _under_two_harmless_signals(wait)


def test_cancel_from_another_thread(client, held, name):
    lock = client.lock(name, ttl=5.0, wait=30.0)
    outcome = []

    def waiter():
        try:
            lock.acquire()
        except BaseException as err:
            outcome.append(err)

    t = threading.Thread(target=waiter)
    t0 = time.monotonic()
    t.start()
    time.sleep(0.2)
    while t.is_alive():  # a cancel sent before the C call starts is dropped: repeat
        lock.cancel()
        t.join(0.02)
    elapsed = time.monotonic() - t0
    assert len(outcome) == 1 and isinstance(outcome[0], Cancelled), outcome
    assert "cancel" in str(outcome[0])
    assert elapsed < 1.5
    assert not lock.held


def test_cancel_with_no_wait_running_is_dropped(client, name):
    lock = client.lock(name, ttl=5.0)
    lock.cancel()
    with lock:  # the earlier cancel does not touch this acquire
        assert lock.held


def test_ctrl_c_interrupts_an_observer_wait(client, name, default_sigint):
    # One C wait without an end (no slices): a signal on the main thread cancels it.
    election = client.election(name)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with election.observe(current=False) as changes:
                for _ in changes:
                    pytest.fail("nobody campaigns: nothing to observe")
    finally:
        timer.cancel()
    elapsed = time.monotonic() - t0
    assert elapsed < 1.3, f"KeyboardInterrupt took {elapsed:.2f} s"


def test_harmless_signal_does_not_end_an_observer_wait(client, name):
    def wait():
        with client.election(name).observe(current=False, timeout=1.0) as changes:
            assert list(changes) == []
            assert changes.timed_out

    _under_two_harmless_signals(wait)
