# SPDX-License-Identifier: BSD-3-Clause
# Semaphore: a counting semaphore across the nodes, in threading.BoundedSemaphore's shape, over
# C semaphore handles (redlock_lock_open_semaphore): each permit taken is one handle, a Lock.
from __future__ import annotations

import numbers
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Type

from ._callbacks import finalize
from ._convert import DEFAULT_TTL, _ERRBUF_SIZE, _UNSET, Name, Seconds
from ._errors import InvalidArgument, LockStateError, RedlockError, check
from ._lock import Lock
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._client import Redlock


def _free_handle(ptr: Any) -> None:
    lib.redlock_lock_free(ptr)


def _limit(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    value = int(value)
    if not 1 <= value <= lib.REDLOCK_MAX_SEM_LIMIT:
        raise InvalidArgument(f"{what} must be 1 to {lib.REDLOCK_MAX_SEM_LIMIT}, got {value}",
                              detail=f"{what} out of range")
    return value


def _lock_wait(blocking: bool, timeout: Optional[Seconds]) -> Any:
    """threading.Semaphore's (blocking, timeout) as Lock.acquire's timeout argument."""
    if not isinstance(blocking, bool):
        raise TypeError(f"blocking must be a bool, not {type(blocking).__name__}")
    if not blocking:
        if timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        return _UNSET
    return -1 if timeout is None else timeout


class Permit(Lock):
    """``n`` permits of a semaphore taken at once (all or none): a Lock whose C handle is a
    semaphore's, so acquire, release, extend, auto_extend, validity, token, node_results and
    cancel are Lock's. A Semaphore hands them out; use one directly for a permit of your own."""

    def __init__(self, client: Redlock, name: Name, limit: int, n: int = 1, **kwargs: Any) -> None:
        self.limit = _limit(limit, "limit")
        self.n = _limit(n, "n")
        super().__init__(client, name, **kwargs)

    def _new_handle(self, client: Redlock) -> Any:
        out = ffi.new("redlock_lock **")
        errbuf = ffi.new("char[]", _ERRBUF_SIZE)
        with client._mutex:  # close() must not free the client under the call
            if client._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed",
                                     resource=self._display)
            rc = lib.redlock_lock_open_semaphore(out, client._ptr, self._name_b, self.limit, self.n,
                                                 errbuf, _ERRBUF_SIZE)
        check(rc, ffi.string(errbuf).decode("utf-8", "replace"), self._display)
        return ffi.gc(out[0], lambda ptr: finalize(lambda: _free_handle(ptr)))

    def __repr__(self) -> str:
        state = "acquired" if self._acquired else "not acquired"
        return f"<redlock.Permit {self._display!r} {self.n} of {self.limit} {state}>"


class Semaphore:
    """A counting semaphore of ``limit`` permits on ``name``, shared by every client and
    process that uses the name with the same limit (another limit raises InvalidArgument,
    naming both). The shape of threading.BoundedSemaphore: ``acquire(blocking=True,
    timeout=None) -> bool``, ``release()``, ``with``. A permit is a lease: it expires after
    ``ttl`` seconds unless extended (``auto_extend=True`` keeps each permit alive).

    Each acquire takes a permit; release() gives back the one taken last (or ``n`` of them).
    Releasing more than was acquired through this object raises ValueError, as
    BoundedSemaphore does. ``last_error`` says why an acquire returned False. The permits held
    are in ``permits`` (their ``token``, ``validity``, ``extend()``...)."""

    def __init__(self, client: Redlock, name: Name, limit: int, *, ttl: Seconds = DEFAULT_TTL,
                 **kwargs: Any) -> None:
        self.limit = _limit(limit, "limit")
        self.name = name
        self.client = client
        self._kwargs = dict(kwargs, ttl=ttl)
        self._mu = threading.Lock()
        self._idle: Dict[int, List[Permit]] = {}
        self._held: List[Permit] = []
        self.last_error: Optional[RedlockError] = None
        self._give_back(self._new_permit(1))  # name, limit and arguments are checked here

    def _new_permit(self, n: int) -> Permit:
        return Permit(self.client, self.name, self.limit, n, **self._kwargs)

    def _take(self, n: int) -> Permit:
        with self._mu:
            idle = self._idle.get(n)
            if idle:
                return idle.pop()
        return self._new_permit(n)

    def _give_back(self, p: Permit) -> None:
        with self._mu:
            self._idle.setdefault(p.n, []).append(p)

    def acquire(self, blocking: bool = True, timeout: Optional[Seconds] = None, *, n: int = 1) -> bool:
        """Takes a permit (``n`` permits at once, all or none): True once held, False if none
        was free in time (``last_error`` says why). blocking=False makes one attempt;
        timeout=None waits until a permit is free; timeout=s waits up to s seconds. A
        release anywhere wakes the wait."""
        p = self._take(_limit(n, "n"))
        try:
            ok = p.acquire(blocking, _lock_wait(blocking, timeout))
        except BaseException:
            self._give_back(p)
            raise
        if not ok:
            self.last_error = p.last_error
            self._give_back(p)
            return False
        self.last_error = None
        with self._mu:
            self._held.append(p)
        return True

    def _pop(self) -> Permit:
        with self._mu:
            if not self._held:
                raise ValueError("Semaphore released too many times")
            return self._held.pop()

    def release(self, n: int = 1) -> None:
        """Gives back the permit acquired last (``n``: that many permits). Raises LockLost if
        a permit was no longer held on a majority (its lease ran out, or the nodes lost it),
        ValueError when more are released than were acquired through this object."""
        n = _limit(n, "n")
        first: Optional[BaseException] = None
        while n > 0:
            p = self._pop()
            if p.n > n:
                with self._mu:
                    self._held.append(p)
                raise ValueError(f"the last permit taken holds {p.n} permits at once; release({p.n})")
            n -= p.n
            try:
                p.release()
            except RedlockError as err:
                first = first or err
            finally:
                self._give_back(p)
        if first is not None:
            raise first

    @property
    def permits(self) -> Tuple[Permit, ...]:
        """The permits held through this object, oldest first."""
        with self._mu:
            return tuple(self._held)

    @property
    def held(self) -> int:
        """How many permits are held through this object (validity not looked at)."""
        with self._mu:
            return sum(p.n for p in self._held)

    def __enter__(self) -> "Semaphore":
        p = self._take(1)
        try:
            p._acquire_or_raise()
        except BaseException:
            self._give_back(p)
            raise
        with self._mu:
            self._held.append(p)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        try:
            self.release()
        except RedlockError as err:
            if exc is None:
                raise
            add_note = getattr(exc, "add_note", None)
            if add_note is not None:
                add_note(f"redlock: releasing a permit of {self.name!r} also failed: {err}")

    def __repr__(self) -> str:
        return f"<redlock.Semaphore {self.name!r} limit={self.limit} held={self.held}>"


class AsyncSemaphore:
    """A Semaphore in asyncio's shape: ``await acquire(blocking, timeout)`` -> bool, ``await
    release()``, ``async with``. A wait takes no thread (C's acquire thread runs it); a
    release runs in the loop's default executor. Cancelling the task cancels the wait."""

    def __init__(self, client: Redlock, name: Name, limit: int, **kwargs: Any) -> None:
        self.semaphore = Semaphore(client, name, limit, **kwargs)

    async def acquire(self, blocking: bool = True, timeout: Optional[Seconds] = None, *, n: int = 1) -> bool:
        s = self.semaphore
        p = s._take(_limit(n, "n"))
        try:
            ok = await p.acquire_async(blocking, _lock_wait(blocking, timeout))
        except BaseException:
            s._give_back(p)
            raise
        if not ok:
            s.last_error = p.last_error
            s._give_back(p)
            return False
        s.last_error = None
        with s._mu:
            s._held.append(p)
        return True

    async def release(self, n: int = 1) -> None:
        s = self.semaphore
        n = _limit(n, "n")
        first: Optional[BaseException] = None
        while n > 0:
            p = s._pop()
            if p.n > n:
                with s._mu:
                    s._held.append(p)
                raise ValueError(f"the last permit taken holds {p.n} permits at once; release({p.n})")
            n -= p.n
            try:
                await p.release_async()
            except RedlockError as err:
                first = first or err
            finally:
                s._give_back(p)
        if first is not None:
            raise first

    async def __aenter__(self) -> "AsyncSemaphore":
        if not await self.acquire():
            assert self.semaphore.last_error is not None
            raise self.semaphore.last_error
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        try:
            await self.release()
        except RedlockError:
            if exc is None:
                raise

    def __getattr__(self, attr: str) -> Any:
        if attr == "semaphore":
            raise AttributeError(attr)
        return getattr(self.semaphore, attr)

    def __repr__(self) -> str:
        return "<redlock.AsyncSemaphore" + repr(self.semaphore)[len("<redlock.Semaphore"):]
