# SPDX-License-Identifier: BSD-3-Clause
# Exceptions of the redlock binding and check() / error(), the one place where a C error code becomes one.
# Each REDLOCK_E* code has its own class under RedlockError; built-in bases are added where they fit.
from __future__ import annotations

from typing import Dict, Optional, Type

from ._redlock import ffi, lib


class RedlockError(Exception):
    """Base of every error reported by the redlock C library.

    ``code`` is the negative ``REDLOCK_E*`` value, ``error_name`` its name,
    ``detail`` the library's description of this failure (for lock operations:
    which nodes said what), and ``resource`` the lock name, if any.
    """

    code: int = 0

    def __init__(self, message: str, *, code: Optional[int] = None, detail: str = "",
                 resource: Optional[str] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.detail = detail
        self.resource = resource

    @property
    def error_name(self) -> str:
        return str(ffi.string(lib.redlock_error_name(self.code)).decode("utf-8", "replace"))


class InvalidArgument(RedlockError, ValueError):
    """REDLOCK_EINVAL: a bad name, TTL, URL, option... (also a ValueError)."""
    code = lib.REDLOCK_EINVAL


class RedlockMemoryError(RedlockError, MemoryError):
    """REDLOCK_ENOMEM."""
    code = lib.REDLOCK_ENOMEM


class LockNotAcquired(RedlockError):
    """REDLOCK_ENOTACQUIRED: another owner holds the lock."""
    code = lib.REDLOCK_ENOTACQUIRED


class QuorumError(RedlockError):
    """REDLOCK_ENOQUORUM: too few nodes answered to decide."""
    code = lib.REDLOCK_ENOQUORUM


class NodesUnreachable(QuorumError, ConnectionError):
    """REDLOCK_EUNREACHABLE: a waiting acquire gave up because no quorum of nodes could
    be reached (connections refused, names that do not resolve, connects timing out) for
    the client's ``unreachable_timeout``. The detail names each node and what it said.

    A QuorumError, and a ConnectionError as redis-py raises when Redis is down."""
    code = lib.REDLOCK_EUNREACHABLE


class LockExpired(RedlockError):
    """REDLOCK_EEXPIRED: the lock's validity ran out."""
    code = lib.REDLOCK_EEXPIRED


class LockLost(RedlockError):
    """REDLOCK_ELOST: the lock was no longer ours on a majority (expired or taken over)."""
    code = lib.REDLOCK_ELOST


class LockTimeout(LockNotAcquired, TimeoutError):
    """REDLOCK_ETIMEDOUT: the wait ran out before the lock could be acquired.

    A LockNotAcquired (the lock was not acquired) and a TimeoutError."""
    code = lib.REDLOCK_ETIMEDOUT


class RedlockIOError(RedlockError, OSError):
    """REDLOCK_EIO: I/O error talking to nodes."""
    code = lib.REDLOCK_EIO


class ServerError(RedlockError):
    """REDLOCK_ESERVER: a node answered with an error (READONLY, OOM...)."""
    code = lib.REDLOCK_ESERVER


class AuthError(RedlockError):
    """REDLOCK_EAUTH: authentication failed."""
    code = lib.REDLOCK_EAUTH


class TLSError(RedlockError):
    """REDLOCK_ETLS: TLS failure."""
    code = lib.REDLOCK_ETLS


class NotSupported(RedlockError, NotImplementedError):
    """REDLOCK_ENOTSUP: not supported by this build (for example rediss:// URLs)."""
    code = lib.REDLOCK_ENOTSUP


class Cancelled(RedlockError):
    """REDLOCK_ECANCELED: the wait was cancelled with Lock.cancel()."""
    code = lib.REDLOCK_ECANCELED


class ExtensionLimit(RedlockError):
    """REDLOCK_ELIMIT: max_extensions or max_hold reached."""
    code = lib.REDLOCK_ELIMIT


class LockStateError(RedlockError, RuntimeError):
    """REDLOCK_ESTATE: the call does not fit the lock's state (release of a lock
    not held, acquire of a lock already held, a closed client...)."""
    code = lib.REDLOCK_ESTATE


class PermissionDenied(RedlockError, PermissionError):
    """REDLOCK_EPERM: a node refused a command the lock needs: its ACL user lacks it
    (NOPERM), or the command is disabled or renamed there. The client finds out on
    connecting, before it takes a lock it could not release. The detail names the node
    and the command. A RedlockError, and a built-in PermissionError."""
    code = lib.REDLOCK_EPERM


class LockAtRisk(RedlockError):
    """REDLOCK_EATRISK: not a failure, and never raised by a call: the at-risk notice
    that auto-extension gives ``on_lost`` while the lock is still held, when no extension
    has succeeded and its validity ends within the margin (see Lock.auto_extend()). Stop
    the work now; the loss, if it comes, is told after it with another class."""
    code = lib.REDLOCK_EATRISK


class FencedOut(RedlockError):
    """REDLOCK_EFENCED: the store refused a fenced write (Lock.fenced(), redlock.Fence):
    ``token`` is older than ``fence``, the highest token the resource has seen, so a
    later holder has written and this one must stop. Nothing was written."""
    code = lib.REDLOCK_EFENCED

    def __init__(self, message: str, *, token: int = 0, fence: int = 0, **kw) -> None:
        super().__init__(message, **kw)
        self.token = token
        self.fence = fence


_BY_CODE: Dict[int, Type[RedlockError]] = {
    cls.code: cls
    for cls in (InvalidArgument, RedlockMemoryError, LockNotAcquired, QuorumError, LockExpired,
                LockLost, LockTimeout, RedlockIOError, ServerError, AuthError, TLSError,
                NotSupported, Cancelled, ExtensionLimit, LockStateError, NodesUnreachable, PermissionDenied,
                LockAtRisk, FencedOut)
}


def strerror(code: int) -> str:
    """The library's static description of an error code."""
    return str(ffi.string(lib.redlock_strerror(code)).decode("utf-8", "replace"))


def check(code: int, detail: str = "", resource: Optional[str] = None) -> None:
    """Raises the exception for a C return code; returns for 0 (success). The
    detail comes from C, which masks every URL it shows."""
    if code != lib.REDLOCK_OK:
        raise error(code, detail, resource)


def error(code: int, detail: str = "", resource: Optional[str] = None) -> RedlockError:
    """The exception for a failure code, not raised: for failures reported by
    a callback (a lost auto-extended lock), raised later in the owner's thread."""
    cls = _BY_CODE.get(code, RedlockError)
    shown = resource if resource is None or len(resource) <= 80 else resource[:60] + "..."
    where = f"{shown!r}: " if shown is not None else ""
    return cls(f"{where}{_say_once(strerror(code), detail)}", code=code, detail=detail, resource=resource)


def _say_once(text: str, detail: str) -> str:
    """The code's text and C's detail, the cause said once. C starts some details with the
    code's own words ("authentication failed: 0 of 3 nodes granted...", "no quorum: ...",
    "not acquired: ..." under "lock not acquired: held by another owner"): that head is left
    out, the text says it. A head is the code's words when it is the text, its first clause, or
    the end of that clause of two words or more (one word alone, "failed", is not enough)."""
    if not detail or detail == text:
        return text
    head, sep, rest = detail.partition(": ")
    clause = text.partition(": ")[0]
    if sep and (head in (text, clause) or " " in head and clause.endswith(" " + head)):
        return f"{text}: {rest}" if rest else text
    return f"{text}: {detail}"
