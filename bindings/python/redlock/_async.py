# SPDX-License-Identifier: BSD-3-Clause
# AsyncLock: a Lock in asyncio's shape. Its waits run on C's acquire thread, its releases and
# extensions (one round each) in the loop's default executor.
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, Type

from ._convert import _UNSET, Name, Seconds
from ._lock import Lock

if TYPE_CHECKING:
    from ._client import Redlock


class AsyncLock:
    """A Lock in asyncio's shape (and pottery's AIORedlock's): ``await
    acquire(blocking, timeout)`` -> bool, ``await release()``, ``await
    extend(ttl)``, ``await locked()``, ``async with``. A wait takes no thread:
    the client's acquire thread in C runs every waiter's attempts, and every
    release and extension (one round each). Cancelling the task cancels a
    wait; a cancelled release or extension is waited for to its end.
    Everything else (held, validity, token, check(), lost, node_results...)
    is the underlying :class:`Lock`'s, also reachable as ``.lock``."""

    def __init__(self, client: Redlock, name: Any, **kwargs: Any) -> None:
        if isinstance(name, (list, tuple)):  # several names: a MultiLock (_multilock.py)
            from ._multilock import MultiLock
            self.lock: Lock = MultiLock(client, name, **kwargs)
        else:
            self.lock = Lock(client, name, **kwargs)

    async def acquire(self, blocking: bool = _UNSET, timeout: Optional[Seconds] = _UNSET, *,
                      ttl: Optional[Seconds] = None, wait: Optional[Seconds] = _UNSET) -> bool:
        return await self.lock.acquire_async(blocking, timeout, ttl=ttl, wait=wait)

    async def release(self) -> None:
        await self.lock.release_async()

    async def extend(self, ttl: Optional[Seconds] = None) -> None:
        await self.lock.extend_async(ttl)

    async def locked(self) -> bool:
        """Whether the lock is held (no I/O; a coroutine, as pottery's AIORedlock.locked)."""
        return self.lock.held

    async def __aenter__(self) -> "AsyncLock":
        await self.lock.__aenter__()
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.lock.__aexit__(exc_type, exc, tb)

    # Code that used alock() when it returned a Lock may still use it in a plain `with`.
    def __enter__(self) -> "AsyncLock":
        self.lock.__enter__()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.lock.__exit__(exc_type, exc, tb)

    def __getattr__(self, attr: str) -> Any:
        if attr == "lock":  # not set yet: __init__ failed
            raise AttributeError(attr)
        return getattr(self.lock, attr)

    def __repr__(self) -> str:
        return "<redlock.AsyncLock" + repr(self.lock)[len("<redlock.Lock"):]
