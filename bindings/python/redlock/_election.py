# SPDX-License-Identifier: BSD-3-Clause
# Election: leader election over the C library's redlock_election_* (docs/algorithm.md, "Leader
# election"): campaign as a context manager giving the term, leader(), and observe() as a
# generator and an async iterator. Every decision is C's; this maps arguments and errors.
from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, Optional, Type

from ._convert import _MAX_WAIT_MS, Name, Seconds, _cstr, _invalid, _ttl_ms
from ._errors import LockStateError, check, error
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._client import Redlock

# observe() waits in slices this long, so that Ctrl-C, close() and task cancellation get through.
_OBSERVE_SLICE_MS = 500


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

    def resign(self) -> None:
        if self._election.term == self.term:
            self._election.resign()

    def __enter__(self) -> int:
        return self.term

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self.is_leader:
            self._election.resign()


class _Observer:
    """Every change of the election, in order: iterate it (a generator) or ``async for`` it.
    The first item is the state when iteration starts."""

    def __init__(self, election: "Election", current: bool) -> None:
        self._e = election
        self._last = ffi.new("redlock_leader *")
        self._last.version = lib.REDLOCK_LEADER_VERSION
        self._first = current

    def _next(self, stop: Optional[threading.Event] = None) -> Leader:
        if self._first:
            self._first = False
            rc = lib.redlock_election_leader(self._e._ptr, self._last)
            self._e._check(rc)
            return _leader_of(self._last)
        while stop is None or not stop.is_set():
            rc = lib.redlock_election_observe(self._e._ptr, self._last, _OBSERVE_SLICE_MS)
            if rc == 0:
                return _leader_of(self._last)
            if rc != lib.REDLOCK_ETIMEDOUT:
                self._e._check(rc)
        raise StopIteration

    def __iter__(self) -> Iterator[Leader]:
        return self

    def __next__(self) -> Leader:
        return self._next()

    def __aiter__(self) -> AsyncIterator[Leader]:
        return self

    async def __anext__(self) -> Leader:
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, self._next, stop)
        try:
            return await asyncio.shield(fut)
        except StopIteration:
            raise StopAsyncIteration from None
        except asyncio.CancelledError:
            stop.set()   # the thread ends within one slice
            raise


class Election:
    """One campaigner or observer of the election ``name`` (client.election(name)).

    ``with election.campaign(value) as term:`` waits until this process leads, runs the block as
    leader and resigns. The term is the leadership's fencing token: strictly increasing from one
    leader to the next; pass it with every write the leader makes. ``is_leader`` turns False
    when leadership is lost (the lock could not be extended): stop acting then.
    """

    def __init__(self, client: "Redlock", name: Name, *, ttl: Seconds = 10.0) -> None:
        self._name = _cstr(name, "name")
        self._display = self._name.decode("utf-8", "replace")
        self._ttl_ms = _ttl_ms(ttl)
        self._client = client   # keeps the client alive as long as the election
        out = ffi.new("redlock_election **")
        with client._mutex:
            if client._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed")
            rc = lib.redlock_election_new(out, client._ptr, self._name)
        check(rc, "invalid election name (empty, too long, or ending in ':fencing')", self._display)
        self._ptr = ffi.gc(out[0], lib.redlock_election_free)

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

    def campaign(self, value: Any, *, timeout: Optional[Seconds] = None,
                 ttl: Optional[Seconds] = None) -> Leadership:
        """Waits until this process leads (timeout None: no deadline; cancel() ends it), writes
        ``value`` with the new term, keeps the leadership auto-extended, and returns it.
        Raises LockTimeout after ``timeout``, Cancelled, LockStateError if already leading."""
        data = self._value(value)
        ttl_ms = self._ttl_ms if ttl is None else _ttl_ms(ttl)
        if timeout is None:
            wait_ms = lib.REDLOCK_WAIT_FOREVER
        else:
            wait_ms = int(float(timeout) * 1000)
            if wait_ms < 0 or wait_ms > _MAX_WAIT_MS:
                raise _invalid(f"timeout {timeout!r} is out of range")
        self._check(lib.redlock_election_campaign(self._ptr, data, ttl_ms, wait_ms))
        return Leadership(self, self.term)

    def proclaim(self, value: Any) -> None:
        """The leader changes its value (same term, next revision)."""
        self._check(lib.redlock_election_proclaim(self._ptr, self._value(value)))

    def resign(self) -> None:
        """Gives leadership up at once: the next campaigner is woken."""
        self._check(lib.redlock_election_resign(self._ptr))

    def cancel(self) -> None:
        """Ends a campaign or observe under way in another thread (Cancelled), and later ones
        until reset_cancel()."""
        lib.redlock_election_cancel(self._ptr)

    def reset_cancel(self) -> None:
        lib.redlock_election_cancel_reset(self._ptr)

    def leader(self) -> Leader:
        """The leader as a majority of the nodes report it, or Leader(present=False...). A hint:
        it may have changed by the time it is returned."""
        out = ffi.new("redlock_leader *")
        out.version = lib.REDLOCK_LEADER_VERSION
        self._check(lib.redlock_election_leader(self._ptr, out))
        return _leader_of(out)

    def observe(self, *, current: bool = True) -> _Observer:
        """Every change of leader or value, in term order, never a term back: ``for leader in
        election.observe():`` or ``async for leader in election.observe():``. The first item is
        the current state (current=False: wait for the first change)."""
        return _Observer(self, current)

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
