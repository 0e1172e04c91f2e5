# SPDX-License-Identifier: BSD-3-Clause
# The public classes, gathered: the client (_client.py), Lock (_lock.py), AsyncLock (_async.py),
# and redlock(), a client and a lock for one block. Argument conversion is in _convert.py.
# Python maps arguments, lifetimes and exceptions; every locking decision is C's.
from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator, Optional

from ._async import AsyncLock
from ._client import Redlock
from ._convert import DEFAULT_TTL, _UNSET, Name, Seconds
from ._lock import Lock, OnLost

__all__ = ["Redlock", "Lock", "AsyncLock", "redlock"]


@contextlib.contextmanager
def redlock(name: Name, *, nodes: Iterable[Name], ttl: Seconds = DEFAULT_TTL, blocking: bool = True,
            timeout: Optional[Seconds] = _UNSET, wait: Optional[Seconds] = _UNSET,
            auto_extend: bool = False, on_lost: Optional[OnLost] = None,
            **options: Any) -> Iterator[Lock]:
    """``with redlock(name, nodes=[...], ttl=30.0) as lock:`` holds ``name``
    for the block on a client made for it, waiting as Lock.acquire() does.
    ``options`` are Redlock()'s (``max_hold`` among them, which also bounds
    auto-extension)."""
    with Redlock(nodes, **options) as client:
        with client.lock(name, ttl=ttl, blocking=blocking, timeout=timeout, wait=wait,
                         auto_extend=auto_extend, on_lost=on_lost) as lock:
            yield lock
