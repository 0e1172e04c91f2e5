# SPDX-License-Identifier: BSD-3-Clause
# The Redlock client: N nodes and their settings, the factory of Locks.
from __future__ import annotations

import numbers
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Iterable, List, Optional, Sequence, Tuple, Type, Union

from ._callbacks import Event, EventSink, ListenerState, _enum, finalize
from ._convert import (DEFAULT_CONNECT_TIMEOUT, DEFAULT_DRIFT_FACTOR, DEFAULT_DRIFT_MIN,
                       DEFAULT_NODE_TIMEOUT, DEFAULT_RETRY_COUNT, DEFAULT_RETRY_DELAY, DEFAULT_RETRY_JITTER,
                       DEFAULT_TTL, _ERRBUF_SIZE, _FAIR, _MAX_TTL_MS, _MAX_WAIT_MS, _NODE_MSG_SIZE, _UNSET,
                       _WAKE, Name, Path, Seconds, _callable, _count, _cpath, _cstr, _drift_factor, _flag,
                       _invalid, _ms, _show, _unreachable_ms)
from ._errors import LockStateError, check
from ._fork import free_in_owner
from ._async import AsyncLock
from ._lock import Lock, OnLost
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._election import Election
    from ._rwlock import RWLock
    from ._semaphore import AsyncSemaphore, Semaphore

OnEvent = Callable[[Event], Any]


def _free_lock(ptr: Any) -> None:
    """A Lock's finalizer, run off the C library's threads (finalize)."""
    lib.redlock_lock_free(ptr)


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

    A waiting acquire polls by default: it sleeps out its retry delay and
    jitter between attempts. ``wake=True`` has it woken by the holder's release
    instead: the client listens for releases on one more connection per node
    (:meth:`listener_states`); a lock changes hands in about a millisecond and
    no waiter starves, but under contention the nodes spend more CPU per
    acquisition than with polling (docs/performance.md). ``fair=True`` (which
    implies wake-up) gives a lock that becomes free to the waiter that has
    waited longest (every contender of a name should use it). Both are the
    defaults of this client's locks, which may override them. Elections wake
    their candidates either way.

    ``quarantine=True`` (the default) keeps a node that may have lost its
    keys (restarted without persistence, wiped) or whose clock jumped
    forward out of the vote for the longest TTL the nodes record
    (docs/algorithm.md, "Quarantine"); its part in a failed acquisition says
    so (:attr:`NodeOutcome.QUARANTINED`). ``quarantine=False`` lets such a
    node vote at once, as plain Redlock does. ``quarantine_ttl`` (seconds)
    states the longest TTL any client takes on these nodes, other libraries'
    included, when it is longer than what the markers record: the quarantine
    then lasts at least that long.

    ``on_event(event)`` is the metrics hook: it receives an :class:`Event` for
    every acquire attempt, extension, loss, release and node failure of this
    client's locks, on the thread that ran the round (often the client's
    auto-extend thread). It must be quick and thread-safe and must not call
    methods of the lock concerned; what it raises is logged, never propagated.
    """

    def __init__(self, nodes: Iterable[Name], *, retry_count: int = DEFAULT_RETRY_COUNT,
                 retry_delay: Seconds = DEFAULT_RETRY_DELAY, retry_jitter: Seconds = DEFAULT_RETRY_JITTER,
                 wait: Optional[Seconds] = None,
                 drift_factor: float = DEFAULT_DRIFT_FACTOR, drift_min: Seconds = DEFAULT_DRIFT_MIN,
                 node_timeout: Seconds = DEFAULT_NODE_TIMEOUT, connect_timeout: Seconds = DEFAULT_CONNECT_TIMEOUT,
                 unreachable_timeout: Optional[Seconds] = _UNSET,
                 key_prefix: Name = "", max_extensions: int = 0,
                 max_hold: Optional[Seconds] = None,
                 tls_ca_file: Optional[Path] = None, tls_ca_dir: Optional[Path] = None,
                 tls_cert_file: Optional[Path] = None, tls_key_file: Optional[Path] = None,
                 tls_server_name: Optional[str] = None, tls_insecure_skip_verify: bool = False,
                 use_functions: bool = False, fencing: bool = False,
                 on_event: Optional[OnEvent] = None, wake: bool = False, fair: bool = False,
                 quarantine: bool = True, quarantine_ttl: Optional[Seconds] = None) -> None:
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
        # Only units and types here: C checks the ranges and says what is wrong.
        opts.drift_min_ms = _ms(drift_min, "drift_min")
        opts.node_timeout_ms = _ms(node_timeout, "node_timeout")
        opts.connect_timeout_ms = _ms(connect_timeout, "connect_timeout")
        opts.unreachable_ms = _unreachable_ms(unreachable_timeout)
        opts.quarantine_ttl_ms = 0 if quarantine_ttl is None else _ms(quarantine_ttl, "quarantine_ttl")
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
                      | (_WAKE if _flag(wake, "wake") else 0)
                      | (_FAIR if _flag(fair, "fair") else 0)
                      | (0 if _flag(quarantine, "quarantine") else lib.REDLOCK_OPT_NO_QUARANTINE))
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
        self._ptr = ffi.gc(out[0], free_in_owner(lib.redlock_client_free))

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
        :attr:`nodes`: OFF until the first woken wait (and always with wake=False),
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

    def _new_lock(self, name: bytes, display: Optional[str]) -> Any:
        out = ffi.new("redlock_lock **")
        errbuf = ffi.new("char[]", _ERRBUF_SIZE)
        with self._mutex:  # close() must not free the client under redlock_lock_open
            if self._ptr is None:
                raise LockStateError("the Redlock client is closed", detail="client is closed",
                                     resource=display)
            rc = lib.redlock_lock_open(out, self._ptr, name, errbuf, _ERRBUF_SIZE)
        check(rc, ffi.string(errbuf).decode("utf-8", "replace"), display)

        # Frees memory only (no network I/O). Freeing stops auto-extension,
        # waiting for an extension under way, which may still report; C then
        # lets go of the arming (_redlock_py_on_lost_free), as it lets go of
        # the client's event sink with the client's last lock.
        return ffi.gc(out[0], lambda ptr: finalize(lambda: _free_lock(ptr)))

    # -- locks -----------------------------------------------------------
    def lock(self, name: Union[Name, Sequence[Name]], *, ttl: Seconds = DEFAULT_TTL, blocking: bool = True,
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
        Lock.auto_extend(), which takes ``max_hold`` and ``on_lost``).

        A list or tuple of names makes a MultiLock: every name held together, all
        or none, whatever order other callers list them in."""
        if isinstance(name, (list, tuple)):
            from ._multilock import MultiLock
            return MultiLock(self, name, ttl=ttl, blocking=blocking, timeout=timeout, wait=wait,
                             auto_extend=auto_extend, max_hold=max_hold, on_lost=on_lost,
                             retry_count=retry_count, retry_delay=retry_delay, retry_jitter=retry_jitter,
                             drift_factor=drift_factor, drift_min=drift_min, wake=wake, fair=fair)
        return Lock(self, name, ttl=ttl, blocking=blocking, timeout=timeout, wait=wait,
                    auto_extend=auto_extend, max_hold=max_hold, on_lost=on_lost,
                    retry_count=retry_count, retry_delay=retry_delay, retry_jitter=retry_jitter,
                    drift_factor=drift_factor, drift_min=drift_min, wake=wake, fair=fair)

    def acquire(self, name: Union[Name, Sequence[Name]], **kwargs: Any) -> "Lock":
        """Acquires ``name`` and returns the held Lock; call its release().
        Takes lock()'s arguments. Unlike Lock.acquire(), which returns False,
        this raises when the lock could not be had: LockNotAcquired, LockTimeout
        (a LockNotAcquired), QuorumError..."""
        lock = self.lock(name, **kwargs)
        lock._acquire_or_raise()
        return lock

    def try_acquire_many(self, locks: Sequence["Lock"], ttl: Optional[Seconds] = None) -> List[bool]:
        """One attempt at each of ``locks`` (this client's), as ``acquire(blocking=False)`` makes,
        all pipelined in about one round trip instead of one each: for a dispatcher that takes a
        lock per message. One bool per lock; a lock that was not had says why in ``last_error``.
        ``ttl`` applies to every lock (None: their own, which must be the same)."""
        from ._acquire_many import try_acquire_many
        return try_acquire_many(self, locks, ttl)

    def alock(self, name: Union[Name, Sequence[Name]], **kwargs: Any) -> "AsyncLock":
        """An AsyncLock on ``name`` (asyncio's shape): ``async with client.alock(...)``,
        ``await lock.acquire()``... Takes lock()'s arguments."""
        return AsyncLock(self, name, **kwargs)

    # -- leader election (_election.py) ----------------------------------
    def election(self, name: Name, *, ttl: Seconds = DEFAULT_TTL) -> "Election":
        """An Election on ``name``: ``with client.election(name).campaign(value) as term:``,
        ``leader()``, ``observe()``. ``ttl`` is the leadership's lock TTL (auto-extended)."""
        from ._election import Election
        return Election(self, name, ttl=ttl)

    def rwlock(self, name: Name, **kwargs: Any) -> "RWLock":
        """The read-write lock on ``name``: ``with client.rwlock(name).read():``
        (shared) or ``.write():`` (exclusive); ``aread()``/``awrite()`` for
        asyncio. Takes lock()'s arguments, for both sides (see RWLock)."""
        from ._rwlock import RWLock
        return RWLock(self, name, **kwargs)

    # -- semaphores (_semaphore.py) --------------------------------------
    def semaphore(self, name: Name, limit: int, **kwargs: Any) -> "Semaphore":
        """A counting semaphore of ``limit`` permits on ``name``, in threading.BoundedSemaphore's
        shape: ``acquire(blocking=True, timeout=None) -> bool``, ``release()``, ``with``. Every
        user of the name must pass the same limit. Takes lock()'s other arguments (ttl,
        auto_extend, retry and wake-up options), which apply to each permit."""
        from ._semaphore import Semaphore
        return Semaphore(self, name, limit, **kwargs)

    def asemaphore(self, name: Name, limit: int, **kwargs: Any) -> "AsyncSemaphore":
        """semaphore() in asyncio's shape: ``await acquire()``, ``await release()``,
        ``async with``."""
        from ._semaphore import AsyncSemaphore
        return AsyncSemaphore(self, name, limit, **kwargs)

    def synchronized(self, name: Any, *, blocking: bool = True, timeout: Optional[Seconds] = _UNSET,
                     ttl: Seconds = 30.0, auto_extend: bool = True, min_hold: Optional[Seconds] = None,
                     on_skip: Optional[Callable[..., Any]] = None, **kwargs: Any) -> Callable[[Any], Any]:
        """A decorator that runs a function, plain or ``async def``, under the
        lock ``name`` (or ``name(*args, **kwargs)`` when given a callable), in
        this process or any other on the same nodes.

        By default a call waits until the lock is free (up to ``timeout``
        seconds, then raises LockTimeout). With ``blocking=False`` a call whose
        lock is held elsewhere is skipped: the function is not run, the skip is
        logged (logger "redlock", INFO) and counted in ``wrapper.skips``, and
        the call returns ``on_skip(*args, **kwargs)`` (an awaitable is awaited),
        or None without on_skip. Failures that are not "held elsewhere" (no
        quorum, nodes unreachable...) raise in both modes.

        The lock is auto-extended while the function runs (``ttl`` is its
        TTL) and released when it returns or raises; ``min_hold`` keeps it at
        least that many seconds after the start (ShedLock's lockAtLeastFor),
        so that a late duplicate of a scheduled run is skipped too. Other
        keyword arguments go to lock(). See docs/python.md."""
        from ._synchronized import synchronized
        return synchronized(self, name, blocking=blocking, timeout=timeout, ttl=ttl,
                            auto_extend=auto_extend, min_hold=min_hold, on_skip=on_skip, **kwargs)
