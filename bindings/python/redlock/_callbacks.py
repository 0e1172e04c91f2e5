# SPDX-License-Identifier: BSD-3-Clause
# Calls from C into Python: the metrics hook (Redlock(on_event=...)) and auto-extension's lost-lock
# notice, with the records they deliver (Event, NodeResult) and their enums.
from __future__ import annotations

import _thread
import atexit
import enum
import itertools
import logging
import os
import queue
import threading
import weakref
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple, Union

from ._errors import RedlockError, error
from ._redlock import ffi, lib

__all__ = ["EventType", "NodeOutcome", "ListenerState", "Event", "NodeResult"]

log = logging.getLogger("redlock")

# Why integer ids and not ffi.new_handle() as userdata: C may still call back
# while Python tears objects down (a collected Lock's finalizer waits in C for
# an extension under way, which reports through the client's hook), and
# ffi.from_handle() on a handle already freed is a crash. An id that is not in
# the table, or no longer, is simply ignored, and ids are never reused, so a
# late call cannot reach another object either.
_ids = itertools.count(1)  # next() is atomic
_sinks: Dict[int, "EventSink"] = {}
_armings: Dict[int, Tuple["Watch", Optional[Callable[..., Any]]]] = {}


class EventType(enum.IntEnum):
    """What an :class:`Event` reports (``redlock_event_type``)."""
    ACQUIRED = lib.REDLOCK_EVENT_ACQUIRED
    ACQUIRE_FAILED = lib.REDLOCK_EVENT_ACQUIRE_FAILED
    EXTENDED = lib.REDLOCK_EVENT_EXTENDED
    EXTEND_FAILED = lib.REDLOCK_EVENT_EXTEND_FAILED
    LOST = lib.REDLOCK_EVENT_LOST
    RELEASED = lib.REDLOCK_EVENT_RELEASED
    RELEASE_FAILED = lib.REDLOCK_EVENT_RELEASE_FAILED
    NODE_ERROR = lib.REDLOCK_EVENT_NODE_ERROR
    WOKEN = lib.REDLOCK_EVENT_WOKEN          # a waiting acquire was woken by a release
    LISTENER = lib.REDLOCK_EVENT_LISTENER    # a node's wake-up listener changed state
    ACQUIRE_DONE = lib.REDLOCK_EVENT_ACQUIRE_DONE  # an acquire call ended (code 0: acquired)
    WATCH_BEHIND = lib.REDLOCK_EVENT_WATCH_BEHIND  # auto-extension starts late: more locks than the nodes keep up with
    AT_RISK = lib.REDLOCK_EVENT_AT_RISK  # not extended, the validity ends within the margin: not lost yet


class NodeOutcome(enum.IntEnum):
    """What one node did in a round (``redlock_node_outcome``)."""
    NONE = lib.REDLOCK_NODE_NONE              # not contacted: no round yet, or skipped
    OK = lib.REDLOCK_NODE_OK                  # granted / confirmed
    REFUSED = lib.REDLOCK_NODE_REFUSED        # held by another owner, or no longer ours
    ERROR = lib.REDLOCK_NODE_ERROR            # error reply, I/O, auth or TLS failure
    TIMEOUT = lib.REDLOCK_NODE_TIMEOUT        # no reply before the node's deadline
    DOWN = lib.REDLOCK_NODE_DOWN              # skipped: in reconnect backoff
    NOT_WAITED = lib.REDLOCK_NODE_NOT_WAITED  # sent, but the round was decided without its reply
    QUARANTINED = lib.REDLOCK_NODE_QUARANTINED  # out of the vote: it may have lost its keys, or its clock jumped


class ListenerState(enum.IntEnum):
    """The state of a client's wake-up listener on one node (``redlock_listener_state``):
    the connection on which it hears releases (``Redlock.listener_states()``)."""
    OFF = lib.REDLOCK_LISTENER_OFF                # not started: no waiting acquire yet, or wake=False
    CONNECTING = lib.REDLOCK_LISTENER_CONNECTING  # connecting, authenticating or subscribing
    READY = lib.REDLOCK_LISTENER_READY            # subscribed: a release there wakes this client's waiters
    DOWN = lib.REDLOCK_LISTENER_DOWN              # failed, reconnecting with backoff; waiters poll meanwhile
    REFUSED = lib.REDLOCK_LISTENER_REFUSED        # SUBSCRIBE refused (an ACL without &redlock:wake:*); waiters poll


# Outcomes where the node gave no answer whose time could be measured.
_NO_RTT = (NodeOutcome.NONE, NodeOutcome.DOWN, NodeOutcome.NOT_WAITED)


def _enum(cls: Any, value: int) -> Any:
    # A newer C library may append values: pass them on as plain ints.
    try:
        return cls(value)
    except ValueError:
        return value


def _text(p: Any) -> str:
    return "" if p == ffi.NULL else ffi.string(p).decode("utf-8", "replace")


def _error_name(code: int) -> str:
    return str(ffi.string(lib.redlock_error_name(code)).decode("utf-8", "replace"))


class NodeResult(NamedTuple):
    """What one node did in a lock's last round (``Lock.node_results``)."""
    url: str                 # the node's URL, password masked
    outcome: NodeOutcome
    code: int                # the REDLOCK_E* code of an error or timeout, else 0
    rtt: Optional[float]     # seconds from the round's start to the answer or failure; None without one
    message: str             # the node's detail, "" when none

    @property
    def ok(self) -> bool:
        return self.outcome == NodeOutcome.OK

    @property
    def error_name(self) -> str:
        """The code's name, e.g. ``"REDLOCK_EIO"``, or ``"REDLOCK_OK"``."""
        return _error_name(self.code)


class Event(NamedTuple):
    """One event of the metrics hook (``Redlock(on_event=...)``), copied from
    C's ``redlock_event`` during the call. Durations are in seconds."""
    type: Union[EventType, int]
    code: int                  # 0, or the REDLOCK_E* code of the failure or loss
    resource: str              # the lock name (without key_prefix)
    message: str               # detail, "" when none
    attempt: int               # ACQUIRED / ACQUIRE_FAILED: 1 for a call's first attempt, then 2...
    automatic: bool            # True when the auto-extend thread did it
    nodes_ok: int              # nodes that said OK in the round
    quorum: int                # nodes needed
    node_count: int
    elapsed: float             # the round's duration (ACQUIRED: the whole attempt)
    validity: float            # ACQUIRED / EXTENDED: the validity then left, else 0.0
    token: Optional[int]       # ACQUIRED with fencing=True: the fencing token, else None
    node: Optional[int]        # NODE_ERROR, WOKEN, LISTENER: the node's index in the client's URL list, else None
    node_url: Optional[str]    # NODE_ERROR, WOKEN, LISTENER: its URL (password masked)
    node_outcome: Optional[Union[NodeOutcome, int]]  # NODE_ERROR: what it did
    node_rtt: Optional[float]  # NODE_ERROR: time from the round's start to the failure
    listener_state: Optional[Union[ListenerState, int]] = None  # LISTENER: the node's new listener state
    held: Optional[float] = None  # RELEASED, RELEASE_FAILED, LOST: how long the lock was held (first report only)
    node_rtts: Optional[Tuple[Tuple[str, Optional[float]], ...]] = None  # a round's events: (node URL, round trip or None) per node

    @property
    def error_name(self) -> str:
        """The code's name, e.g. ``"REDLOCK_ENOQUORUM"``, or ``"REDLOCK_OK"``."""
        return _error_name(self.code)


# A KeyboardInterrupt that hit a callback on the main thread, to be raised
# when the C call that made the callback has returned (reraise_interrupt()).
_interrupted: List[BaseException] = []


def _call_user(fn: Callable[..., Any], args: Tuple[Any, ...], what: str) -> None:
    """Runs a user callback; whatever it raises stays out of C."""
    try:
        fn(*args)
    except KeyboardInterrupt as exc:
        if threading.current_thread() is threading.main_thread():
            # Ctrl-C landed in the hook, called from inside a C call on this
            # thread. Its signal also woke the wait (_sigwake), so that call
            # returns soon: raise it then, instead of losing it here.
            _interrupted.append(exc)
        else:
            log.exception("redlock: the %s callback raised", what)
    except BaseException:
        log.exception("redlock: the %s callback raised", what)


def reraise_interrupt() -> None:
    """Raises a KeyboardInterrupt that a callback on this thread swallowed;
    called by the main thread right after each C call that emits events."""
    if _interrupted and threading.current_thread() is threading.main_thread():
        exc = _interrupted.pop()
        _interrupted.clear()
        raise exc


# -- the metrics hook ----------------------------------------------------------------------

class EventSink:
    """The target of one client's on_event. Registered while C may call it:
    C unregisters it (_redlock_py_on_event_free) once the client and every
    lock made from it are freed."""

    def __init__(self, callback: Callable[[Event], Any]) -> None:
        self.callback = callback
        self.node_urls: Tuple[str, ...] = ()
        self.key = next(_ids)
        self.userdata = ffi.cast("void *", self.key)
        _sinks[self.key] = self

    def discard(self) -> None:
        """Unregisters a sink whose client C did not make (C frees only its own)."""
        _sinks.pop(self.key, None)


# The events that name a node.
_NODE_EVENTS = (EventType.NODE_ERROR, EventType.WOKEN, EventType.LISTENER)


@ffi.def_extern()
def _redlock_py_on_event(ev: Any, userdata: Any) -> None:
    try:
        sink = _sinks.get(int(ffi.cast("uintptr_t", userdata)))
        if sink is None:
            return
        t = _enum(EventType, ev.type)
        node: Optional[int] = None
        node_url: Optional[str] = None
        outcome: Any = None
        node_rtt: Optional[float] = None
        listener: Any = None
        if t in _NODE_EVENTS:
            node = int(ev.node)
            node_url = sink.node_urls[node] if node < len(sink.node_urls) else ""
        if t == EventType.NODE_ERROR:
            outcome = _enum(NodeOutcome, ev.node_outcome)
            node_rtt = ev.node_rtt_us / 1e6
        elif t == EventType.LISTENER:
            listener = _enum(ListenerState, ev.listener_state)
        message = _text(ev.message)
        held = ev.held_us / 1e6 if ev.held_us > 0 else None
        rtts = None
        if ev.node_rtts_us != ffi.NULL:
            urls = sink.node_urls
            rtts = tuple((urls[i] if i < len(urls) else "", None if ev.node_rtts_us[i] < 0 else ev.node_rtts_us[i] / 1e6)
                         for i in range(ev.n_nodes))
        event = Event(t, ev.code, _text(ev.resource), message, ev.attempt,
                      bool(ev.automatic), ev.nodes_ok, ev.quorum, ev.n_nodes,
                      ev.elapsed_us / 1e6, max(ev.validity_ms, 0) / 1000.0,
                      ev.fencing_token or None, node, node_url, outcome, node_rtt, listener, held, rtts)
    except BaseException:  # never into C
        log.exception("redlock: could not read an event from the C library")
        return
    _call_user(sink.callback, (event,), "on_event")


@ffi.def_extern()
def _redlock_py_on_event_free(userdata: Any) -> None:
    # Called once by C, on whichever thread freed the client's last handle
    # (a finalizer's, maybe at interpreter shutdown): no event can follow.
    try:
        _sinks.pop(int(ffi.cast("uintptr_t", userdata)), None)
    except BaseException:  # never into C; only a torn-down interpreter gets here
        pass


# -- auto-extension's lost-lock notice ------------------------------------------------------

_events_made = threading.Lock()   # a Watch's Events are made once, whichever thread asks first


class Watch:
    """The loss that auto-extension of one Lock reported, readable from any
    thread. Holds the Lock weakly: an armed auto-extension must not keep a
    dropped Lock alive (its finalizer frees it, which stops the extension)."""

    __slots__ = ("_lost", "_at_risk", "loss", "resource", "lock_ref")

    def __init__(self, lock: Any, resource: str) -> None:
        # The two Events are made on first use (most Locks never arm
        # auto-extension, nor read ``lost``): each costs a Condition.
        self._lost: Optional[threading.Event] = None
        self._at_risk: Optional[threading.Event] = None
        self.loss: Optional[Tuple[int, str]] = None  # (code, message) of the last loss
        self.resource = resource
        self.lock_ref = weakref.ref(lock)

    @property
    def lost(self) -> threading.Event:
        """Set once auto-extension reported the lock lost."""
        return self._lost or self._make("_lost")

    @property
    def at_risk(self) -> threading.Event:
        """Set once the at-risk notice came, before any loss."""
        return self._at_risk or self._make("_at_risk")

    def _make(self, slot: str) -> threading.Event:
        """The Event in slot, made by whichever thread asks first."""
        with _events_made:
            ev = getattr(self, slot)
            if ev is None:
                ev = threading.Event()
                setattr(self, slot, ev)
            return ev  # type: ignore[no-any-return]

    def arm(self, on_lost: Optional[Callable[..., Any]]) -> int:
        """Registers an arming; its id is the userdata passed to C, which
        unregisters it (_redlock_py_on_lost_free) once no notice can follow."""
        key = next(_ids)
        _armings[key] = (self, on_lost)
        return key

    @staticmethod
    def forget(key: int) -> None:
        """Unregisters an arming that C refused (C keeps nothing then)."""
        _armings.pop(key, None)

    def reset(self) -> None:
        """A new acquisition: forget the last one's loss. (The acquire in C
        already ended the last acquisition's arming.)"""
        self.loss = None
        if self._lost is not None:
            self._lost.clear()
        if self._at_risk is not None:
            self._at_risk.clear()

    def error(self) -> Optional[RedlockError]:
        loss = self.loss
        return None if loss is None else error(loss[0], loss[1], self.resource)


@ffi.def_extern()
def _redlock_py_on_lost(c_lock: Any, code: int, message: Any, userdata: Any) -> None:
    try:
        entry = _armings.get(int(ffi.cast("uintptr_t", userdata)))
        if entry is None:
            return
        watch, on_lost = entry
        if code == lib.REDLOCK_EATRISK:
            # Not lost yet: told a margin before the validity ends, so that the
            # holder stops in time. The loss, if it comes, is told after it.
            watch.at_risk.set()
            exc = error(code, _text(message), watch.resource)
        else:
            watch.loss = (code, _text(message))
            watch.lost.set()
            exc = watch.error()
        lock = watch.lock_ref() if on_lost is not None else None
        if on_lost is None or lock is None:  # no callback, or the Lock is being collected
            return
    except BaseException:
        log.exception("redlock: could not deliver a lost-lock notice")
        return
    _call_user(on_lost, (lock, exc), "on_lost")


@ffi.def_extern()
def _redlock_py_on_lost_free(userdata: Any) -> None:
    # Called once by C when no notice for this arming can follow: it was
    # replaced, auto-extension stopped, or the lock was released or freed.
    try:
        _armings.pop(int(ffi.cast("uintptr_t", userdata)), None)
    except BaseException:  # never into C; only a torn-down interpreter gets here
        pass


# -- asynchronous acquisition's result ------------------------------------------------------

class PendingAcquire:
    """One redlock_lock_acquire_async under way: the loop and future its
    result goes to, and an Event set once C has called back (any thread may
    wait for it: see cancel_pending_at_exit)."""

    __slots__ = ("loop", "future", "called")

    def __init__(self, loop: Any, future: Any) -> None:
        self.loop = loop
        self.future = future
        self.called = threading.Event()


_acquires: Dict[int, PendingAcquire] = {}
_acquiring: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()


def begin_acquire(pending: PendingAcquire, waiter: Any) -> int:
    """Registers an acquire (a campaign, an observe) about to start; its id is the userdata
    passed to C. waiter (a Lock, an Election, an Observer) is held weakly; its _cancel_wait()
    ends the wait at exit."""
    key = next(_ids)
    _acquires[key] = pending
    _acquiring[key] = waiter
    return key


def forget_acquire(key: int) -> None:
    """Unregisters an acquire that C refused to start (no callback follows)."""
    _acquires.pop(key, None)
    _acquiring.pop(key, None)


def _settle(future: Any, rc: int) -> None:
    if not future.done():
        future.set_result(rc)


def _deliver(userdata: Any, rc: int) -> None:
    # On the client's acquire thread: hand the result to the waiting loop.
    try:
        key = int(ffi.cast("uintptr_t", userdata))
        pending = _acquires.pop(key, None)
        _acquiring.pop(key, None)
        if pending is None:
            return
        pending.called.set()
        try:
            pending.loop.call_soon_threadsafe(_settle, pending.future, rc)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass
    except BaseException:  # never into C
        log.exception("redlock: could not deliver an acquire's result")


@ffi.def_extern()
def _redlock_py_on_acquired(c_lock: Any, rc: int, userdata: Any) -> None:
    _deliver(userdata, rc)


@ffi.def_extern()
def _redlock_py_on_election_done(c_election: Any, rc: int, userdata: Any) -> None:
    # A campaign's or an observe's end (redlock_campaigned_fn, redlock_observed_fn).
    _deliver(userdata, rc)


def _cancel_pending_at_exit() -> None:
    # After interpreter finalization C could no longer call back into Python:
    # end every asynchronous acquire still waiting, and wait for its callback.
    pending = [(key, waiter) for key, waiter in list(_acquiring.items())]
    for _, waiter in pending:
        waiter._cancel_wait()
    for key, _ in pending:
        entry = _acquires.get(key)
        if entry is not None:
            entry.called.wait(5.0)


atexit.register(_cancel_pending_at_exit)


# -- finalizers that fire on the C library's thread ---------------------------------------

# Python code runs on the client's auto-extend thread during callbacks, and
# so may the garbage collector or a last reference dropped there: a Lock's
# finalizer could free the very lock whose round or loss is being reported,
# which C forbids (the thread still uses it). Such finalizers run on a thread
# of ours instead.
_deferred: "queue.SimpleQueue[Callable[[], None]]" = queue.SimpleQueue()  # put() is reentrant
_worker_pid = -1
_Dummy = getattr(threading, "_DummyThread", None)


def _on_foreign_thread() -> bool:
    # Threads started by C appear in threading only as dummies, made on
    # first use; the lookup allocates nothing and takes no lock.
    active = getattr(threading, "_active", None)
    if active is None or _Dummy is None:
        return False
    t = active.get(_thread.get_ident())
    return t is None or isinstance(t, _Dummy)


def _run_deferred() -> None:
    while True:
        fn = _deferred.get()
        try:
            fn()
        except BaseException:
            log.exception("redlock: a deferred finalizer failed")


def finalize(fn: Callable[[], None]) -> None:
    """Runs a finalizer now, or soon on the redlock-finalizer thread when this
    is a thread of the C library."""
    global _worker_pid
    if not _on_foreign_thread():
        fn()
        return
    _deferred.put(fn)
    if _worker_pid != os.getpid():  # none yet in this process (or a forked child)
        _worker_pid = os.getpid()
        try:
            threading.Thread(target=_run_deferred, name="redlock-finalizer", daemon=True).start()
        except RuntimeError:  # the interpreter is shutting down: so is the process
            pass


def _stop_at_exit() -> None:
    # After interpreter finalization, C's auto-extend thread could no longer
    # call into Python safely: stop every extension still running. The locks
    # are left to expire after their TTL, as a collected Lock's are.
    for watch, _ in list(_armings.values()):
        lock = watch.lock_ref()
        if lock is not None:
            lock._stop_auto_extend_at_exit()


atexit.register(_stop_at_exit)
