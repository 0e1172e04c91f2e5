# SPDX-License-Identifier: BSD-3-Clause
# Functions run in child processes by the multiprocessing tests (spawned children import this module).
from __future__ import annotations

import os
import time


def count_under_lock(urls, name, path, rounds):
    """Increments the number in `path` `rounds` times, each as a read-pause-write under the lock:
    without mutual exclusion, updates from other processes get lost."""
    import redlock
    with redlock.Redlock(urls, retry_delay=0.001, retry_jitter=0.01, node_timeout=0.5) as client:
        lock = client.lock(name, ttl=10.0, wait=60.0)
        for _ in range(rounds):
            with lock:
                with open(path) as f:
                    n = int(f.read())
                time.sleep(0.002)
                with open(path + ".tmp", "w") as f:
                    f.write(str(n + 1))
                os.replace(path + ".tmp", path)


def hold(urls, name, seconds, ready, done):
    """Holds `name` for `seconds` in a child process; signals `ready` once held."""
    import redlock
    with redlock.redlock(name, nodes=urls, ttl=seconds + 10.0, node_timeout=0.5):
        ready.set()
        done.wait(seconds)
