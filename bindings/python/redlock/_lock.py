# SPDX-License-Identifier: BSD-3-Clause
# Lock: one lock on one resource, in threading.Lock's shape, over a C lock handle.
from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple, Type

from . import _fork, _sigwake
from ._callbacks import (_NO_RTT, NodeOutcome, NodeResult, PendingAcquire, Watch, _enum, begin_acquire,
                         forget_acquire, reraise_interrupt)
from ._convert import (DEFAULT_TTL, _FAIR, _MAX_WAIT_MS, _NO_WAIT, _NODE_MSG_SIZE, _POLICY, _UNSET,
                       _WAIT_DEFAULT, _WAIT_FOREVER, _WAIT_NONE, Name, Seconds, _callable, _count,
                       _cstr, _drift_factor, _flag, _max_hold_ms, _ms, _MAX_TTL_MS, _ttl_ms, _wait_mode)
from ._errors import Cancelled, LockExpired, LockStateError, RedlockError, check, error
from ._fence import RETENTION, Fence
from ._redlock import ffi, lib

if TYPE_CHECKING:
    from ._client import Redlock

OnLost = Callable[["Lock", RedlockError], Any]


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

    def __init__(self, client: Redlock, name: Name, *, ttl: Seconds = DEFAULT_TTL,
                 blocking: bool = True, timeout: Optional[Seconds] = _UNSET,
                 wait: Optional[Seconds] = _UNSET, auto_extend: bool = False,
                 max_hold: Optional[Seconds] = None, on_lost: Optional[OnLost] = None,
                 retry_count: Optional[int] = None, retry_delay: Optional[Seconds] = None,
                 retry_jitter: Optional[Seconds] = None, drift_factor: Optional[float] = None,
                 drift_min: Optional[Seconds] = None, wake: Optional[bool] = None,
                 fair: Optional[bool] = None) -> None:
        from ._client import Redlock  # the client module imports this one
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
        given = (retry_count, retry_delay, retry_jitter, drift_factor, drift_min, wake, fair)
        policy = None if given.count(None) == len(given) else {
            "retry_count": None if retry_count is None else _count(retry_count, "retry_count"),
            "retry_delay_ms": None if retry_delay is None
            else _ms(retry_delay, "retry_delay", _MAX_TTL_MS, "one day"),
            "retry_jitter_ms": None if retry_jitter is None
            else _ms(retry_jitter, "retry_jitter", _MAX_TTL_MS, "one day"),
            "drift_factor": None if drift_factor is None else _drift_factor(drift_factor),
            "drift_min_ms": None if drift_min is None else _ms(drift_min, "drift_min"),
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
        self._ptr = self._new_handle(client)
        if policy is not None and any(v is not None for v in policy.values()):
            self._set_policy(policy)

    def _new_handle(self, client: Redlock) -> Any:
        # The C handle: a mutex here; a side of a read-write lock (_rwlock.py)
        # and a semaphore's permit (_semaphore.py) make their own.
        return client._new_lock(self._name_b, self._display)

    @property
    def _display(self) -> str:
        return self.name if isinstance(self.name, str) else repr(self.name)

    @property
    def _foreign(self) -> bool:
        # The handle's last acquisition was made by another process: this is a forked child's
        # copy of its parent's Lock. The C handle still carries the parent's value, so nothing
        # that sends it (release, extend) may run here, not even after a release() here.
        return self._pid != 0 and self._pid != _fork.current_pid()

    def _not_ours(self, what: str) -> LockStateError:
        return LockStateError(
            f"{self._display!r}: held by process {self._pid}, not this one ({_fork.current_pid()}); a forked "
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
            if field == "wake":  # flags: only this lock's wake-up changes, the rest stays the client's
                opts.flags = lib.redlock_flags_set_wake(opts.flags, 1 if value else 0)
            elif field == "fair":
                opts.flags = (opts.flags & ~_FAIR) | (_FAIR if value else 0)
            else:
                setattr(opts, field, value)
        self._check(lib.redlock_lock_set_options(self._ptr, opts))

    @property
    def options(self) -> dict:
        """This lock's acquisition policy (its own arguments over the client's options):
        retry_count, retry_delay, retry_jitter, drift_factor and drift_min, in seconds, and
        the booleans wake (a release wakes a waiting acquire, as wake=True or fair=True ask)
        and fair (waiters served in arrival order)."""
        opts = ffi.new("redlock_lock_options *")
        opts.version = lib.REDLOCK_LOCK_OPTIONS_VERSION
        self._check(lib.redlock_lock_get_options(self._ptr, opts))
        return {"retry_count": int(opts.retry_count), "retry_delay": opts.retry_delay_ms / 1000.0,
                "retry_jitter": opts.retry_jitter_ms / 1000.0,
                "drift_factor": float(opts.drift_factor), "drift_min": opts.drift_min_ms / 1000.0,
                "wake": bool(lib.redlock_flags_wake(opts.flags)), "fair": bool(opts.flags & _FAIR)}

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
        # C owns the arming from here: it calls _redlock_py_on_lost_free once no
        # notice for it can follow (replaced, stopped, released, freed), or now
        # if it refused.
        key = self._watch.arm(on_lost)
        rc = lib.redlock_lock_auto_extend(self._ptr, max_hold_ms, lib.REDLOCK_AT_RISK_DEFAULT,
                                           lib._redlock_py_on_lost, ffi.cast("void *", key),
                                           lib._redlock_py_on_lost_free)
        if rc:
            self._watch.forget(key)
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
        self._begin_acquire(token)
        ender: Optional[threading.Timer] = None
        try:
            deadline = self._deadline(mode)
            if self._beyond_c(deadline):
                # One wait in C, without its own end (so a fair waiter keeps
                # its place), cancelled at the deadline by a timer thread.
                assert deadline is not None
                ender = threading.Timer(deadline - time.monotonic(), lib.redlock_lock_cancel, (self._ptr,))
                ender.daemon = True
                ender.start()
            while True:
                wait_ms = self._next_wait_ms(mode, deadline, token)
                armed = wait_ms != _WAIT_NONE and _sigwake.begin_wait(self._ptr)
                try:
                    rc = lib.redlock_lock_acquire(self._ptr, ttl_ms, wait_ms)
                finally:
                    if armed:
                        _sigwake.end_wait()
                reraise_interrupt()  # a Ctrl-C that hit the on_event hook
                if rc == lib.REDLOCK_ECANCELED and not token.cancelled and not self._past(deadline):
                    # A signal ended the wait and its Python handler raised
                    # nothing (a KeyboardInterrupt is raised as soon as the
                    # call above returns): keep waiting for what is left.
                    continue
                return self._acquire_outcome(rc, deadline, token, mode)
        except BaseException as err:
            if self._granted_to_nobody(err):
                # KeyboardInterrupt landed right after a successful acquire:
                # nobody would release it, so give it back now.
                lib.redlock_lock_release(self._ptr)
            raise
        finally:
            if ender is not None:
                ender.cancel()
                ender.join()   # a cancel under way is done with the handle
            self._token = None
            self._busy.release()

    async def _acquire_async(self, ttl_ms: int, mode: Any) -> Optional[RedlockError]:
        """_acquire() for asyncio: the waits run in C on the client's acquire
        thread (redlock_lock_acquire_async), which serves every waiter, so no
        executor thread is taken while waiting."""
        loop = asyncio.get_running_loop()
        token = _CancelToken()
        self._begin_acquire(token)
        ender: Optional[asyncio.TimerHandle] = None
        try:
            deadline = self._deadline(mode)
            if self._beyond_c(deadline):
                assert deadline is not None   # as in _acquire, the loop's timer ends C's wait
                ender = loop.call_later(deadline - time.monotonic(), lib.redlock_lock_cancel, self._ptr)
            wait_ms = self._next_wait_ms(mode, deadline, token)
            rc = await self._c_acquire_async(loop, ttl_ms, wait_ms, token)
            return self._acquire_outcome(rc, deadline, token, mode)
        except BaseException as err:
            if self._granted_to_nobody(err):
                # Cancelled as the lock was granted: give it back, off the loop.
                with contextlib.suppress(BaseException):
                    await self._c_async(
                        lambda key: lib.redlock_lock_release_async(self._ptr, lib._redlock_py_on_acquired, key))
            raise
        finally:
            if ender is not None:
                ender.cancel()
            self._token = None
            self._busy.release()

    def _granted_to_nobody(self, err: BaseException) -> bool:
        """An acquire ended by err (an interrupt, a cancelled task), not by C's
        failure, after C had granted the lock: nobody would release it."""
        return not isinstance(err, RedlockError) and not self._acquired \
            and bool(lib.redlock_lock_is_held(self._ptr))

    async def _c_acquire_async(self, loop: asyncio.AbstractEventLoop, ttl_ms: int, wait_ms: int,
                               token: _CancelToken) -> int:
        """One redlock_lock_acquire_async: its result code. Cancelling the task
        cancels the wait in C and waits for its end (after at most the round
        in flight), then lets the cancellation through."""
        pending = PendingAcquire(loop, loop.create_future())
        key = begin_acquire(pending, self)
        rc = lib.redlock_lock_acquire_async(self._ptr, ttl_ms, wait_ms, lib._redlock_py_on_acquired,
                                            ffi.cast("void *", key))
        if rc:
            forget_acquire(key)
            return int(rc)
        try:
            return int(await asyncio.shield(pending.future))
        except asyncio.CancelledError:
            token.cancelled = True
            lib.redlock_lock_cancel(self._ptr)
            await _wait_through_cancel(pending.future)
            raise

    def _cancel_wait(self) -> None:
        """Ends the C wait under way (the at-exit hook of asynchronous acquires)."""
        lib.redlock_lock_cancel(self._ptr)

    def _begin_acquire(self, token: _CancelToken) -> None:
        """Takes the Lock for an acquire (released by the caller's finally)."""
        self._enter()
        try:
            if self._foreign and lib.redlock_lock_is_held(self._ptr):
                raise LockStateError(
                    f"{self._display!r}: this Lock holds the lock for process {self._pid}; a "
                    f"forked child must make a Lock of its own", detail="acquired by another process",
                    resource=self._display)
        except BaseException:
            self._busy.release()
            raise
        self._token = token

    @staticmethod
    def _deadline(mode: Any) -> Optional[float]:
        timed = mode is None or isinstance(mode, float)
        return time.monotonic() + mode if timed and mode is not None else None

    def _next_wait_ms(self, mode: Any, deadline: Optional[float], token: _CancelToken) -> int:
        """The wait_ms of the next call into C; raises Cancelled if cancel() came first."""
        # Reset, then look at the token: a cancel() racing with this either
        # set the token first or sets the (sticky) C flag after the reset, so
        # it is never lost.
        lib.redlock_lock_cancel_reset(self._ptr)
        if token.cancelled:
            raise Cancelled(f"{self._display!r}: cancelled", detail="cancelled before the wait",
                            resource=self._display)
        if mode is _NO_WAIT:
            return _WAIT_NONE
        if mode is _POLICY:
            return _WAIT_DEFAULT
        if deadline is None:
            return _WAIT_FOREVER
        left = math.ceil((deadline - time.monotonic()) * 1000.0)
        return _WAIT_FOREVER if left > _MAX_WAIT_MS else max(1, left)   # beyond C's: cancelled at the deadline

    @staticmethod
    def _beyond_c(deadline: Optional[float]) -> bool:
        """A deadline later than C's longest finite wait: C waits without one, and is cancelled at it."""
        return deadline is not None and (deadline - time.monotonic()) * 1000.0 > _MAX_WAIT_MS

    @staticmethod
    def _past(deadline: Optional[float]) -> bool:
        return deadline is not None and time.monotonic() >= deadline

    def _acquire_outcome(self, rc: int, deadline: Optional[float], token: _CancelToken,
                         mode: Any) -> Optional[RedlockError]:
        """After a call into C: None once held (auto-extension armed), the
        failure that waiting could have ended, or raises the others."""
        if rc == lib.REDLOCK_ECANCELED and not token.cancelled and self._past(deadline):
            # The timer of a wait beyond C's longest ended it: a timeout,
            # with what C said of its attempts.
            said = ffi.string(lib.redlock_lock_errmsg(self._ptr)).decode("utf-8", "replace")
            said = said.replace("wait cancelled after", "ended at the deadline after", 1)
            err = error(lib.REDLOCK_ETIMEDOUT, f"not acquired within {mode:g} s: {said}", self._display)
            self.last_error = err
            return err
        if rc != 0:
            err = self._error(rc)
            self.last_error = err
            # What waiting longer could have ended is reported as False: the codes
            # C retries, and the end of the wait. The rest raises.
            if rc == lib.REDLOCK_ETIMEDOUT or lib.redlock_error_is_retryable(rc):
                return err
            raise err
        if self._now_held():
            assert self.last_error is not None
            raise self.last_error
        return None

    def _now_held(self) -> int:
        """C just acquired the lock: this Lock holds it, armed for auto-extension if asked.
        0, or the code of an arming that failed, after which the lock was given back."""
        self._acquired = True
        self._pid = _fork.current_pid()
        self.last_error = None
        self._watch.reset()
        if self._auto_extend:
            rc = self._arm(self._max_hold_ms, self._on_lost)
            if rc:
                # Held but not kept alive as asked: give it back, say why.
                self.last_error = self._error(rc)
                self._acquired = False
                lib.redlock_lock_release(self._ptr)
                return int(rc)
        return 0

    def release(self) -> None:
        """Releases on every node. Raises LockLost if the lock was no longer
        ours on a majority (it expired, or another owner may have overlapped),
        LockStateError if it is not held. In a forked child, a lock its parent
        acquired is left alone: nothing is sent, nothing raised."""
        if not self._begin_release():
            return
        try:
            rc = lib.redlock_lock_release(self._ptr)  # also stops auto-extension
            reraise_interrupt()
            self._check(rc)
        finally:
            self._busy.release()

    def _begin_release(self) -> bool:
        """Takes the Lock for a release, no longer counted as acquired; False
        (and the Lock let go) in a forked child for a lock its parent holds:
        nothing is sent. A plain call, not a context manager: release() is on
        every cycle's path."""
        self._enter()
        self._acquired = False
        if self._foreign:
            self._busy.release()
            return False
        return True

    def extend(self, ttl: Optional[Seconds] = None) -> None:
        """Extends the held lock to ``ttl`` seconds from now (default: the TTL
        it was acquired with). Raises LockExpired, LockLost, ExtensionLimit...,
        and LockStateError in a forked child (never extends the parent's)."""
        ttl_ms = self._ttl_ms if ttl is None else _ttl_ms(ttl)
        self._enter()
        try:
            if self._foreign:
                raise self._not_ours("extends")
            rc = lib.redlock_lock_extend(self._ptr, ttl_ms)
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

        Before a loss, when no extension has succeeded and the validity ends
        within max(ttl / 10, 2 * node_timeout), the lock is at risk: ``at_risk``
        is set and ``on_lost(lock, error)`` is called with ``error.code ==
        Lock.AT_RISK`` while the lock is still held, so that the work can stop
        in time; check() does not raise for it. The loss, if it comes, is
        told after it as above.
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
            finally:
                self._busy.release()

    #: The code of the at-risk notice given to on_lost (REDLOCK_EATRISK): not lost yet.
    AT_RISK: int = lib.REDLOCK_EATRISK

    @property
    def at_risk(self) -> threading.Event:
        """Set when auto-extension warned that the current acquisition is at
        risk: not extended, and its validity ends within the margin (see
        auto_extend()). Set before ``lost``, while the lock is still held; it
        stays set (a later extension may have saved the lock: see check())
        until the next acquisition clears it. Any thread may wait on it."""
        return self._watch.at_risk

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

    def fenced(self, store: Any, *, resource: Optional[str] = None, retention: Any = None) -> Fence:
        """Writes to a Redis/Valkey store (a redis-py client) fenced by this acquisition's token:
        each is applied only while no later holder's token has reached the resource, else
        FencedOut (see redlock.Fence). The resource defaults to the lock's name. Needs a held
        lock of a client made with fencing=True (LockStateError otherwise)."""
        token = self.token
        if token is None:
            raise LockStateError(f"{self._display!r}: no fencing token: the lock is not held, or its client "
                                 "was made without fencing=True", resource=self._display)
        return Fence(store, self._display if resource is None else resource, token,
                     retention=RETENTION if retention is None else retention)

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
    def extensions(self) -> int:
        """How many times the current (or last) acquisition was extended, by extend() or by
        auto-extension (redlock_lock_extensions); 0 after each acquire, and in a forked child
        for its parent's lock."""
        if self._foreign:
            return 0
        self._enter()
        try:
            return int(lib.redlock_lock_extensions(self._ptr))
        finally:
            self._busy.release()

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
        """acquire() for asyncio: True or False. The wait takes no thread of the
        loop's executor: C's acquire thread, one per client, runs every
        waiter's attempts. Cancelling the task cancels the wait in C; a lock
        acquired in that race is released."""
        if blocking is _UNSET and timeout is _UNSET and wait is _UNSET:
            mode = self._mode
        else:
            mode = _wait_mode(True if blocking is _UNSET else blocking, timeout, wait)
        ttl_ms = self._ttl_ms if ttl is None else _ttl_ms(ttl)
        return await self._acquire_async(ttl_ms, mode) is None

    async def release_async(self) -> None:
        """release() without a thread of its own: the round runs on the client's
        acquire thread (redlock_lock_release_async), which serves every
        asynchronous call. A cancelled task still waits for the release to
        finish (one round)."""
        if not self._begin_release():
            return
        try:
            self._check(await self._c_async(
                lambda key: lib.redlock_lock_release_async(self._ptr, lib._redlock_py_on_acquired, key)))
        finally:
            self._busy.release()

    async def extend_async(self, ttl: Optional[Seconds] = None) -> None:
        """extend() without a thread of its own (redlock_lock_extend_async), as
        release_async."""
        ttl_ms = self._ttl_ms if ttl is None else _ttl_ms(ttl)
        self._enter()
        try:
            if self._foreign:
                raise self._not_ours("extends")
            self._check(await self._c_async(
                lambda key: lib.redlock_lock_extend_async(self._ptr, ttl_ms, lib._redlock_py_on_acquired, key)))
        finally:
            self._busy.release()

    async def _c_async(self, start: Callable[[Any], int]) -> int:
        """One asynchronous C call of a single round (a release, an extension):
        start(userdata) queues it; its result code, awaited to the end even if
        the task is cancelled meanwhile (then the cancellation goes on)."""
        loop = asyncio.get_running_loop()
        pending = PendingAcquire(loop, loop.create_future())
        key = begin_acquire(pending, self)
        rc = start(ffi.cast("void *", key))
        if rc:
            forget_acquire(key)
            return int(rc)
        return int(await _wait_through_cancel(pending.future))

    async def __aenter__(self) -> "Lock":
        err = await self._acquire_async(self._ttl_ms, self._mode)
        if err is not None:
            raise err
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
