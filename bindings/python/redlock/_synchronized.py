# SPDX-License-Identifier: BSD-3-Clause
# Redlock.synchronized(): a decorator that runs a function, plain or async, under a lock; it
# waits for the lock, or with blocking=False skips the call when another process holds it.
from __future__ import annotations

import functools
import inspect
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, Union

from ._convert import _UNSET, Name, Seconds, _callable, _ttl_ms
from ._errors import LockNotAcquired

if TYPE_CHECKING:
    from ._client import Redlock
    from ._lock import Lock

__all__ = ["synchronized"]

log = logging.getLogger("redlock")

F = TypeVar("F", bound=Callable[..., Any])
NameArg = Union[Name, Callable[..., Name]]


def _lock_name(name: NameArg, args: Any, kwargs: Any) -> Name:
    return name(*args, **kwargs) if callable(name) else name


def _keep_or_release(lock: "Lock", started: float, min_hold: float) -> None:
    """Releases the lock, or, when it was held less than min_hold seconds,
    leaves it to expire at min_hold after the start (ShedLock's lockAtLeastFor):
    a late duplicate of the same scheduled run then finds it still taken."""
    left = min_hold - (time.monotonic() - started)
    if left <= 0.001:
        lock.release()
        return
    lock.stop_auto_extend()
    lock.extend(left)
    lock._acquired = False  # leave the key to expire; a Lock's finalizer frees memory only


async def _keep_or_release_async(lock: "Lock", started: float, min_hold: float) -> None:
    """_keep_or_release for asyncio: the round on C's acquire thread, not in an executor."""
    left = min_hold - (time.monotonic() - started)
    if left <= 0.001:
        await lock.release_async()
        return
    lock.stop_auto_extend()
    await lock.extend_async(left)
    lock._acquired = False


def synchronized(client: "Redlock", name: NameArg, *, blocking: bool = True,
                 timeout: Optional[Seconds] = _UNSET, ttl: Seconds = 30.0,
                 auto_extend: bool = True, min_hold: Optional[Seconds] = None,
                 on_skip: Optional[Callable[..., Any]] = None,
                 **lock_kwargs: Any) -> Callable[[F], F]:
    """See Redlock.synchronized()."""
    if name is None:
        raise TypeError("the lock name must be str, bytes or a callable, not None")
    _callable(on_skip, "on_skip")
    hold = 0.0 if min_hold is None else _ttl_ms(min_hold, "min_hold") / 1000.0
    options = dict(lock_kwargs, ttl=ttl, blocking=blocking, timeout=timeout, auto_extend=auto_extend)
    # Build one Lock now, so that a bad argument raises at decoration, not at the first call.
    client.lock(name if not callable(name) else "redlock:synchronized:probe", **options)

    def decorate(fn: F) -> F:
        def skipped(lock: "Lock", args: Any, kwargs: Any) -> Any:
            err = lock.last_error
            assert err is not None
            if blocking or not isinstance(err, LockNotAcquired):
                # Nodes down, no quorum, or a waiting call that timed out: an error, not a skip.
                raise err
            log.info("redlock: skipped %s: %r is held elsewhere", fn.__qualname__, lock.name)
            wrapper.skips += 1
            return None if on_skip is None else on_skip(*args, **kwargs)

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                alock = client.alock(_lock_name(name, args, kwargs), **options)
                if not await alock.acquire():
                    result = skipped(alock.lock, args, kwargs)
                    return await result if inspect.isawaitable(result) else result
                started = time.monotonic()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    if hold:
                        await _keep_or_release_async(alock.lock, started, hold)
                    else:
                        await alock.release()
            wrapper: Any = awrapper
        else:
            @functools.wraps(fn)
            def swrapper(*args: Any, **kwargs: Any) -> Any:
                lock = client.lock(_lock_name(name, args, kwargs), **options)
                if not lock.acquire():
                    return skipped(lock, args, kwargs)
                started = time.monotonic()
                try:
                    return fn(*args, **kwargs)
                finally:
                    if hold:
                        _keep_or_release(lock, started, hold)
                    else:
                        lock.release()
            wrapper = swrapper
        wrapper.skips = 0
        return wrapper  # type: ignore[no-any-return]

    return decorate

