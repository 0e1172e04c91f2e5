# SPDX-License-Identifier: BSD-3-Clause
# The metrics hook: Redlock(on_event=...) receives an immutable Event for acquisitions, failed attempts,
# extensions (also automatic ones), losses, releases and node errors; its exceptions stay in Python.
from __future__ import annotations

import gc
import logging
import threading
import time
import weakref

import pytest

import redlock
from redlock import Event, EventType, LockLost, LockNotAcquired, NodeOutcome

lib = redlock._lib


class Recorder:
    """Collects events from any thread."""

    def __init__(self):
        self.events = []
        self.threads = []
        self._mutex = threading.Lock()

    def __call__(self, event):
        with self._mutex:
            self.events.append(event)
            self.threads.append(threading.current_thread())

    def lock_events(self):
        """All but NODE_ERROR, which a slow node on a loaded machine may add, and ACQUIRE_DONE,
        which test_acquire_done_held_and_rtts checks."""
        with self._mutex:
            return [e for e in self.events if e.type not in (EventType.NODE_ERROR, EventType.ACQUIRE_DONE)]

    def of(self, type_):
        with self._mutex:
            return [e for e in self.events if e.type == type_]

    def wait_for(self, type_, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not self.of(type_):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {type_!r} event; got {[e.type for e in self.events]}")
            time.sleep(0.02)
        return self.of(type_)


def test_acquire_extend_release(make_client, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec)
    with c.lock(name, ttl=5.0) as lock:
        lock.extend(8.0)
    types = [e.type for e in rec.lock_events()]
    assert types == [EventType.ACQUIRED, EventType.EXTENDED, EventType.RELEASED], types
    acquired, extended, released = rec.lock_events()
    assert isinstance(acquired, Event)
    assert acquired.resource == name and acquired.code == 0 and acquired.message == ""
    assert acquired.attempt == 1 and not acquired.automatic
    # An acquisition stops reading replies once a quorum granted it.
    assert 3 <= acquired.nodes_ok <= 5 and acquired.quorum == 3 and acquired.node_count == 5
    assert 0.0 <= acquired.elapsed < 60.0
    assert 4.0 < acquired.validity <= 5.0
    assert acquired.token is None  # no fencing
    assert acquired.node is None and acquired.node_url is None and acquired.node_outcome is None
    # Extensions and releases, too, are decided once a quorum answered.
    assert 7.0 < extended.validity <= 8.0 and not extended.automatic and 3 <= extended.nodes_ok <= 5
    assert released.code == 0 and 3 <= released.nodes_ok <= 5
    # Called synchronously on the thread that ran the round.
    assert all(t is threading.current_thread() for t in rec.threads)


def test_event_token_with_fencing(make_client, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec, fencing=True)
    with c.lock(name, ttl=5.0) as lock:
        token = lock.token
    (acquired,) = rec.of(EventType.ACQUIRED)
    assert token is not None and acquired.token == token


def test_failed_attempts(make_client, other, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec, retry_count=2)
    holder = other.acquire(name, ttl=10.0)
    try:
        with pytest.raises(LockNotAcquired):
            c.acquire(name, ttl=5.0, wait=None)  # wait=None: the client's retry_count
    finally:
        holder.release()
    failed = rec.of(EventType.ACQUIRE_FAILED)
    assert [e.attempt for e in failed] == [1, 2, 3]
    for e in failed:
        assert e.code == lib.REDLOCK_ENOTACQUIRED and e.error_name == "REDLOCK_ENOTACQUIRED"
        assert e.nodes_ok == 0 and e.message
    assert not rec.of(EventType.ACQUIRED)


def test_automatic_extensions_and_loss(make_client, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec)
    lock = c.acquire(name, ttl=0.6, auto_extend=True)
    auto = rec.wait_for(EventType.EXTENDED)
    assert auto[0].automatic and auto[0].resource == name
    with rec._mutex:
        threads = {t for e, t in zip(rec.events, rec.threads) if e.automatic}
    assert threads and threading.current_thread() not in threads  # the background thread
    # Rounds return at quorum: the DELs go once every node has the key, not before a late SET.
    deadline = time.monotonic() + 10.0
    while sum(cluster5.cmd(i, "EXISTS", name) for i in range(cluster5.count)) < cluster5.count:
        assert time.monotonic() < deadline, "the key never reached every node"
        time.sleep(0.01)
    for i in range(cluster5.count):
        cluster5.cmd(i, "DEL", name)
    (lost,) = rec.wait_for(EventType.LOST)
    assert lost.code == lib.REDLOCK_ELOST and lost.automatic and lost.message
    assert lock.lost.wait(10.0)
    with pytest.raises(LockLost):
        lock.release()


def test_loss_found_by_release(make_client, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec)
    lock = c.acquire(name, ttl=0.2)
    time.sleep(0.4)
    with pytest.raises(LockLost):
        lock.release()
    (lost,) = rec.of(EventType.LOST)
    assert lost.code == lib.REDLOCK_ELOST and not lost.automatic
    assert not rec.of(EventType.RELEASED)


def test_node_errors(fresh5, make_client, name):
    rec = Recorder()
    fresh5.kill(3)
    c = make_client(fresh5.urls, on_event=rec)
    with c.lock(name, ttl=5.0):
        pass
    errors = rec.of(EventType.NODE_ERROR)
    assert errors and {e.node for e in errors} == {3}
    for e in errors:
        assert e.node_url == fresh5.url(3)
        assert e.node_outcome in (NodeOutcome.ERROR, NodeOutcome.DOWN)
        assert e.code != 0 and e.error_name != "REDLOCK_OK"
        assert e.node_rtt is not None and e.node_rtt >= 0.0
        assert e.resource == name
    (acquired,) = rec.of(EventType.ACQUIRED)
    assert 3 <= acquired.nodes_ok <= 4
    (released,) = rec.of(EventType.RELEASED)
    assert 3 <= released.nodes_ok <= 4  # decided at quorum, like every round


def test_events_are_immutable_and_name_the_lock_without_prefix(make_client, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec, key_prefix="app:")
    c.acquire(name, ttl=5.0).release()
    assert [e.resource for e in rec.events] == [name] * len(rec.events)
    assert len(rec.lock_events()) == 2
    with pytest.raises(AttributeError):
        rec.events[0].code = 1


def test_exceptions_in_the_hook_are_logged(make_client, cluster5, name, caplog):
    def hook(event):
        raise RuntimeError("boom from on_event")

    caplog.set_level(logging.ERROR, logger="redlock")
    c = make_client(cluster5.urls, on_event=hook)
    with c.lock(name, ttl=5.0) as lock:
        assert lock.held
    # One per event: ACQUIRED and RELEASED at least.
    assert sum("boom from on_event" in (r.exc_text or "") for r in caplog.records) >= 2


def test_keyboard_interrupt_in_the_hook_is_not_swallowed(make_client, cluster5, name):
    def hook(event):
        if event.type == EventType.ACQUIRED:
            raise KeyboardInterrupt

    c = make_client(cluster5.urls, on_event=hook)
    with pytest.raises(KeyboardInterrupt):
        c.acquire(name, ttl=5.0)
        time.sleep(5.0)  # reached only if the interrupt was lost


def test_events_outlive_the_client_object_while_locks_live(make_client, cluster5, name):
    rec = Recorder()
    c = make_client(cluster5.urls, on_event=rec)
    key = c._events.key
    lock = c.acquire(name, ttl=5.0)
    c.close()
    lock.release()
    assert [e.type for e in rec.lock_events()] == [EventType.ACQUIRED, EventType.RELEASED]
    # Once the last lock is gone, the hook is dropped (no leak of the callable).
    assert key in redlock._callbacks._sinks
    del lock
    gc.collect()
    assert key not in redlock._callbacks._sinks


def test_hook_goes_with_the_client_and_not_with_a_client_that_failed(cluster5):
    sinks = redlock._callbacks._sinks
    before = set(sinks)
    with pytest.raises(redlock.InvalidArgument):  # C refuses: it never takes the hook
        redlock.Redlock(["http://127.0.0.1:6379"], on_event=Recorder())
    assert not set(sinks) - before, "a failed client left its hook registered"

    rec = Recorder()
    callback = weakref.ref(rec)
    c = redlock.Redlock(cluster5.urls, on_event=rec)
    key = c._events.key
    del rec
    c.acquire(f"hook-drop-{key}", ttl=5.0).release()
    gc.collect()
    assert key in sinks and callback() is not None, "let go while the client lives"
    del c  # never closed: its finalizer frees it
    gc.collect()
    assert key not in sinks
    assert callback() is None, "the on_event callable is still referenced"


def test_on_event_must_be_callable(cluster5):
    with pytest.raises(TypeError, match="on_event"):
        redlock.Redlock(cluster5.urls, on_event=42)


def test_acquire_done_held_and_rtts(cluster5, name):
    """The events metrics need (docs/observability.md): one ACQUIRE_DONE per acquire call with
    its attempts and outcome, the held time on the end of a hold, each node's round trip."""
    rec = Recorder()
    with redlock.Redlock(cluster5.urls, retry_count=2, retry_delay=0.001, node_timeout=0.5,
                         on_event=rec) as c, redlock.Redlock(cluster5.urls) as other:
        lock = c.lock(name, ttl=10)
        assert lock.acquire()
        time.sleep(0.05)
        lock.release()
        holder = other.acquire(name, ttl=10)
        assert not c.lock(name, ttl=10).acquire(blocking=False)
        assert not c.lock(name, ttl=10).acquire(timeout=0.05)
        holder.release()
    done = rec.of(EventType.ACQUIRE_DONE)
    assert [(e.code, e.error_name) for e in done][0] == (0, "REDLOCK_OK")
    assert done[0].attempt == 1 and done[0].resource == name
    assert done[1].error_name == "REDLOCK_ENOTACQUIRED" and done[1].attempt == 1
    assert done[2].error_name == "REDLOCK_ETIMEDOUT" and done[2].attempt >= 1
    assert done[2].elapsed >= 0.05  # the whole call, its wait included
    released = rec.of(EventType.RELEASED)
    assert len(released) == 1 and released[0].held >= 0.05
    acquired = rec.of(EventType.ACQUIRED)[0]
    assert acquired.node_rtts is not None and len(acquired.node_rtts) == 5
    assert [u for u, _ in acquired.node_rtts] == list(c.nodes)
    answered = [r for _, r in acquired.node_rtts if r is not None]  # a round decided at quorum waits for no more
    assert len(answered) >= 3 and all(0 <= r < 5 for r in answered), acquired.node_rtts
    assert all(e.node_rtts is None for e in done)
