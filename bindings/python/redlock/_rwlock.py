# SPDX-License-Identifier: BSD-3-Clause
# RWLock: the read-write lock on one name (docs/algorithm.md, "Read-write locks"): ReadLock and
# WriteLock are Locks over C handles of the read and the write side; every decision is C's.
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ._async import AsyncLock
from ._callbacks import finalize
from ._convert import _ERRBUF_SIZE, Name
from ._errors import LockStateError, check
from ._lock import Lock
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._client import Redlock

__all__ = ["RWLock", "ReadLock", "WriteLock", "AsyncReadLock", "AsyncWriteLock"]


def _new_side(client: Redlock, name: bytes, display: Optional[str], write: bool) -> Any:
    from ._client import _free_lock  # the client module imports the lock modules
    out = ffi.new("redlock_lock **")
    errbuf = ffi.new("char[]", _ERRBUF_SIZE)
    open_side = lib.redlock_lock_open_write if write else lib.redlock_lock_open_read
    with client._mutex:  # close() must not free the client meanwhile
        if client._ptr is None:
            raise LockStateError("the Redlock client is closed", detail="client is closed", resource=display)
        rc = open_side(out, client._ptr, name, errbuf, _ERRBUF_SIZE)
    check(rc, ffi.string(errbuf).decode("utf-8", "replace"), display)
    return ffi.gc(out[0], lambda ptr: finalize(lambda: _free_lock(ptr)))


class ReadLock(Lock):
    """The read side of a read-write lock: held by any number of ReadLocks at
    once, never with a WriteLock (or a mutex Lock) of the same name. A Lock
    in every other way: acquire/release/extend/auto_extend, ``with`` and
    ``async with``. Its ``token`` (with fencing) is the token of the last
    writer before it, not a new one; None if there was none."""

    def _new_handle(self, client: Redlock) -> Any:
        return _new_side(client, self._name_b, self._display, False)

    def __repr__(self) -> str:
        return "<redlock.ReadLock" + super().__repr__()[len("<redlock.Lock"):]


class WriteLock(Lock):
    """The write side of a read-write lock: held alone, excluding readers,
    other writers and mutex Locks of the same name. Writers are preferred:
    once a waiting writer has been refused, new readers wait for it."""

    _downgraded = False

    def _new_handle(self, client: Redlock) -> Any:
        return _new_side(client, self._name_b, self._display, True)

    def _begin_acquire(self, token: Any) -> None:
        if self._downgraded:
            raise LockStateError(f"{self._display!r}: this WriteLock was downgraded to a read lock; take "
                                 "a new one with RWLock.write()", detail="downgraded", resource=self._display)
        super()._begin_acquire(token)

    def downgrade(self) -> None:
        """Turns the held write lock into a read lock in one step, with no
        writer in between; readers may join from then on. Release it (or
        leave the ``with`` block) as before. Raises LockLost, LockExpired,
        QuorumError... after which it is not held; LockStateError when not
        held. A read lock is never upgraded: release it and take a WriteLock."""
        self._enter()
        try:
            if self._foreign:
                raise self._not_ours("downgrades")
            rc = lib.redlock_lock_downgrade(self._ptr)
            if rc == 0:
                self._downgraded = True
            self._check(rc)
        finally:
            self._busy.release()

    async def downgrade_async(self) -> None:
        """downgrade() without a thread of its own: the round runs on the
        client's acquire thread (redlock_lock_downgrade_async), as
        release_async()'s does."""
        self._enter()
        try:
            if self._foreign:
                raise self._not_ours("downgrades")
            rc = await self._c_async(
                lambda key: lib.redlock_lock_downgrade_async(self._ptr, lib._redlock_py_on_acquired, key))
            if rc == 0:
                self._downgraded = True
            self._check(rc)
        finally:
            self._busy.release()

    def __repr__(self) -> str:
        side = "<redlock.WriteLock (downgraded)" if self._downgraded else "<redlock.WriteLock"
        return side + super().__repr__()[len("<redlock.Lock"):]


class AsyncReadLock(AsyncLock):
    """A ReadLock in asyncio's shape (see AsyncLock)."""

    def __init__(self, client: Redlock, name: Name, **kwargs: Any) -> None:
        self.lock = ReadLock(client, name, **kwargs)


class AsyncWriteLock(AsyncLock):
    """A WriteLock in asyncio's shape (see AsyncLock); ``await downgrade()``."""

    def __init__(self, client: Redlock, name: Name, **kwargs: Any) -> None:
        self.lock = WriteLock(client, name, **kwargs)

    async def downgrade(self) -> None:
        await self.lock.downgrade_async()


class RWLock:
    """The read-write lock on ``name``: ``with rw.read():`` for shared
    access, ``with rw.write():`` for exclusive access, ``async with
    rw.aread():`` / ``rw.awrite()`` in asyncio. Each call makes a new,
    unacquired ReadLock or WriteLock (no I/O) from the arguments given to
    Redlock.rwlock(), which the call's own arguments override; a Lock's
    arguments (ttl, blocking, timeout, auto_extend, ...) apply."""

    def __init__(self, client: Redlock, name: Name, **kwargs: Any) -> None:
        self.client = client
        self.name = name
        self._kwargs = kwargs

    def _args(self, kwargs: dict) -> dict:
        return {**self._kwargs, **kwargs}

    def read(self, **kwargs: Any) -> ReadLock:
        return ReadLock(self.client, self.name, **self._args(kwargs))

    def write(self, **kwargs: Any) -> WriteLock:
        return WriteLock(self.client, self.name, **self._args(kwargs))

    def aread(self, **kwargs: Any) -> AsyncReadLock:
        return AsyncReadLock(self.client, self.name, **self._args(kwargs))

    def awrite(self, **kwargs: Any) -> AsyncWriteLock:
        return AsyncWriteLock(self.client, self.name, **self._args(kwargs))

    def __repr__(self) -> str:
        return f"<redlock.RWLock {self.name!r}>"
