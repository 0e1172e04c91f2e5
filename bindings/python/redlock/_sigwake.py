# SPDX-License-Identifier: BSD-3-Clause
# Makes a signal (Ctrl-C) end a wait in C on the main thread every time, not only when it lands in poll().
# CPython's C-level handler writes to signal.set_wakeup_fd(); a helper thread turns that into the wait's cancel
# (redlock_lock_cancel for an acquire, redlock_election_cancel for an observer's wait).
from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable

from ._redlock import lib

# Why: relying on EINTR would miss a signal that arrives while the waiting
# thread is between system calls (building a round, parsing replies): the
# wait would run to its end. The wakeup fd is written for every signal
# CPython handles, whenever it arrives.


class _Waker:
    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._pid = -1
        self._w = -1
        self._target: Any = None  # the handle the main thread is waiting on
        self._cancel: Callable[[Any], None] = lib.redlock_lock_cancel  # what ends that wait

    def _ensure_started(self) -> bool:
        if self._pid == os.getpid():
            return True
        try:
            r, w = os.pipe()
            os.set_blocking(w, False)  # set_wakeup_fd requires it; CPython must never block in a handler
            threading.Thread(target=self._run, args=(r,), name="redlock-signal-waker",
                             daemon=True).start()
        except (OSError, RuntimeError):
            return False
        self._pid, self._w = os.getpid(), w
        return True

    def _run(self, r: int) -> None:
        while True:
            try:
                if not os.read(r, 256):
                    return
            except InterruptedError:
                continue
            except OSError:
                return
            with self._mutex:  # held across the call: the handle cannot be freed meanwhile
                if self._target is not None:
                    # Sticky until the next wait resets it, so it cannot
                    # be lost even if the wait has not started yet.
                    self._cancel(self._target)

    def begin(self, ptr: Any, cancel: Callable[[Any], None]) -> bool:
        """Arms the waker for a wait by the main thread on ptr, which cancel(ptr)
        ends; False when it cannot be used here (another thread, or someone
        else's wakeup fd)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        with self._mutex:
            if not self._ensure_started():
                return False
            w = self._w
        try:
            old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):  # not the main interpreter, or the fd is unusable
            return False
        if old != -1 and old != w:  # an event loop's: leave it alone (see docs/python.md)
            signal.set_wakeup_fd(old)
            return False
        with self._mutex:
            self._target, self._cancel = ptr, cancel
        return True

    def end(self) -> None:
        with self._mutex:
            self._target = None
        signal.set_wakeup_fd(-1)


_waker = _Waker()


def begin_wait(ptr: Any, cancel: Callable[[Any], None] = lib.redlock_lock_cancel) -> bool:
    return _waker.begin(ptr, cancel)


def end_wait() -> None:
    _waker.end()


def _after_fork_in_child() -> None:
    # The helper thread does not exist in a forked child; start a new one on demand.
    global _waker
    _waker = _Waker()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = ["begin_wait", "end_wait"]
