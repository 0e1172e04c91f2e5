# SPDX-License-Identifier: BSD-3-Clause
# The Redlock client and Lock classes: a thin layer over the C ABI in c/include/redlock.h.
# Python maps arguments (seconds to milliseconds, str to UTF-8), lifetimes and exceptions; every locking decision is C's.
from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import numbers
import os
import threading
import time
from types import TracebackType
from typing import Any, Callable, Iterable, Iterator, Optional, Tuple, Type, Union

from . import _sigwake
from ._callbacks import (_NO_RTT, Event, EventSink, ListenerState, NodeOutcome, NodeResult, Watch,
                         _enum, finalize, reraise_interrupt)
from ._errors import (Cancelled, InvalidArgument, LockExpired, LockNotAcquired, LockStateError,
                      RedlockError, check, error)
from ._redlock import ffi, lib

__all__ = ["Redlock", "Lock", "AsyncLock", "redlock"]

Seconds = Union[float, int, datetime.timedelta]
Name = Union[str, bytes]
Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

_U32_MAX = 2**32 - 1
_I64_MAX = 2**63 - 1
_WAIT_NONE: int = lib.REDLOCK_WAIT_NONE
_WAIT_DEFAULT: int = lib.REDLOCK_WAIT_DEFAULT
_ERRBUF_SIZE = 1024
_NODE_MSG_SIZE = 512
_NO_WAKE: int = lib.REDLOCK_OPT_NO_WAKE
_FAIR: int = lib.REDLOCK_OPT_FAIR

OnEvent = Callable[[Event], Any]
OnLost = Callable[["Lock", RedlockError], Any]


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
    if v >= 0.5:
        raise _invalid(f"drift_factor must be in [0, 0.5): the drift allowance is ttl * factor, "
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


# Failures that waiting longer could have ended: acquire() reports them as False (the C
# library retries exactly these). Everything else (EINVAL, EAUTH, ETLS, ESTATE...) raises.
_RETRYABLE = frozenset((lib.REDLOCK_ENOTACQUIRED, lib.REDLOCK_ETIMEDOUT, lib.REDLOCK_ENOQUORUM,
                        lib.REDLOCK_EEXPIRED, lib.REDLOCK_EIO, lib.REDLOCK_ESERVER))


# -- fork safety: a lock belongs to the process that acquired it ----------------------------
_pid = os.getpid()


def _after_fork_in_child() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _free_in_owner(free: Callable[[Any], None]) -> Callable[[Any], None]:
    """A finalizer that frees only in the process that made the object: a forked child leaves
    its copy alone (its mutexes may be held by threads that do not exist there)."""
    owner = _pid

    def run(ptr: Any) -> None:
        if _pid == owner:
            free(ptr)

    return run


class _CancelToken:
    """Marks one acquire call as cancelled, so a REDLOCK_ECANCELED that follows
    is told apart from one caused by a signal."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


def _add_note(exc: BaseException, note: str) -> None:
    add_note = getattr(exc, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(note)


async def _wait_through_cancel(fut: "asyncio.Future[Any]") -> Any:
    """Awaits a future run by a thread to its end even if the awaiting task is
    cancelled meanwhile (a thread cannot be stopped), then lets the
    cancellation through."""
    interrupted = False
    while not fut.done():
        try:
            await asyncio.wait({fut})
        except asyncio.CancelledError:
            interrupted = True
    if interrupted:
        fut.exception()  # retrieved: the cancellation wins
        raise asyncio.CancelledError
    return fut.result()


class Redlock:
    """A client over N independent Redis/Valkey nodes (thread-safe).

    Durations are in seconds (float, int or timedelta). No connection is made
    here: nodes are connected on first use. ``wait`` (None: no deadline) bounds
    how long an acquire with the default policy retries; ``max_hold`` (None:
    unbounded) bounds the total hold time reachable by extending.

    A wait for a lock that is held elsewhere goes on as asked; a wait during
    which no quorum of nodes can even be reached (connection refused, a host
    name that does not resolve, connects timing out) raises
    :class:`NodesUnreachable` (a ConnectionError) after ``unreachable_timeout``
    seconds: by default five connect timeouts (1 s with the defaults); None
    waits on.

    TLS (``rediss://`` nodes): ``tls_ca_file`` / ``tls_ca_dir`` (None for both: the
    system's CAs), ``tls_cert_file`` + ``tls_key_file`` for mutual TLS,
    ``tls_server_name`` (the name every certificate must carry instead of the URL's
    host). Certificates are always verified unless ``tls_insecure_skip_verify=True``
    (tests only). ``use_functions=True`` releases and extends with FCALL on the
    library that :meth:`load_functions` installs, so that lock users need no EVAL.
    See docs/security.md.

    ``fencing=True`` makes every acquisition mint a fencing token
    (:attr:`Lock.token`), at one more round trip per acquisition.

    A waiting acquire is woken by the holder's release (``wake=True``, the
    default) instead of sleeping out its retry delay: the client listens for
    releases on one more connection per node (:meth:`listener_states`).
    ``wake=False`` only polls. ``fair=True`` gives a lock that becomes free to
    the waiter that has waited longest (every contender of a name should use
    it). Both are the defaults of this client's locks, which may override them.

    ``on_event(event)`` is the metrics hook: it receives an :class:`Event` for
    every acquire attempt, extension, loss, release and node failure of this
    client's locks, on the thread that ran the round (often the client's
    auto-extend thread). It must be quick and thread-safe and must not call
    methods of the lock concerned; what it raises is logged, never propagated.
    """

    def __init__(self, nodes: Iterable[Name], *, retry_count: int = 3, retry_delay: Seconds = 0.0,
                 retry_jitter: Seconds = 0.2, wait: Optional[Seconds] = None,
                 drift_factor: float = 0.01, drift_min: Seconds = 0.002,
                 node_timeout: Seconds = 0.05, connect_timeout: Seconds = 0.2,
                 unreachable_timeout: Optional[Seconds] = _UNSET,
                 key_prefix: Name = "", max_extensions: int = 0,
                 max_hold: Optional[Seconds] = None,
                 tls_ca_file: Optional[Path] = None, tls_ca_dir: Optional[Path] = None,
                 tls_cert_file: Optional[Path] = None, tls_key_file: Optional[Path] = None,
                 tls_server_name: Optional[str] = None, tls_insecure_skip_verify: bool = False,
                 use_functions: bool = False, fencing: bool = False,
                 on_event: Optional[OnEvent] = None, wake: bool = True, fair: bool = False) -> None:
        self._ptr: Any = None
        self._events: Optional[EventSink] = None
        self._mutex = threading.Lock()
        if isinstance(nodes, (str, bytes, bytearray)):
            raise TypeError("nodes must be a list of URLs such as ['redis://host1:6379', "
                            "'redis://host2:6379', ...], not a single string")
        try:
            node_list = list(nodes)
        except TypeError:
            raise TypeError(f"nodes must be a list of URLs, not {type(nodes).__name__}") from None
        urls = [_cstr(u, f"node {i}", secret=True) for i, u in enumerate(node_list)]

        opts = ffi.new("redlock_options *")
        lib.redlock_options_init(opts)
        opts.retry_count = _count(retry_count, "retry_count")
        opts.retry_delay_ms = _ms(retry_delay, "retry_delay", _MAX_TTL_MS, "one day")
        opts.retry_jitter_ms = _ms(retry_jitter, "retry_jitter", _MAX_TTL_MS, "one day")
        opts.wait_ms = 0 if wait is None else _ms(wait, "wait", _MAX_WAIT_MS,
                                                  "REDLOCK_MAX_WAIT_MS, seven days")
        opts.drift_factor = _drift_factor(drift_factor)
        opts.drift_min_ms = _ms(drift_min, "drift_min", 60000, "one minute")
        node_ms = _ms(node_timeout, "node_timeout", 600000, "ten minutes")
        if node_ms == 0:
            raise _invalid(f"node_timeout must be at least 0.001 seconds, got {_show(node_timeout)}")
        opts.node_timeout_ms = node_ms
        opts.connect_timeout_ms = _ms(connect_timeout, "connect_timeout", 600000, "ten minutes")
        opts.unreachable_ms = _unreachable_ms(unreachable_timeout)
        prefix = ffi.new("char[]", _cstr(key_prefix, "key_prefix"))
        opts.key_prefix = prefix
        self.key_prefix = ffi.string(prefix).decode("utf-8", "replace")
        opts.max_extensions = _count(max_extensions, "max_extensions")
        if max_hold is not None and _ms(max_hold, "max_hold") == 0:
            raise _invalid(f"max_hold must be positive (None: unbounded), got {_show(max_hold)}")
        opts.max_hold_ms = 0 if max_hold is None else _ms(max_hold, "max_hold")
        # Kept alive until the call returns; the C library copies what it keeps.
        tls = [_cpath(tls_ca_file, "tls_ca_file"), _cpath(tls_ca_dir, "tls_ca_dir"),
               _cpath(tls_cert_file, "tls_cert_file"), _cpath(tls_key_file, "tls_key_file"),
               ffi.NULL if tls_server_name is None
               else ffi.new("char[]", _cstr(tls_server_name, "tls_server_name"))]
        (opts.tls_ca_file, opts.tls_ca_dir, opts.tls_cert_file, opts.tls_key_file,
         opts.tls_server_name) = tls
        opts.tls_insecure_skip_verify = int(_flag(tls_insecure_skip_verify, "tls_insecure_skip_verify"))
        opts.flags = ((lib.REDLOCK_OPT_FUNCTIONS if _flag(use_functions, "use_functions") else 0)
                      | (lib.REDLOCK_OPT_FENCING if _flag(fencing, "fencing") else 0)
                      | (0 if _flag(wake, "wake") else _NO_WAKE)
                      | (_FAIR if _flag(fair, "fair") else 0))
        sink = None
        if _callable(on_event, "on_event") is not None:
            sink = EventSink(on_event)
            opts.on_event = lib._redlock_py_on_event
            opts.on_event_userdata = sink.userdata
            opts.on_event_userdata_free = lib._redlock_py_on_event_free

        c_urls = [ffi.new("char[]", u) for u in urls]  # kept alive through the call
        url_array = ffi.new("const char *[]", c_urls) if c_urls else ffi.NULL
        out = ffi.new("redlock_client **")
        errbuf = ffi.new("char[]", _ERRBUF_SIZE)
        rc = lib.redlock_client_open(out, url_array, len(c_urls), opts, errbuf, _ERRBUF_SIZE)
        if rc and sink is not None:
            sink.discard()
        check(rc, ffi.string(errbuf).decode("utf-8", "replace"))
        # Masked by C, which shows no URL's user info anywhere, however malformed
        # (c/common/url.c): for node reports, events and `nodes`.
        self._node_urls: Tuple[str, ...] = tuple(
            ffi.string(lib.redlock_client_node_url(out[0], i)).decode("utf-8", "replace")
            for i in range(lib.redlock_client_node_count(out[0])))
        if sink is not None:
            sink.node_urls = self._node_urls  # before any lock, so before any event
            self._events = sink
        self._ptr = ffi.gc(out[0], _free_in_owner(lib.redlock_client_free))

    @property
    def nodes(self) -> Tuple[str, ...]:
        """The node URLs, in order, with any password masked (``redis://***@host:6379``)."""
        return self._node_urls

    # -- lifetime --------------------------------------------------------
    def close(self) -> None:
        """Drops this client. Locks made from it stay usable until they are
        garbage collected (the C library counts references). Idempotent."""
        with self._mutex:
            ptr, self._ptr = self._ptr, None
        if ptr is not None:
            ffi.release(ptr)

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def __enter__(self) -> "Redlock":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else f"{len(self.nodes)} nodes"
        return f"<redlock.Redlock {state}>"

    @property
    def node_count(self) -> int:
        with self._mutex:
            if self._ptr is None:
                return 0
            return int(lib.redlock_client_node_count(self._ptr))

    def load_functions(self) -> None:
        """Loads (FUNCTION LOAD REPLACE) the "redlock" function library that clients made with
        ``use_functions=True`` call, on every node. An administrator runs it once per node, with
        a client whose URLs carry a user allowed FUNCTION LOAD. Raises the commonest failure
        (AuthError, ServerError, TLSError, QuorumError) with every node's answer if any node
        did not load it."""
        errbuf = ffi.new("char[]", 4096)
        with self._mutex:  # close() must not free the client under the call
            if self._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed")
            rc = lib.redlock_client_load_functions(self._ptr, errbuf, 4096)
        check(rc, ffi.string(errbuf).decode("utf-8", "replace"))

    def listener_states(self) -> Tuple[ListenerState, ...]:
        """The state of this client's wake-up listener on each node, in the order of
        :attr:`nodes`: OFF until the first waiting acquire (and always with wake=False),
        then CONNECTING, READY, DOWN (reconnecting; waiters poll meanwhile) or REFUSED
        (the node refused SUBSCRIBE: an ACL without the channel ``&redlock:wake:*``).
        :meth:`listener_state` also gives why a listener is down or refused."""
        return tuple(self.listener_state(i)[0] for i in range(len(self._node_urls)))

    def listener_state(self, node: int) -> Tuple[ListenerState, str]:
        """Node ``node``'s wake-up listener (an index into :attr:`nodes`): its
        :class:`ListenerState` and why it is down or refused (``""`` otherwise)."""
        if isinstance(node, bool) or not isinstance(node, numbers.Integral):
            raise TypeError(f"node must be an int index into nodes, not {type(node).__name__}")
        if not 0 <= node < len(self._node_urls):
            raise IndexError(f"node {node} out of range: the client has {len(self._node_urls)} nodes")
        buf = ffi.new("char[]", _NODE_MSG_SIZE)
        with self._mutex:  # close() must not free the client under the call
            if self._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed")
            state = lib.redlock_client_listener_state(self._ptr, int(node), buf, _NODE_MSG_SIZE)
        check(min(state, 0))
        return _enum(ListenerState, state), ffi.string(buf).decode("utf-8", "replace")

    def _new_lock(self, name: bytes, display: Optional[str], watch: Watch) -> Any:
        out = ffi.new("redlock_lock **")
        with self._mutex:  # close() must not free the client under redlock_lock_new
            if self._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed",
                                     resource=display)
            rc = lib.redlock_lock_new(out, self._ptr, name)
        if rc:
            check(rc, f"redlock_lock_new refused the {len(name)}-byte name (names are 1 to "
                      f"{lib.REDLOCK_MAX_RESOURCE_LEN} bytes)", display)

        # Frees memory only (no network I/O). The watch is dropped after C
        # returns: freeing stops auto-extension, waiting for an extension
        # under way, which may still report. (The client's event sink is
        # C's to let go, with the client's last lock.)
        def free_lock(ptr: Any) -> None:
            lib.redlock_lock_free(ptr)
            watch.disarm()

        return ffi.gc(out[0], lambda ptr: finalize(lambda: free_lock(ptr)))

    # -- locks -----------------------------------------------------------
    def lock(self, name: Name, *, ttl: Seconds = 10.0, blocking: bool = True,
             timeout: Optional[Seconds] = _UNSET, wait: Optional[Seconds] = _UNSET,
             auto_extend: bool = False, max_hold: Optional[Seconds] = None,
             on_lost: Optional[OnLost] = None, retry_count: Optional[int] = None,
             retry_delay: Optional[Seconds] = None, retry_jitter: Optional[Seconds] = None,
             drift_factor: Optional[float] = None, drift_min: Optional[Seconds] = None,
             wake: Optional[bool] = None, fair: Optional[bool] = None) -> "Lock":
        """A Lock on ``name``, not yet acquired: use it as ``with`` context
        manager, or call acquire()/release() (threading.Lock's shape).

        ``blocking`` and ``timeout`` are what acquire() and ``with`` use when
        given nothing: by default they wait until the lock is free. ``wait``
        is the older spelling (None: the retry_count policy). The retry and
        drift arguments, ``wake`` and ``fair`` override the client's options
        for this lock only (None: the client's).
        auto_extend=True keeps each acquisition alive in the background (see
        Lock.auto_extend(), which takes ``max_hold`` and ``on_lost``)."""
        return Lock(self, name, ttl=ttl, blocking=blocking, timeout=timeout, wait=wait,
                    auto_extend=auto_extend, max_hold=max_hold, on_lost=on_lost,
                    retry_count=retry_count, retry_delay=retry_delay, retry_jitter=retry_jitter,
                    drift_factor=drift_factor, drift_min=drift_min, wake=wake, fair=fair)

    def acquire(self, name: Name, **kwargs: Any) -> "Lock":
        """Acquires ``name`` and returns the held Lock; call its release().
        Takes lock()'s arguments. Unlike Lock.acquire(), which returns False,
        this raises when the lock could not be had: LockNotAcquired, LockTimeout
        (a LockNotAcquired), QuorumError..."""
        lock = self.lock(name, **kwargs)
        lock._acquire_or_raise()
        return lock

    def alock(self, name: Name, **kwargs: Any) -> "AsyncLock":
        """An AsyncLock on ``name`` (asyncio's shape): ``async with client.alock(...)``,
        ``await lock.acquire()``... Takes lock()'s arguments."""
        return AsyncLock(self, name, **kwargs)


class Lock:
    """One lock on one resource, reusable: acquire, release, acquire again.

    The shape of threading.Lock (and of pottery's Redlock): acquire(blocking,
    timeout) returns True or False, release(), locked(), ``with``.

    A Lock is used by one thread at a time; a call made while another thread
    is inside a call on the same Lock raises LockStateError. cancel(),
    check() and ``lost`` are the exceptions: any thread may use them.

    A Lock belongs to the process that acquired it: in a forked child it is
    not held, and release() and ``with`` leave the parent's lock alone.

    auto_extend=True arms auto-extension after every acquisition made through
    this Lock, with ``max_hold`` and ``on_lost`` as in auto_extend().

    ``wake`` and ``fair`` (None: the client's) choose how this Lock waits: woken
    by a release, or polling only; in arrival order, or not (see Redlock).
    """

    def __init__(self, client: Redlock, name: Name, *, ttl: Seconds = 10.0,
                 blocking: bool = True, timeout: Optional[Seconds] = _UNSET,
                 wait: Optional[Seconds] = _UNSET, auto_extend: bool = False,
                 max_hold: Optional[Seconds] = None, on_lost: Optional[OnLost] = None,
                 retry_count: Optional[int] = None, retry_delay: Optional[Seconds] = None,
                 retry_jitter: Optional[Seconds] = None, drift_factor: Optional[float] = None,
                 drift_min: Optional[Seconds] = None, wake: Optional[bool] = None,
                 fair: Optional[bool] = None) -> None:
        if not isinstance(client, Redlock):
            raise TypeError(f"client must be a redlock.Redlock, not {type(client).__name__}")
        if name is None:
            raise TypeError("the lock name must be str or bytes, not None")
        self._name_b = _cstr(name, "lock name")
        self.name: Name = name
        self.client = client
        self._ttl_ms = _ttl_ms(ttl)
        self._mode = _wait_mode(blocking, timeout, wait)
        self._auto_extend = _flag(auto_extend, "auto_extend")
        if not auto_extend and (max_hold is not None or on_lost is not None):
            raise ValueError("max_hold and on_lost apply to auto-extension: pass auto_extend=True")
        self._max_hold_ms = _max_hold_ms(max_hold)
        self._on_lost = _callable(on_lost, "on_lost")
        policy = {
            "retry_count": None if retry_count is None else _count(retry_count, "retry_count"),
            "retry_delay_ms": None if retry_delay is None
            else _ms(retry_delay, "retry_delay", _MAX_TTL_MS, "one day"),
            "retry_jitter_ms": None if retry_jitter is None
            else _ms(retry_jitter, "retry_jitter", _MAX_TTL_MS, "one day"),
            "drift_factor": None if drift_factor is None else _drift_factor(drift_factor),
            "drift_min_ms": None if drift_min is None
            else _ms(drift_min, "drift_min", 60000, "one minute"),
            "wake": None if wake is None else _flag(wake, "wake"),
            "fair": None if fair is None else _flag(fair, "fair"),
        }
        self._busy = threading.Lock()
        self._acquired = False  # an acquisition that __exit__ still has to release
        self._pid = 0  # the process that made the current acquisition
        self._token: Optional[_CancelToken] = None
        #: Why the last acquire() returned False (or ``with`` raised), else None.
        self.last_error: Optional[RedlockError] = None
        self._watch = Watch(self, self._display)
        self._ptr = client._new_lock(self._name_b, self._display, self._watch)
        if any(v is not None for v in policy.values()):
            self._set_policy(policy)

    @property
    def _display(self) -> str:
        return self.name if isinstance(self.name, str) else repr(self.name)

    @property
    def _foreign(self) -> bool:
        # The handle's last acquisition was made by another process: this is a forked child's
        # copy of its parent's Lock. The C handle still carries the parent's value, so nothing
        # that sends it (release, extend) may run here, not even after a release() here.
        return self._pid != 0 and self._pid != _pid

    def _not_ours(self, what: str) -> LockStateError:
        return LockStateError(
            f"{self._display!r}: held by process {self._pid}, not this one ({_pid}); a forked "
            f"child never {what} its parent's lock: make a Lock of its own",
            detail="acquired by another process", resource=self._display)

    def _set_policy(self, values: dict) -> None:
        """Per-lock policy through the C library's redlock_lock_options, over the client's."""
        opts = ffi.new("redlock_lock_options *")
        opts.version = lib.REDLOCK_LOCK_OPTIONS_VERSION
        self._check(lib.redlock_lock_get_options(self._ptr, opts))
        for field, value in values.items():
            if value is None:
                continue
            if field == "wake":  # flags: only this lock's bit changes, the rest stays the client's
                opts.flags = (opts.flags & ~_NO_WAKE) | (0 if value else _NO_WAKE)
            elif field == "fair":
                opts.flags = (opts.flags & ~_FAIR) | (_FAIR if value else 0)
            else:
                setattr(opts, field, value)
        self._check(lib.redlock_lock_set_options(self._ptr, opts))

    @property
    def options(self) -> dict:
        """This lock's acquisition policy (its own arguments over the client's options):
        retry_count, retry_delay, retry_jitter, drift_factor and drift_min, in seconds, and
        the booleans wake (a release wakes a waiting acquire) and fair (waiters served in
        arrival order)."""
        opts = ffi.new("redlock_lock_options *")
        opts.version = lib.REDLOCK_LOCK_OPTIONS_VERSION
        self._check(lib.redlock_lock_get_options(self._ptr, opts))
        return {"retry_count": int(opts.retry_count), "retry_delay": opts.retry_delay_ms / 1000.0,
                "retry_jitter": opts.retry_jitter_ms / 1000.0,
                "drift_factor": float(opts.drift_factor), "drift_min": opts.drift_min_ms / 1000.0,
                "wake": not (opts.flags & _NO_WAKE), "fair": bool(opts.flags & _FAIR)}

    @property
    def ttl(self) -> float:
        """The TTL in seconds that acquire() and extend() use when given none."""
        return self._ttl_ms / 1000.0

    # pottery's name for the TTL, so that code written for pottery's Redlock reads it unchanged.
    auto_release_time = ttl

    def _enter(self) -> None:
        if not self._busy.acquire(False):
            raise LockStateError(f"{self._display!r}: this Lock is in use by another thread; "
                                 "use one Lock object per thread", detail="lock in use",
                                 resource=self._display)

    def _error(self, rc: int) -> RedlockError:
        detail = ffi.string(lib.redlock_lock_errmsg(self._ptr)).decode("utf-8", "replace")
        return error(rc, detail, self._display)

    def _check(self, rc: int) -> None:
        if rc:
            raise self._error(rc)

    def _arm(self, max_hold_ms: int, on_lost: Optional[OnLost]) -> int:
        key = self._watch.arm(on_lost)
        rc = lib.redlock_lock_auto_extend(self._ptr, max_hold_ms, lib._redlock_py_on_lost,
                                          ffi.cast("void *", key))
        self._watch.armed(key, rc == 0)
        return rc

    # -- operations ------------------------------------------------------
    def acquire(self, blocking: bool = _UNSET, timeout: Optional[Seconds] = _UNSET, *,
                ttl: Optional[Seconds] = None, wait: Optional[Seconds] = _UNSET,
                _token: Optional[_CancelToken] = None) -> bool:
        """Acquires the lock: True once held, False if it could not be had in
        time (held elsewhere, too few nodes answering; ``last_error`` says
        why). As threading.Lock: blocking=False makes one attempt, timeout=-1
        waits without a deadline (cancel() or Ctrl-C end it), timeout=s waits
        up to s seconds. Given nothing, the values passed to Redlock.lock()
        apply (by default: wait until free). Errors that waiting cannot fix
        raise at once: InvalidArgument, AuthError, TLSError, LockStateError
        (already held by this Lock), Cancelled..."""
        if blocking is _UNSET and timeout is _UNSET and wait is _UNSET:
            mode = self._mode
        else:
            mode = _wait_mode(True if blocking is _UNSET else blocking, timeout, wait)
        ttl_ms = self._ttl_ms if ttl is None else _ttl_ms(ttl)
        return self._acquire(ttl_ms, mode, _token) is None

    def _acquire_or_raise(self) -> None:
        err = self._acquire(self._ttl_ms, self._mode, None)
        if err is not None:
            raise err

    def _acquire(self, ttl_ms: int, mode: Any, token: Optional[_CancelToken]) -> Optional[RedlockError]:
        """None once acquired, or the failure that waiting could have ended; raises the others."""
        token = token if token is not None else _CancelToken()
        timed = mode is None or isinstance(mode, float)
        self._enter()
        try:
            if self._foreign and lib.redlock_lock_is_held(self._ptr):
                raise LockStateError(
                    f"{self._display!r}: this Lock holds the lock for process {self._pid}; a "
                    f"forked child must make a Lock of its own", detail="acquired by another process",
                    resource=self._display)
            self._token = token
            deadline = time.monotonic() + mode if timed and mode is not None else None
            while True:
                # Reset, then look at the token: a cancel() racing with this
                # either set the token first or sets the (sticky) C flag after
                # the reset, so it is never lost.
                lib.redlock_lock_cancel_reset(self._ptr)
                if token.cancelled:
                    raise Cancelled(f"{self._display!r}: cancelled", detail="cancelled before the wait",
                                    resource=self._display)
                if mode is _NO_WAIT:
                    wait_ms = _WAIT_NONE
                elif mode is _POLICY:
                    wait_ms = _WAIT_DEFAULT
                elif deadline is None:  # no deadline: C's longest waits, one after another
                    wait_ms = _MAX_WAIT_MS
                else:
                    left = math.ceil((deadline - time.monotonic()) * 1000.0)
                    wait_ms = min(_MAX_WAIT_MS, max(1, left))
                armed = wait_ms != _WAIT_NONE and _sigwake.begin_wait(self._ptr)
                try:
                    rc = lib.redlock_lock_acquire(self._ptr, ttl_ms, wait_ms)
                finally:
                    if armed:
                        _sigwake.end_wait()
                reraise_interrupt()  # a Ctrl-C that hit the on_event hook
                if rc == 0:
                    break
                if rc == lib.REDLOCK_ECANCELED and not token.cancelled:
                    # A signal ended the wait and its Python handler raised
                    # nothing (a KeyboardInterrupt is raised as soon as the
                    # call above returns): keep waiting for what is left.
                    continue
                if rc == lib.REDLOCK_ETIMEDOUT and timed and (
                        deadline is None or time.monotonic() < deadline):
                    continue  # one of C's seven-day waits ran out, ours did not
                err = self._error(rc)
                self.last_error = err
                if rc in _RETRYABLE:
                    return err
                raise err
            self._acquired = True
            self._pid = _pid
            self.last_error = None
            self._watch.reset()
            if self._auto_extend:
                rc = self._arm(self._max_hold_ms, self._on_lost)
                if rc:
                    # Held but not kept alive as asked: give it back, say why.
                    err = self._error(rc)
                    self._acquired = False
                    lib.redlock_release(self._ptr)
                    raise err
            return None
        except BaseException as err:
            if not isinstance(err, RedlockError) and not self._acquired \
                    and lib.redlock_lock_is_held(self._ptr):
                # KeyboardInterrupt landed right after a successful acquire:
                # nobody would release it, so give it back now.
                lib.redlock_release(self._ptr)
            raise
        finally:
            self._token = None
            self._busy.release()

    def release(self) -> None:
        """Releases on every node. Raises LockLost if the lock was no longer
        ours on a majority (it expired, or another owner may have overlapped),
        LockStateError if it is not held. In a forked child, a lock its parent
        acquired is left alone: nothing is sent, nothing raised."""
        self._enter()
        try:
            if self._foreign:
                self._acquired = False
                return
            self._acquired = False
            rc = lib.redlock_release(self._ptr)  # also stops auto-extension
            self._watch.disarm()
            reraise_interrupt()
            self._check(rc)
        finally:
            self._busy.release()

    def extend(self, ttl: Optional[Seconds] = None) -> None:
        """Extends the held lock to ``ttl`` seconds from now (default: the TTL
        it was acquired with). Raises LockExpired, LockLost, ExtensionLimit...,
        and LockStateError in a forked child (never extends the parent's)."""
        ttl_ms = self._ttl_ms if ttl is None else _ttl_ms(ttl)
        self._enter()
        try:
            if self._foreign:
                raise self._not_ours("extends")
            rc = lib.redlock_extend(self._ptr, ttl_ms)
            reraise_interrupt()
            self._check(rc)
        finally:
            self._busy.release()

    def auto_extend(self, max_hold: Optional[Seconds] = None, *,
                    on_lost: Optional[OnLost] = None) -> None:
        """Keeps the held lock alive: the client's background thread extends
        it to the TTL it was acquired with, every third of that TTL, until
        release(), stop_auto_extend(), a loss, or ``max_hold`` seconds of
        holding in all (None: one hour; the client's max_hold and
        max_extensions apply too).

        A loss sets ``lost``, makes check() raise (LockLost, LockExpired, or
        ExtensionLimit once the bound is reached and the validity ran out)
        and calls ``on_lost(lock, error)`` on the background thread: it must
        be quick, must not block on this Lock, and what it raises is logged.
        Raises LockStateError if the lock is not held."""
        ms = _max_hold_ms(max_hold)
        _callable(on_lost, "on_lost")
        self._enter()
        try:
            if self._foreign:
                raise self._not_ours("extends")
            self._check(self._arm(ms, on_lost))
        finally:
            self._busy.release()

    def stop_auto_extend(self) -> bool:
        """Stops auto-extension (waiting for an extension under way); the lock
        stays held until its validity runs out. False if it was not on."""
        self._enter()
        try:
            if self._foreign:
                return False
            rc = lib.redlock_lock_auto_extend_stop(self._ptr)
            self._watch.disarm()
            try:
                self._check(rc)
            except LockStateError:
                return False
            return True
        finally:
            self._busy.release()

    def _stop_auto_extend_at_exit(self) -> None:
        if self._foreign:
            return
        if self._busy.acquire(False):  # else its owner is in a call: leave it
            try:
                lib.redlock_lock_auto_extend_stop(self._ptr)
                self._watch.disarm()
            finally:
                self._busy.release()

    @property
    def lost(self) -> threading.Event:
        """Set when auto-extension found the current acquisition lost (wait on
        it from any thread); cleared by the next acquisition."""
        return self._watch.lost

    def check(self) -> None:
        """Raises unless this Lock still holds its lock: the loss that
        auto-extension reported (LockLost, LockExpired, ExtensionLimit),
        LockExpired once the validity ran out, LockStateError when it is not
        acquired (or was acquired by another process). Cheap (no network
        I/O); call it between steps of the work the lock protects. Any thread
        may call it."""
        if self._foreign:
            raise self._not_ours("uses")
        loss = self._watch.error()
        if loss is not None:
            raise loss
        if not self._acquired:
            raise LockStateError(f"{self._display!r}: not held", detail="not held",
                                 resource=self._display)
        if not lib.redlock_lock_is_held(self._ptr):
            raise LockExpired(f"{self._display!r}: the lock's validity ran out",
                              detail="the validity ran out", resource=self._display)

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the current acquisition (an int >= 1; later
        holders of the name get larger ones), or None when the lock is not
        held or the client was made without fencing=True."""
        if self._foreign:
            return None
        self._enter()
        try:
            token = lib.redlock_lock_fencing_token(self._ptr)
        finally:
            self._busy.release()
        return int(token) if token else None

    @property
    def node_results(self) -> Tuple[NodeResult, ...]:
        """What each node did in this lock's last round (the last attempt of
        an acquire, an extension by anyone, or a release), in the client's
        node order."""
        urls = self.client._node_urls
        code = ffi.new("int *")
        rtt = ffi.new("int64_t *")
        buf = ffi.new("char[]", _NODE_MSG_SIZE)
        results = []
        self._enter()
        try:
            for i, url in enumerate(urls):
                outcome = lib.redlock_lock_node_result(self._ptr, i, code, rtt, buf, _NODE_MSG_SIZE)
                check(min(outcome, 0), resource=self._display)
                outcome = _enum(NodeOutcome, outcome)
                results.append(NodeResult(
                    url, outcome, code[0], None if outcome in _NO_RTT else rtt[0] / 1e6,
                    ffi.string(buf).decode("utf-8", "replace")))
        finally:
            self._busy.release()
        return tuple(results)

    def cancel(self) -> None:
        """Makes an acquire waiting in another thread raise Cancelled after at
        most the round in flight. A cancel with no acquire running is dropped."""
        token = self._token
        if token is not None:
            token.cancelled = True
        lib.redlock_lock_cancel(self._ptr)

    @property
    def validity(self) -> float:
        """Seconds of validity left (0.0 when expired or not held, or held by another process)."""
        if self._foreign:
            return 0.0
        self._enter()
        try:
            ms = lib.redlock_lock_validity_ms(self._ptr)
        finally:
            self._busy.release()
        return ms / 1000.0 if ms > 0 else 0.0

    @property
    def held(self) -> bool:
        """True while this Lock holds the lock and its validity has not run
        out; False in a forked child for its parent's lock."""
        if self._foreign:
            return False
        self._enter()
        try:
            return bool(lib.redlock_lock_is_held(self._ptr))
        finally:
            self._busy.release()

    def locked(self) -> bool:
        """Same as ``held`` (the threading.Lock spelling)."""
        return self.held

    # -- context managers ------------------------------------------------
    def __enter__(self) -> "Lock":
        self._acquire_or_raise()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if not self._acquired:  # released inside the block
            return None
        if self._foreign:  # a forked child leaving the block: the lock is its parent's
            self._acquired = False
            return None
        try:
            self.release()
        except RedlockError as err:
            if exc is None:
                raise
            # Never hide the exception leaving the block; record the loss on it.
            _add_note(exc, f"redlock: releasing {self._display!r} also failed: {err}")
        return None

    async def acquire_async(self, blocking: bool = _UNSET, timeout: Optional[Seconds] = _UNSET, *,
                            ttl: Optional[Seconds] = None,
                            wait: Optional[Seconds] = _UNSET) -> bool:
        """acquire() run in the loop's default executor: True or False. Cancelling
        the task cancels the wait in C; a lock acquired in that race is released."""
        loop = asyncio.get_running_loop()
        token = _CancelToken()
        fut = loop.run_in_executor(None, lambda: self.acquire(blocking, timeout, ttl=ttl, wait=wait,
                                                              _token=token))
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            token.cancelled = True
            lib.redlock_lock_cancel(self._ptr)
            while not fut.done():
                try:
                    await asyncio.wait({fut})
                except asyncio.CancelledError:
                    pass
            if not fut.cancelled() and fut.exception() is None and fut.result():
                with contextlib.suppress(asyncio.CancelledError, RedlockError):
                    await _wait_through_cancel(loop.run_in_executor(None, self.release))
            raise

    async def release_async(self) -> None:
        """release() run in the loop's default executor; a cancelled task
        still waits for the release to finish."""
        await _wait_through_cancel(asyncio.get_running_loop().run_in_executor(None, self.release))

    async def extend_async(self, ttl: Optional[Seconds] = None) -> None:
        """extend() run in the loop's default executor."""
        await _wait_through_cancel(asyncio.get_running_loop().run_in_executor(None, self.extend, ttl))

    async def __aenter__(self) -> "Lock":
        if not await self.acquire_async():
            assert self.last_error is not None
            raise self.last_error
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if not self._acquired:
            return None
        if self._foreign:
            self._acquired = False
            return None
        try:
            await self.release_async()
        except RedlockError as err:
            if exc is None:
                raise
            _add_note(exc, f"redlock: releasing {self._display!r} also failed: {err}")
        return None

    def __repr__(self) -> str:
        if self._foreign and self._acquired:
            state = f"acquired by process {self._pid}"
        else:
            state = "acquired" if self._acquired else "not acquired"
        return f"<redlock.Lock {self._display!r} {state}>"


class AsyncLock:
    """A Lock in asyncio's shape (and pottery's AIORedlock's): ``await
    acquire(blocking, timeout)`` -> bool, ``await release()``, ``await
    extend(ttl)``, ``await locked()``, ``async with``. The blocking C calls run
    in the loop's default executor; cancelling the task cancels a wait.
    Everything else (held, validity, token, check(), lost, node_results...)
    is the underlying :class:`Lock`'s, also reachable as ``.lock``."""

    def __init__(self, client: Redlock, name: Name, **kwargs: Any) -> None:
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


@contextlib.contextmanager
def redlock(name: Name, *, nodes: Iterable[Name], ttl: Seconds = 10.0, blocking: bool = True,
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
