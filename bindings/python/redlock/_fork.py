# SPDX-License-Identifier: BSD-3-Clause
# Fork safety: a lock belongs to the process that acquired it, and a C object is freed only by
# the process that made it.
from __future__ import annotations

import os
from typing import Any, Callable

_pid = os.getpid()


def _after_fork_in_child() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def free_in_owner(free: Callable[[Any], None]) -> Callable[[Any], None]:
    """A finalizer that frees only in the process that made the object: a forked child leaves
    its copy alone (its mutexes may be held by threads that do not exist there)."""
    owner = _pid

    def run(ptr: Any) -> None:
        if _pid == owner:
            free(ptr)

    return run


def current_pid() -> int:
    """The pid of this process, kept up to date across fork without a system call."""
    return _pid
