# SPDX-License-Identifier: BSD-3-Clause
# Argument conversion at the boundary: seconds to milliseconds, str to UTF-8, and the wait of an
# acquire. Types, signs and what fits the C field are checked here; the ranges of the options are
# C's, which says what is wrong (ttl's one day and drift_factor's [0, 0.5) are also said here, in
# the argument's Python name and unit).
from __future__ import annotations

import datetime
import math
import numbers
import os
from typing import Any, Optional, Union

from ._errors import InvalidArgument
from ._redlock import ffi, lib

Seconds = Union[float, int, datetime.timedelta]
Name = Union[str, bytes]
Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

_U32_MAX = 2**32 - 1
_WAIT_NONE: int = lib.REDLOCK_WAIT_NONE
_WAIT_DEFAULT: int = lib.REDLOCK_WAIT_DEFAULT
_WAIT_FOREVER: int = lib.REDLOCK_WAIT_FOREVER
_ERRBUF_SIZE = 1024
_NODE_MSG_SIZE = 512
_NO_WAKE: int = lib.REDLOCK_OPT_NO_WAKE
_WAKE: int = lib.REDLOCK_OPT_WAKE
_FAIR: int = lib.REDLOCK_OPT_FAIR


class _Unset:
    def __repr__(self) -> str:
        return "<default>"


_UNSET: Any = _Unset()


def _invalid(message: str) -> InvalidArgument:
    return InvalidArgument(message, detail=message)


def _show(value: Any) -> str:
    # A 300-digit int is shown by its start and length, not in full.
    r = repr(value)
    return r if len(r) <= 40 else f"{r[:24]}... ({len(r)} characters)"


_MAX_TTL_MS: int = lib.REDLOCK_MAX_TTL_MS
_MAX_WAIT_MS: int = lib.REDLOCK_MAX_WAIT_MS


def _c_defaults() -> Any:
    opts = ffi.new("redlock_options *")
    lib.redlock_options_init(opts)
    return opts


# Redlock()'s keyword defaults: C's (redlock_options_init), in seconds, read rather than retyped.
_C_OPTS = _c_defaults()
DEFAULT_RETRY_COUNT: int = _C_OPTS.retry_count
DEFAULT_RETRY_DELAY: float = _C_OPTS.retry_delay_ms / 1000
DEFAULT_RETRY_JITTER: float = _C_OPTS.retry_jitter_ms / 1000
DEFAULT_DRIFT_FACTOR: float = _C_OPTS.drift_factor
DEFAULT_DRIFT_MIN: float = _C_OPTS.drift_min_ms / 1000
DEFAULT_NODE_TIMEOUT: float = _C_OPTS.node_timeout_ms / 1000
DEFAULT_CONNECT_TIMEOUT: float = _C_OPTS.connect_timeout_ms / 1000
del _C_OPTS
# The TTL of a lock made without one: the binding's own choice (C's calls always name theirs;
# pottery's default, docs/defaults.md), written once for every entry point.
DEFAULT_TTL: float = 10.0
_WHY_U32 = "the largest value of the C field, a uint32_t of milliseconds"


def _real(value: Any, what: str, unit: str) -> float:
    """A non-negative real as a float, math.inf for a number too large for a float (the
    caller's range check then refuses it); the sign of such numbers is kept. Refuses NaN,
    infinities and negative values with an InvalidArgument (a ValueError)."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be {unit}, not {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:  # an int (or Fraction) too large for a float: its sign decides
        if value < 0:
            raise _invalid(f"{what} must not be negative, got {_show(value)}") from None
        return math.inf
    if math.isnan(v):
        raise _invalid(f"{what} must be {unit}, not NaN")
    if v < 0:
        raise _invalid(f"{what} must not be negative, got {_show(value)}")
    if math.isinf(v):
        raise _invalid(f"{what} must be finite, got {_show(value)}")
    return v


def _ms(value: Any, what: str, limit_ms: int = _U32_MAX, why: str = _WHY_U32) -> int:
    """Seconds (int, float or timedelta) as whole milliseconds in [0, limit_ms]."""
    if (type(value) is float or type(value) is int) and 0 <= value <= limit_ms / 1000.0:
        return int(round(value * 1000.0))  # the common case, without ABC checks
    v = _real(value, what, "a number of seconds (int, float or timedelta)")
    ms = v * 1000.0
    if ms > limit_ms:
        raise _invalid(f"{what} must be at most {limit_ms / 1000.0:g} seconds ({why}), "
                       f"got {_show(value)}")
    return int(round(ms))


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < 0:
        raise _invalid(f"{what} must not be negative, got {_show(value)}")
    if value > _U32_MAX:
        raise _invalid(f"{what} must be at most {_U32_MAX} (a uint32_t in C), got {_show(value)}")
    return int(value)


def _drift_factor(value: Any) -> float:
    v = _real(value, "drift_factor", "a float")
    if v >= lib.REDLOCK_MAX_DRIFT_FACTOR:
        raise _invalid(f"drift_factor must be in [0, {lib.REDLOCK_MAX_DRIFT_FACTOR:g}): the drift allowance is ttl * factor, "
                       f"got {_show(value)}")
    return v


def _ttl_ms(value: Any, what: str = "ttl") -> int:
    ms = _ms(value, what, _MAX_TTL_MS,
             "REDLOCK_MAX_TTL_MS, one day; extend the lock, or auto_extend=True, to hold it longer")
    if ms == 0:
        raise _invalid(f"{what} must be at least 0.001 seconds (one millisecond), got {_show(value)}")
    return ms


def _cstr(value: Any, what: str, secret: bool = False) -> bytes:
    """A str (encoded as UTF-8) or bytes, as a C string. With secret=True (URLs) the value is
    never shown in an error."""
    shown = "(not shown: it may hold a password)" if secret else None
    if isinstance(value, str):
        try:
            data = value.encode("utf-8")
            reason = None
        except UnicodeEncodeError as err:
            reason = err.reason
        if reason is not None:  # raised here, not in the handler: no __context__ holding value
            raise _invalid(f"{what} {shown or repr(value)} cannot be encoded as UTF-8: {reason}")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")
    if b"\0" in data:
        # C would silently stop at the NUL and lock a different name.
        raise _invalid(f"{what} {shown or repr(value)} contains a NUL character")
    return data


def _cpath(value: Any, what: str) -> Any:
    """An optional file system path as a C string (NULL for None); the caller keeps it alive."""
    if value is None:
        return ffi.NULL
    try:
        data = os.fsencode(value)
    except TypeError:
        raise TypeError(f"{what} must be a path (str, bytes or os.PathLike), not {type(value).__name__}") from None
    if b"\0" in data:
        raise _invalid(f"{what} {value!r} contains a NUL character")
    return ffi.new("char[]", data)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, not {type(value).__name__}")
    return value


def _callable(value: Any, what: str) -> Any:
    if value is not None and not callable(value):
        raise TypeError(f"{what} must be callable or None, not {type(value).__name__}")
    return value


def _max_hold_ms(value: Any) -> int:
    """auto-extension's bound as C's max_hold_ms (0: C's default of one hour)."""
    if value is None:
        return 0
    ms = _ms(value, "max_hold")
    if ms == 0:  # C would read 0 as "the default"
        raise _invalid(f"max_hold must be positive, got {_show(value)}")
    return ms


def _unreachable_ms(value: Any) -> int:
    """unreachable_timeout as C's unreachable_ms: unset is C's default (0: five connect
    timeouts), None waits on however long no quorum can be reached."""
    if value is _UNSET:
        return 0
    if value is None:
        return int(lib.REDLOCK_UNREACHABLE_NEVER)
    ms = _ms(value, "unreachable_timeout", _MAX_WAIT_MS, "REDLOCK_MAX_WAIT_MS, seven days")
    if ms == 0:  # C would read 0 as "the default"
        raise _invalid(f"unreachable_timeout must be at least 0.001 seconds (None: wait on), "
                       f"got {_show(value)}")
    return ms


# How an acquire waits: _NO_WAIT (one attempt), _POLICY (the client's or lock's retry_count and
# wait: the legacy wait=None), or a number of seconds (None: no deadline).
_NO_WAIT: Any = ("no wait",)
_POLICY: Any = ("policy",)


def _timeout(value: Any) -> Optional[float]:
    """threading.Lock's timeout: -1 (or None) waits without a deadline, else seconds >= 0."""
    if value is None:
        return None
    if (type(value) is int or type(value) is float) and value == -1:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value < 0:
        raise ValueError(f"timeout must be -1 (wait without a deadline) or a number of seconds "
                         f">= 0, got {_show(value)}")
    seconds = _real(value, "timeout", "a number of seconds (int, float or timedelta), or -1")
    if seconds > 1e12:  # beyond any deadline the monotonic clock can add up
        raise _invalid(f"timeout must be at most 1e12 seconds (-1 waits without a deadline), "
                       f"got {_show(value)}")
    return seconds


def _wait_mode(blocking: Any, timeout: Any, wait: Any) -> Any:
    """The wait of an acquire from threading.Lock's (blocking, timeout) pair, or from the
    older ``wait`` argument (None: the retry policy; seconds; 0: one attempt)."""
    if not isinstance(blocking, bool):
        raise TypeError(f"blocking must be a bool, not {type(blocking).__name__} (the TTL is "
                        "given as ttl=...)")
    if wait is not _UNSET:
        if timeout is not _UNSET and timeout != -1:
            raise ValueError("give timeout or wait, not both (wait is the older spelling)")
        if not blocking:
            if wait is not None:
                raise ValueError("wait cannot be given with blocking=False")
            return _NO_WAIT
        if wait is None:
            return _POLICY
        # Older spelling of timeout, without its -1.
        seconds = _real(wait, "wait", "a number of seconds (int, float or timedelta) or None")
        if seconds > 1e12:
            raise _invalid(f"wait must be at most 1e12 seconds, got {_show(wait)}")
        return seconds if seconds > 0 else _NO_WAIT
    if timeout is _UNSET:
        timeout = -1
    if not blocking:
        if timeout is not None and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        return _NO_WAIT
    seconds = _timeout(timeout)
    return _NO_WAIT if seconds == 0 else seconds


def _describe_wait(mode: Any) -> str:
    if mode is _NO_WAIT:
        return "blocking=False"
    if mode is _POLICY:
        return "wait=None"
    return "timeout=-1" if mode is None else f"timeout={mode:g}"
