# SPDX-License-Identifier: BSD-3-Clause
# redlock: Redlock distributed locks over N Redis/Valkey nodes, a thin cffi binding of libredlock.
# Usage: `with redlock("name", nodes=[...], ttl=30.0) as lock: ...`; see docs/python.md.
from __future__ import annotations

from ._callbacks import Event, EventType, ListenerState, NodeOutcome, NodeResult
from ._core import AsyncLock, Lock, Redlock, redlock
from ._election import Election, Leader, Leadership
from ._errors import (
    AuthError,
    Cancelled,
    ExtensionLimit,
    FencedOut,
    InvalidArgument,
    LockAtRisk,
    LockExpired,
    LockLost,
    LockNotAcquired,
    LockStateError,
    LockTimeout,
    NodesUnreachable,
    NotSupported,
    PermissionDenied,
    QuorumError,
    RedlockError,
    RedlockIOError,
    RedlockMemoryError,
    ServerError,
    TLSError,
    strerror,
)
from ._rwlock import AsyncReadLock, AsyncWriteLock, ReadLock, RWLock, WriteLock
from ._semaphore import AsyncSemaphore, Permit, Semaphore
from ._multilock import MultiLock
from ._fence import Fence, fence_key
from ._fence_sql import fenced_update, fenced_upsert
from ._redlock import ffi as _ffi
from ._redlock import lib as _lib

# The version of the header this module was compiled against (the one version source)...
__version__ = f"{_lib.REDLOCK_VERSION_MAJOR}.{_lib.REDLOCK_VERSION_MINOR}.{_lib.REDLOCK_VERSION_PATCH}"
# ...and of the C library actually running (differs only with REDLOCK_USE_SYSTEM_LIB=1 builds).
LIBRARY_VERSION: str = _ffi.string(_lib.redlock_version()).decode("ascii", "replace")

__all__ = [
    "Redlock", "Lock", "AsyncLock", "redlock", "strerror", "LIBRARY_VERSION",
    "Event", "EventType", "ListenerState", "NodeOutcome", "NodeResult",
    "RedlockError", "InvalidArgument", "RedlockMemoryError", "LockNotAcquired", "QuorumError",
    "LockExpired", "LockLost", "LockTimeout", "RedlockIOError", "ServerError", "AuthError",
    "TLSError", "NotSupported", "Cancelled", "ExtensionLimit", "LockStateError", "NodesUnreachable",
    "PermissionDenied", "LockAtRisk",
    "Election", "Leader", "Leadership",
    "RWLock", "ReadLock", "WriteLock", "AsyncReadLock", "AsyncWriteLock",
    "Semaphore", "AsyncSemaphore", "Permit",
    "MultiLock",
    "Fence", "fence_key", "FencedOut", "fenced_upsert", "fenced_update",
]
