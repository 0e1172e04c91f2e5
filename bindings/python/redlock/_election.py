# SPDX-License-Identifier: BSD-3-Clause
# Election: leader election over the C library's redlock_election_* (docs/algorithm.md, "Leader
# election"): campaign as a context manager giving the term, leader(), and observe() as a
# generator and an async iterator. Every decision is C's; this maps arguments and errors.
from __future__ import annotations

import asyncio
import math
import threading
import time
import weakref
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, Optional, Tuple, Type

from . import _sigwake
from ._callbacks import PendingAcquire, begin_acquire, forget_acquire
from ._convert import DEFAULT_TTL, _MAX_WAIT_MS, Name, Seconds, _cstr, _invalid, _ttl_ms
from ._errors import LockStateError, check, error
from ._lock import _wait_through_cancel
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._client import Redlock

@dataclass(frozen=True)
class Leader:
    """What a read of an election found: a leader (present) with its term, revision and value, or
    none (present False; term is the last term a majority recorded, value None)."""
    present: bool
    term: int
    revision: int
    value: Optional[str]


def _leader_of(c: Any) -> Leader:
    if not c.present:
        return Leader(False, int(c.term), 0, None)
    raw = ffi.unpack(c.value, c.value_len)
    return Leader(True, int(c.term), int(c.revision), raw.decode("utf-8", "replace"))


class Leadership:
    """Returned by Election.campaign() once this process leads: ``with`` gives the term and
    resigns at the end of the block; or call resign()."""

    def __init__(self, election: "Election", term: int) -> None:
        self._election = election
        self.term = term

    @property
    def is_leader(self) -> bool:
        """True while this leadership lasts (its validity not run out, not lost or resigned)."""
        return self._election.is_leader and self._election.term == self.term

    def proclaim(self, value: Any) -> None:
        self._election.proclaim(value)

    async def proclaim_async(self, value: Any) -> None:
        """proclaim() without blocking the event loop (Election.proclaim_async)."""
        await self._election.proclaim_async(value)

    def resign(self) -> None:
        if self._election.term == self.term:
            self._election.resign()

    def __enter__(self) -> int:
        return self.term

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self.is_leader:
            self._election.resign()

    async def __aenter__(self) -> int:
        return self.term

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if self.is_leader:   # one round, on C's acquire thread
            await self._election.resign_async()


class Observer:
    """Every change of the election, in order, from Election.observe(): iterate it (``for``) or
    ``async for`` it. The first item is the state when iteration starts (unless current=False).

    It ends (StopIteration, StopAsyncIteration) when a wait for the next change runs out of its
    ``timeout`` (then ``timed_out`` is True) or after close(), from any thread. ``with`` and
    ``async with`` close it at the end of the block; ``break`` needs nothing more, since an
    observer that is dropped is freed. Each observer waits on a C handle of its own, so close()
    ends only its wait, at once, and several observers of one Election wait side by side.
    Election.cancel() ends its observers' waits too, with Cancelled, until reset_cancel().
    One consumer at a time: iterations of one observer from two threads take turns."""

    def __init__(self, election: "Election", current: bool, wait_ms: Optional[int]) -> None:
        self._e = election
        self._wait_ms = wait_ms   # None: no timeout
        self._first = current
        self._last = ffi.new("redlock_leader *")
        self._last.version = lib.REDLOCK_LEADER_VERSION
        self._pending: Optional[Leader] = None   # read, not yet handed out (an await cancelled meanwhile)
        self._turn = threading.Lock()    # one C wait at a time: C allows one observe per handle
        self._state = threading.Lock()   # guards _ptr, _closed, _busy
        self._closed = False
        self._busy = False
        self.timed_out = False
        self._ptr: Any = election._new_handle()
        with election._observers_mutex:
            election._observers.add(self)

    @property
    def closed(self) -> bool:
        """True once ended: by close() or by the timeout."""
        return self._closed

    def close(self) -> None:
        """Ends the iteration, at once in a thread waiting in it (which then sees StopIteration),
        and frees the C handle. Any thread; idempotent."""
        with self._e._observers_mutex:
            self._e._observers.discard(self)
        with self._state:
            if self._closed:
                return
            self._closed = True
            ptr = self._ptr
            if ptr is None:
                return
            lib.redlock_election_cancel(ptr)
            if self._busy:
                return   # the waiting thread frees it as it leaves
            self._ptr = None
        ffi.release(ptr)

    def _interrupt(self) -> None:
        """Ends the C wait under way, if any (Election.cancel, a cancelled await)."""
        with self._state:
            if self._ptr is not None:
                lib.redlock_election_cancel(self._ptr)

    def _enter_wait(self) -> Any:
        """The C handle, marked busy for a wait (None once closed). The cancel is reset under
        _state, then the flags are read: a close() or cancel from now on is seen by the wait
        (sticky), one before it by the checks."""
        with self._state:
            if self._closed:
                return None
            self._busy = True
            lib.redlock_election_cancel_reset(self._ptr)
            return self._ptr

    def _leave_wait(self) -> None:
        """After a wait: the handle freed if close() came meanwhile (it left that to us)."""
        with self._state:
            self._busy = False
            if self._closed and self._ptr is not None:
                ptr, self._ptr = self._ptr, None
                ffi.release(ptr)

    def _take(self, stop: Optional[threading.Event] = None) -> Optional[Leader]:
        """The next state, or None when the iteration has ended. stop: set by a cancelled
        await, whose thread then leaves what it read in _pending for the next call."""
        with self._turn:
            if self._closed:
                return None   # a change read before close() is not handed out after it
            if self._pending is None:
                ptr = self._enter_wait()
                if ptr is None:
                    return None
                try:
                    got = self._wait(ptr, stop)
                    if got is None:
                        return None   # the await is gone
                    if not got:
                        self.close()   # ended: the handle is freed below
                        return None
                finally:
                    self._leave_wait()
            if stop is not None and stop.is_set():
                return None   # the await is gone: _pending stays for the next one
            leader, self._pending = self._pending, None
            return leader

    def _wait(self, ptr: Any, stop: Optional[threading.Event]) -> Optional[bool]:
        """Reads the next state into _pending (True); False when the wait ran out or the
        observer was closed, None when stop was set. Raises the C failure, and Cancelled after
        Election.cancel()."""
        if self._first:
            self._raise(ptr, lib.redlock_election_leader(ptr, self._last))
            self._first = False
            self._pending = _leader_of(self._last)
            return True
        deadline = None if self._wait_ms is None else time.monotonic() + self._wait_ms / 1000
        while True:
            if self._closed:
                return False
            if stop is not None and stop.is_set():
                return None
            if self._e._cancelled:
                self._raise(ptr, lib.REDLOCK_ECANCELED, "observe cancelled by Election.cancel()")
            if deadline is None:
                wait_ms = lib.REDLOCK_WAIT_FOREVER
            elif self._wait_ms == 0:
                wait_ms = lib.REDLOCK_WAIT_NONE   # timeout=0: one read, what has changed already
            else:
                wait_ms = math.ceil((deadline - time.monotonic()) * 1000)
                if wait_ms <= 0:
                    self.timed_out = True
                    return False
            # One wait in C to the deadline; on the main thread a signal (Ctrl-C) cancels it.
            armed = wait_ms != lib.REDLOCK_WAIT_NONE and _sigwake.begin_wait(ptr, lib.redlock_election_cancel)
            try:
                rc = lib.redlock_election_observe(ptr, self._last, wait_ms)
            finally:
                if armed:
                    _sigwake.end_wait()
            if rc == 0:
                self._pending = _leader_of(self._last)
                return True
            if rc == lib.REDLOCK_ETIMEDOUT:
                self.timed_out = True
                return False
            if rc != lib.REDLOCK_ECANCELED:
                self._raise(ptr, rc)
            # Cancelled: by close(), a stopped await or Election.cancel(), whose flags the loop's
            # top reads, or by a signal whose handler raised nothing (wait on). The reset comes
            # under _state, so a cancel after it is not lost (C's cancel is sticky).
            with self._state:
                lib.redlock_election_cancel_reset(ptr)

    def _raise(self, ptr: Any, rc: int, detail: Optional[str] = None) -> None:
        if rc:
            if detail is None:
                detail = ffi.string(lib.redlock_election_errmsg(ptr)).decode("utf-8", "replace")
            raise error(rc, detail, self._e._display)

    def __iter__(self) -> Iterator[Leader]:
        return self

    def __next__(self) -> Leader:
        leader = self._take()
        if leader is None:
            raise StopIteration
        return leader

    def __aiter__(self) -> AsyncIterator[Leader]:
        return self

    async def __anext__(self) -> Leader:
        if not self._turn.acquire(blocking=False):
            # A thread of the program waits in this observer: take turns with it, off the loop.
            return await self._anext_in_executor()
        try:
            if self._closed:
                raise StopAsyncIteration
            if self._pending is None:
                ptr = self._enter_wait()
                if ptr is None:
                    raise StopAsyncIteration
                try:
                    got = await self._wait_async(ptr)
                    if not got:
                        self.close()   # ended: the handle is freed below
                        raise StopAsyncIteration
                finally:
                    self._leave_wait()
            leader, self._pending = self._pending, None
            assert leader is not None
            return leader
        finally:
            self._turn.release()

    async def _wait_async(self, ptr: Any) -> bool:
        """_wait for asyncio: the next state into _pending (True), or False when the wait ran
        out or the observer was closed. The wait runs on C's acquire thread
        (redlock_election_observe_async), not in the executor; a cancelled await ends it and
        keeps what it had read for the next __anext__."""
        loop = asyncio.get_running_loop()
        first = self._first
        while True:
            if self._closed:
                return False
            if self._e._cancelled:
                self._raise(ptr, lib.REDLOCK_ECANCELED, "observe cancelled by Election.cancel()")
            if first:
                # The current state: one read from the zeroed state (no leader, term 0), which
                # is that state itself when it does not come after it (REDLOCK_ETIMEDOUT).
                wait_ms = lib.REDLOCK_WAIT_NONE
            elif self._wait_ms is None:
                wait_ms = lib.REDLOCK_WAIT_FOREVER
            else:
                wait_ms = lib.REDLOCK_WAIT_NONE if self._wait_ms == 0 else self._wait_ms
            pending = PendingAcquire(loop, loop.create_future())
            key = begin_acquire(pending, self)
            rc = lib.redlock_election_observe_async(ptr, self._last, wait_ms, lib._redlock_py_on_election_done,
                                                    ffi.cast("void *", key))
            if rc:
                forget_acquire(key)
                self._raise(ptr, rc)
            try:
                rc = await asyncio.shield(pending.future)
            except asyncio.CancelledError:
                lib.redlock_election_cancel(ptr)
                while not pending.future.done():   # after at most the read in flight
                    try:
                        await asyncio.wait({pending.future})
                    except asyncio.CancelledError:
                        pass
                if pending.future.result() == 0 or first and pending.future.result() == lib.REDLOCK_ETIMEDOUT:
                    self._first = False
                    self._pending = _leader_of(self._last)   # read: kept for the next __anext__
                with self._state:
                    if not self._closed and not self._e._cancelled:
                        lib.redlock_election_cancel_reset(ptr)   # the await's own cancel
                raise
            if rc == 0 or first and rc == lib.REDLOCK_ETIMEDOUT:
                self._first = False
                self._pending = _leader_of(self._last)
                return True
            if rc == lib.REDLOCK_ETIMEDOUT:
                self.timed_out = True
                return False
            if rc == lib.REDLOCK_ECANCELED:
                # Whoever cancelled set its flag first (close, Election.cancel), read above.
                with self._state:
                    lib.redlock_election_cancel_reset(ptr)
                continue
            self._raise(ptr, rc)

    def _cancel_wait(self) -> None:
        """Ends the C wait under way (the at-exit hook of asynchronous observes)."""
        with self._state:
            if self._ptr is not None:
                lib.redlock_election_cancel(self._ptr)

    async def _anext_in_executor(self) -> Leader:
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        # The wait runs in a thread; a cancelled await stops it at once (the C wait is cancelled)
        # and what it had read is kept for the next __anext__, so no change is lost.
        fut = loop.run_in_executor(None, self._take, stop)
        try:
            leader = await asyncio.shield(fut)
        except asyncio.CancelledError:
            stop.set()
            self._interrupt()
            raise
        if leader is None:
            raise StopAsyncIteration
        return leader

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    async def __aenter__(self) -> "Observer":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        self.close()

    async def aclose(self) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Observer of {self._e._display!r} {state}>"


class Election:
    """One campaigner or observer of the election ``name`` (client.election(name)).

    ``with election.campaign(value) as term:`` waits until this process leads, runs the block as
    leader and resigns. The term is the leadership's fencing token: strictly increasing from one
    leader to the next; pass it with every write the leader makes. ``is_leader`` turns False
    when leadership is lost (the lock could not be extended): stop acting then.
    """

    def __init__(self, client: "Redlock", name: Name, *, ttl: Seconds = DEFAULT_TTL) -> None:
        self._name = _cstr(name, "name")
        self._display = self._name.decode("utf-8", "replace")
        self._ttl_ms = _ttl_ms(ttl)
        self._client = client   # keeps the client alive as long as the election
        self._cancelled = False   # cancel() until reset_cancel(), for the observers' handles
        self._observers: "weakref.WeakSet[Observer]" = weakref.WeakSet()
        self._observers_mutex = threading.Lock()
        self._campaigning = False   # a campaign_async() under way
        self._ptr = self._new_handle()

    def _new_handle(self) -> Any:
        """A C handle on the election (no network I/O), freed when collected or released."""
        out = ffi.new("redlock_election **")
        client = self._client
        with client._mutex:
            if client._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed")
            errbuf = ffi.new("char[]", 512)
            rc = lib.redlock_election_open(out, client._ptr, self._name, errbuf, 512)
        check(rc, ffi.string(errbuf).decode("utf-8", "replace"), self._display)
        return ffi.gc(out[0], lib.redlock_election_free)

    def _check(self, rc: int) -> None:
        if rc:
            raise error(rc, ffi.string(lib.redlock_election_errmsg(self._ptr)).decode("utf-8", "replace"),
                        self._display)

    @staticmethod
    def _value(value: Any) -> bytes:
        data = _cstr(value, "value")
        if len(data) > lib.REDLOCK_ELECTION_MAX_VALUE:
            raise _invalid(f"the value is {len(data)} bytes, over the limit of {lib.REDLOCK_ELECTION_MAX_VALUE}")
        return data

    def _campaign_args(self, value: Any, timeout: Optional[Seconds],
                       ttl: Optional[Seconds]) -> Tuple[bytes, int, int]:
        data = self._value(value)
        ttl_ms = self._ttl_ms if ttl is None else _ttl_ms(ttl)
        if timeout is None:
            wait_ms = lib.REDLOCK_WAIT_FOREVER
        else:
            wait_ms = int(float(timeout) * 1000)
            if wait_ms < 0 or wait_ms > _MAX_WAIT_MS:
                raise _invalid(f"timeout {timeout!r} is out of range")
        return data, ttl_ms, wait_ms

    def _not_campaigning(self) -> None:
        if self._campaigning:
            raise LockStateError(f"{self._display!r}: a campaign_async() is under way",
                                 detail="campaign under way", resource=self._display)

    def campaign(self, value: Any, *, timeout: Optional[Seconds] = None,
                 ttl: Optional[Seconds] = None) -> Leadership:
        """Waits until this process leads (timeout None: no deadline; cancel() ends it), writes
        ``value`` with the new term, keeps the leadership auto-extended, and returns it.
        Raises LockTimeout after ``timeout``, Cancelled, LockStateError if already leading."""
        data, ttl_ms, wait_ms = self._campaign_args(value, timeout, ttl)
        self._not_campaigning()
        self._check(lib.redlock_election_campaign(self._ptr, data, ttl_ms, wait_ms))
        return Leadership(self, self.term)

    async def campaign_async(self, value: Any, *, timeout: Optional[Seconds] = None,
                             ttl: Optional[Seconds] = None) -> Leadership:
        """campaign() for asyncio. The wait takes no thread: C's acquire thread, one per client,
        runs it (redlock_election_campaign_async). ``async with await
        election.campaign_async(value) as term:`` leads for the block and resigns after it.
        Cancelling the task ends the campaign; a leadership won in that race is resigned."""
        data, ttl_ms, wait_ms = self._campaign_args(value, timeout, ttl)
        self._not_campaigning()
        loop = asyncio.get_running_loop()
        pending = PendingAcquire(loop, loop.create_future())
        key = begin_acquire(pending, self)
        self._campaigning = True
        rc = lib.redlock_election_campaign_async(self._ptr, data, ttl_ms, wait_ms,
                                                 lib._redlock_py_on_election_done, ffi.cast("void *", key))
        if rc:
            self._campaigning = False
            forget_acquire(key)
            self._check(rc)
        try:
            rc = await asyncio.shield(pending.future)
        except asyncio.CancelledError:
            lib.redlock_election_cancel(self._ptr)
            while not pending.future.done():   # after at most the round in flight
                try:
                    await asyncio.wait({pending.future})
                except asyncio.CancelledError:
                    pass
            self._campaigning = False
            if not self._cancelled:   # the task's own cancel: the next campaign starts clean
                lib.redlock_election_cancel_reset(self._ptr)
            if pending.future.result() == 0:   # won as it was cancelled: hand over
                try:
                    await self._step_c(lambda key: lib.redlock_election_resign_async(
                        self._ptr, lib._redlock_py_on_election_done, key))
                except BaseException:
                    pass
            raise
        self._campaigning = False
        self._check(rc)
        return Leadership(self, self.term)

    def _cancel_wait(self) -> None:
        """Ends the C wait under way (the at-exit hook of asynchronous campaigns)."""
        lib.redlock_election_cancel(self._ptr)

    def proclaim(self, value: Any) -> None:
        """The leader changes its value (same term, next revision)."""
        self._not_campaigning()
        self._check(lib.redlock_election_proclaim(self._ptr, self._value(value)))

    def resign(self) -> None:
        """Gives leadership up at once: the next campaigner is woken."""
        self._not_campaigning()
        self._check(lib.redlock_election_resign(self._ptr))

    async def proclaim_async(self, value: Any) -> None:
        """proclaim() without a thread of its own: the round runs on the client's acquire thread
        (redlock_election_proclaim_async). A cancelled task still waits for it (one round)."""
        self._not_campaigning()
        raw = self._value(value)
        self._check(await self._step_c(lambda key: lib.redlock_election_proclaim_async(
            self._ptr, raw, lib._redlock_py_on_election_done, key)))

    async def resign_async(self) -> None:
        """resign() without a thread of its own: the round runs on the client's acquire thread
        (redlock_election_resign_async). A cancelled task still waits for it (one round)."""
        self._not_campaigning()
        self._check(await self._step_c(lambda key: lib.redlock_election_resign_async(
            self._ptr, lib._redlock_py_on_election_done, key)))

    async def _step_c(self, start: Any) -> int:
        """Runs start(key), a call of C that ends in _redlock_py_on_election_done, and waits for
        its code."""
        loop = asyncio.get_running_loop()
        pending = PendingAcquire(loop, loop.create_future())
        key = begin_acquire(pending, self)
        rc = start(ffi.cast("void *", key))
        if rc:
            forget_acquire(key)
            return int(rc)
        return int(await _wait_through_cancel(pending.future))

    def cancel(self) -> None:
        """Ends a campaign or an observer's wait under way in another thread (Cancelled), and
        later ones until reset_cancel(). To end one observer's iteration, close that observer."""
        self._cancelled = True
        lib.redlock_election_cancel(self._ptr)
        with self._observers_mutex:
            observers = list(self._observers)
        for observer in observers:
            observer._interrupt()

    def reset_cancel(self) -> None:
        self._cancelled = False
        lib.redlock_election_cancel_reset(self._ptr)

    def leader(self) -> Leader:
        """The leader as a majority of the nodes report it, or Leader(present=False...). A hint:
        it may have changed by the time it is returned."""
        out = ffi.new("redlock_leader *")
        out.version = lib.REDLOCK_LEADER_VERSION
        self._check(lib.redlock_election_leader(self._ptr, out))
        return _leader_of(out)

    def observe(self, *, current: bool = True, timeout: Optional[Seconds] = None) -> Observer:
        """Every change of leader or value, in term order, never a term back: ``for leader in
        election.observe():`` or ``async for leader in election.observe():``. The first item is
        the current state (current=False: wait for the first change).

        ``timeout`` (seconds; None: no limit) bounds each wait for the next change: when one
        runs out, the iteration ends, and the loop's next statement runs (``timed_out`` is then
        True on the observer). It ends rather than raising because a quiet election is not a
        failure: it is the news that the leader stayed, which a watcher often acts on next
        (a health check, a re-read); campaign(timeout=), whose caller did not get what it asked
        for, raises LockTimeout. 0 reads once and yields only a change already made. An ended
        observer stays ended (the iterator protocol): observe() again, whose first item is the
        state then.

        The observer's close(), from any thread, ends the iteration at once; ``with
        election.observe() as changes:`` (or ``async with``) closes it after the block."""
        if timeout is None:
            wait_ms = None
        else:
            seconds = float(timeout)
            if not seconds >= 0 or seconds * 1000 > _MAX_WAIT_MS:
                raise _invalid(f"timeout {timeout!r} is out of range")
            wait_ms = math.ceil(seconds * 1000)
        return Observer(self, current, wait_ms)

    @property
    def is_leader(self) -> bool:
        return bool(lib.redlock_election_is_leader(self._ptr))

    @property
    def term(self) -> int:
        """The term of this process's leadership, 0 when not leading."""
        return int(lib.redlock_election_term(self._ptr))

    @property
    def name(self) -> str:
        return self._display

    def __repr__(self) -> str:
        return f"<Election {self._display!r} leader={self.is_leader} term={self.term}>"
