#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark of asyncio waits (issue 37): 48 locks held by another client; one event loop waits for
# them with 48 `async with` tasks and 8 `acquire(timeout=30)` tasks. Measured two ways in the same
# run: through redlock_lock_acquire_async (what Lock.acquire_async does), and through the loop's
# default executor running the blocking acquire (what it did before), as the baseline.
"""Usage: python3 bench/asyncio_waits.py [--waiters 48] [--extra 8] [--hold 1.5] [--kind mixed]

Starts 5 nodes with tests/harness/nodes.py unless REDLOCK_TEST_NODES is set. For each way it
prints: how long the default executor took to answer a no-op while the waits were pending, the
OS threads added, when the last waiter had its lock after the release, the loop's lag (p50/p99 of
a 5 ms ticker), and how long a cancelled wait took to end. It measures; it never asserts a timing.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "harness"))

import redlock  # noqa: E402


async def _executor_acquire(lock, timeout):
    """The baseline: the blocking acquire in the default executor (the binding before issue 37)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, lambda: lock.acquire(timeout=timeout))


async def run_once(urls, args, way):
    loop = asyncio.get_running_loop()
    base = f"bench:asyncio:{way}:{uuid.uuid4().hex[:8]}"
    names = [f"{base}:{i}" for i in range(args.waiters)]
    holder = redlock.Redlock(urls)
    client = redlock.Redlock(urls)
    held = [holder.acquire(n, ttl=30.0) for n in names]
    threads0 = threading.active_count()
    got_at = []
    lags = []
    stop = asyncio.Event()

    async def ticker():
        while not stop.is_set():
            t = time.monotonic()
            await asyncio.sleep(0.005)
            lags.append(time.monotonic() - t - 0.005)

    async def waiter(n):
        lock = client.lock(n, ttl=60.0)
        ok = await (lock.acquire_async(timeout=30) if way == "async" else _executor_acquire(lock, 30))
        got_at.append(time.monotonic())
        if ok:
            with contextlib.suppress(redlock.RedlockError):
                await loop.run_in_executor(None, lock.release)
        return ok

    released = []

    def release_all():  # the holder, on a thread of its own, as another process would
        for h in held:
            h.release()
        released.append(time.monotonic())

    tick = asyncio.create_task(ticker())
    tasks = [asyncio.create_task(waiter(n)) for n in names]
    tasks += [asyncio.create_task(waiter(n)) for n in names[:args.extra]]
    timer = threading.Timer(args.hold, release_all)
    timer.start()
    await asyncio.sleep(0.3)
    t0 = time.monotonic()
    await loop.run_in_executor(None, lambda: None)
    executor_ms = (time.monotonic() - t0) * 1000
    threads = threading.active_count() - threads0
    oks = await asyncio.gather(*tasks)
    timer.join()
    last_ms = (max(got_at) - released[0]) * 1000
    # A cancelled wait: how long until the task is done.
    h = holder.acquire(f"{base}:cancel", ttl=30.0)
    lock = client.lock(f"{base}:cancel", ttl=5.0)
    task = asyncio.create_task(lock.acquire_async(timeout=30) if way == "async" else _executor_acquire(lock, 30))
    await asyncio.sleep(0.2)
    if way != "async":
        lock.cancel()  # the executor's blocking call needs it; the async path cancels on task.cancel()
    t0 = time.monotonic()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, redlock.RedlockError):
        await task
    cancel_ms = (time.monotonic() - t0) * 1000
    h.release()
    stop.set()
    await tick
    lags.sort()
    pct = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] * 1000  # noqa: E731
    client.close()
    holder.close()
    return {"ok": sum(bool(o) for o in oks), "n": len(oks), "executor_ms": executor_ms, "threads": threads,
            "last_ms": last_ms, "lag_p50": pct(0.5), "lag_p99": pct(0.99), "cancel_ms": cancel_ms}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--waiters", type=int, default=48)
    ap.add_argument("--extra", type=int, default=8)
    ap.add_argument("--hold", type=float, default=1.5)
    ap.add_argument("--kind", default="mixed")
    args = ap.parse_args()
    env = os.environ.get("REDLOCK_TEST_NODES")
    with contextlib.ExitStack() as stack:
        if env:
            urls = env.split(",")
        else:
            import nodes
            urls = stack.enter_context(nodes.Cluster(count=5, kind=args.kind)).urls
        print(f"asyncio waits: {args.waiters} + {args.extra} waiters on {args.waiters} locks held "
              f"{args.hold} s, {len(urls)} nodes, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
        rows = {}
        for way in ("async", "executor"):
            rows[way] = asyncio.run(run_once(urls, args, way))
        print(f"{'':34}{'acquire_async':>16}{'executor':>12}{'ratio':>8}")
        for key, label in (("executor_ms", "executor answers a no-op (ms)"), ("threads", "OS threads added"),
                           ("last_ms", "last waiter after release (ms)"), ("lag_p50", "loop lag p50 (ms)"),
                           ("lag_p99", "loop lag p99 (ms)"), ("cancel_ms", "cancelled wait ends (ms)")):
            a, e = rows["async"][key], rows["executor"][key]
            ratio = f"{a / e:.3f}x" if e else "-"
            print(f"{label:34}{a:16.1f}{e:12.1f}{ratio:>8}")
        print(f"{'granted':34}{rows['async']['ok']:>13}/{rows['async']['n']}"
              f"{rows['executor']['ok']:>9}/{rows['executor']['n']}")


if __name__ == "__main__":
    main()
