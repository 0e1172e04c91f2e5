# SPDX-License-Identifier: BSD-3-Clause
# Waiting in tests for something to happen. The bounds only tell "happened" from "never
# happens" (a hung test); they are not timing assertions.
from __future__ import annotations

import time
from typing import Callable


def eventually(pred: Callable[[], object], timeout: float = 10.0, step: float = 0.01) -> bool:
    """Polls pred until it is true (True) or timeout seconds have passed (False)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


def wait_until(pred: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Polls pred until it is true; an AssertionError naming what if it never becomes so."""
    if not eventually(pred, timeout):
        raise AssertionError(f"timed out waiting for {what}")
