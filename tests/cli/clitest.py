# SPDX-License-Identifier: BSD-3-Clause
"""Helpers shared by the CLI tests (test_cli.py, test_tls.py)."""
from __future__ import annotations

import time


def nodes_arg(cluster) -> str:
    return ",".join(cluster.urls)


def wait_for(pred, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def key_count(cluster, key) -> int:
    """Nodes holding key, counting only nodes that run and are not paused."""
    return sum(1 for i in range(cluster.count)
               if cluster.is_running(i) and not cluster.is_paused(i) and cluster.cmd(i, "EXISTS", key))
