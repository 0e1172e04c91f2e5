# SPDX-License-Identifier: BSD-3-Clause
# Mutual exclusion under contention: threads of one process (one Lock object each) and separate
# processes (multiprocessing) compete for the same name on five nodes.
from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

import _workers
from redlock import LockNotAcquired, LockStateError, LockTimeout


def test_threads_never_overlap(client, name):
    threads, rounds = 6, 15
    inside = 0
    max_inside = 0
    counter = 0
    errors = []
    guard = threading.Lock()

    def worker():
        nonlocal inside, max_inside, counter
        lock = client.lock(name, ttl=10.0, wait=60.0)  # one Lock object per thread
        try:
            for _ in range(rounds):
                with lock:
                    with guard:
                        inside += 1
                        max_inside = max(max_inside, inside)
                    n = counter
                    time.sleep(0.001)
                    counter = n + 1
                    with guard:
                        inside -= 1
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    assert not errors
    assert max_inside == 1
    assert counter == threads * rounds


def test_one_lock_object_shared_by_two_threads_is_refused(client, other, name):
    holder = other.acquire(name, ttl=30.0)
    lock = client.lock(name, ttl=5.0, wait=5.0)
    outcome = []

    def first():
        while True:
            try:
                outcome.append(lock.acquire())
            except LockStateError:  # met the main thread's poll below: try again
                time.sleep(0.001)
                continue
            return

    t = threading.Thread(target=first)
    t.start()
    try:
        # Wait for the first thread to be inside its acquire (a 5 s wait on a held lock), rather
        # than sleep and hope it got there.
        deadline = time.monotonic() + 30.0
        while True:
            try:
                _ = lock.validity
            except LockStateError:
                break
            assert t.is_alive() and time.monotonic() < deadline, outcome
            time.sleep(0.005)
        with pytest.raises(LockStateError, match="another thread"):
            lock.acquire()
        with pytest.raises(LockStateError):
            _ = lock.validity
    finally:
        t.join()
        holder.release()
    assert outcome == [False] and isinstance(lock.last_error, LockTimeout)


def test_processes_never_overlap(cluster5, name, tmp_path):
    path = str(tmp_path / "counter")
    with open(path, "w") as f:
        f.write("0")
    procs, rounds = 4, 10
    ctx = multiprocessing.get_context("spawn")
    ps = [ctx.Process(target=_workers.count_under_lock, args=(cluster5.urls, name, path, rounds))
          for _ in range(procs)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(90)
    assert [p.exitcode for p in ps] == [0] * procs
    with open(path) as f:
        assert int(f.read()) == procs * rounds


def test_lock_held_by_another_process_blocks_us(cluster5, client, name):
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_workers.hold, args=(cluster5.urls, name, 30.0, ready, done))
    p.start()
    try:
        assert ready.wait(30)
        with pytest.raises(LockNotAcquired):
            client.acquire(name, ttl=5.0, blocking=False)
        with pytest.raises(LockTimeout):
            client.acquire(name, ttl=5.0, wait=0.3)
    finally:
        done.set()
        p.join(30)
    assert p.exitcode == 0
    with client.lock(name, ttl=5.0, blocking=False) as lock:  # released by the child on exit
        assert lock.held
