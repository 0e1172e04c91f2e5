# SPDX-License-Identifier: BSD-3-Clause
# Exceptions of the redlock binding and check() / error(), the one place where a C error code becomes one.
# Each REDLOCK_E* code has its own class under RedlockError; built-in bases are added where they fit.
from __future__ import annotations

import re
from typing import Dict, Iterable, Optional, Tuple, Type

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
    """REDLOCK_ESERVER: a node answered with an error (NOPERM, READONLY, OOM...)."""
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


_BY_CODE: Dict[int, Type[RedlockError]] = {
    cls.code: cls
    for cls in (InvalidArgument, RedlockMemoryError, LockNotAcquired, QuorumError, LockExpired,
                LockLost, LockTimeout, RedlockIOError, ServerError, AuthError, TLSError,
                NotSupported, Cancelled, ExtensionLimit, LockStateError)
}


def strerror(code: int) -> str:
    """The library's static description of an error code."""
    return str(ffi.string(lib.redlock_strerror(code)).decode("utf-8", "replace"))


# -- no password in any output ------------------------------------------------------------
# The C library masks the password of every URL it prints, but only of URLs it could parse; a
# malformed one (redis://:pw without '@') may come back as written. So every text the binding
# shows is also scrubbed of the strings that may be secrets in the URLs it was given.

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def url_secrets(url: str) -> Tuple[str, ...]:
    """The parts of a node URL that may be a password: the user info before the last '@' (and
    its password part), or, with no '@', a "port" that is not a number (redis://:secret)."""
    m = _SCHEME.match(url)
    if not m:  # not a URL at all: maybe a password pasted in the wrong place
        return (url,) if url else ()
    rest = url[m.end():]
    found = []
    if "@" in rest:
        userinfo = rest[:rest.rindex("@")]
        found.append(userinfo)
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    else:
        authority = re.split(r"[/?#]", rest, 1)[0]
        if ":" in authority and not authority.startswith("["):
            tail = authority.split(":", 1)[1]
            if not tail.isdigit():
                found.append(tail)
        # unix:///path?password=... is not a form the library takes, but would be a secret.
        for key in ("password=", "pass=", "auth="):
            i = rest.find(key)
            if i >= 0:
                found.append(re.split(r"[&#]", rest[i + len(key):], 1)[0])
    # Longest first, so that a password inside the user info is masked with it.
    return tuple(sorted({s for s in found if s}, key=len, reverse=True))


def mask_url(url: str) -> str:
    """The URL with what url_secrets() finds replaced by ***."""
    return scrub(url, url_secrets(url))


def scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, "***")
    return text


def check(code: int, detail: str = "", resource: Optional[str] = None,
          secrets: Tuple[str, ...] = ()) -> None:
    """Raises the exception for a C return code; returns for 0 (success)."""
    if code != lib.REDLOCK_OK:
        raise error(code, detail, resource, secrets)


def error(code: int, detail: str = "", resource: Optional[str] = None,
          secrets: Tuple[str, ...] = ()) -> RedlockError:
    """The exception for a failure code, not raised: for failures reported by
    a callback (a lost auto-extended lock), raised later in the owner's thread.
    ``secrets`` are removed from the detail (see url_secrets)."""
    cls = _BY_CODE.get(code, RedlockError)
    detail = scrub(detail, secrets)
    text = strerror(code)
    shown = resource if resource is None or len(resource) <= 80 else resource[:60] + "..."
    where = f"{shown!r}: " if shown is not None else ""
    message = f"{where}{text}: {detail}" if detail and detail != text else f"{where}{text}"
    return cls(message, code=code, detail=detail, resource=resource)
