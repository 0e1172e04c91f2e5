#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Peer-benchmark driver for the Python contenders: our binding (`redlock`), pottery's Redlock, and
# redis-py's single-instance Lock (the familiar baseline). Run by bench/run; prints one JSON line.
from __future__ import annotations

import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

IMPLS = ("ours-py", "pottery", "redis-py")


def make(args):
    urls = args.urls.split(",")
    if args.impl == "ours-py":
        import redlock
        client = redlock.Redlock(urls, node_timeout=common.NODE_TIMEOUT_S)

        def cycle_worker(w):
            def cycle(key):
                with client.lock(key, ttl=common.TTL_S, blocking=False):
                    pass
            return cycle

        def contend_worker(w):
            lk = client.lock(f"{args.prefix}:contend", ttl=common.TTL_S, wait=common.CONTEND_WAIT_S)
            return lk.acquire, lk.release
        return cycle_worker, contend_worker

    import redis
    if args.impl == "pottery":
        from pottery import Redlock as PRedlock
        logging.getLogger("pottery").setLevel(logging.CRITICAL)
        masters = {redis.Redis.from_url(u, socket_timeout=common.NODE_TIMEOUT_S,
                                        socket_connect_timeout=0.2) for u in urls}

        def cycle_worker(w):
            def cycle(key):
                lk = PRedlock(key=key, masters=masters, auto_release_time=common.TTL_S)
                if not lk.acquire(blocking=False):
                    raise RuntimeError("not acquired")
                lk.release()
            return cycle

        def contend_worker(w):
            lk = PRedlock(key=f"{args.prefix}:contend", masters=masters, auto_release_time=common.TTL_S)

            def acquire():
                if not lk.acquire(blocking=True, timeout=common.CONTEND_WAIT_S):
                    raise RuntimeError("not acquired")
            return acquire, lk.release
        return cycle_worker, contend_worker

    # redis-py: one node only, whatever --urls holds beyond the first.
    r = redis.Redis.from_url(urls[0], socket_timeout=common.NODE_TIMEOUT_S, socket_connect_timeout=0.2,
                             max_connections=max(8, args.workers * 2))

    def cycle_worker(w):
        def cycle(key):
            lk = r.lock(key, timeout=common.TTL_S)
            if not lk.acquire(blocking=False):
                raise RuntimeError("not acquired")
            lk.release()
        return cycle

    def contend_worker(w):
        lk = r.lock(f"{args.prefix}:contend", timeout=common.TTL_S,
                    blocking_timeout=common.CONTEND_WAIT_S)

        def acquire():
            if not lk.acquire(blocking=True):
                raise RuntimeError("not acquired")
        return acquire, lk.release
    return cycle_worker, contend_worker


def main():
    args = common.parse_args(IMPLS)
    if args.impl == "redis-py":
        args.urls = args.urls.split(",")[0]
    cycle_worker, contend_worker = make(args)
    if args.case == "cycle":
        common.run_cycles(args, cycle_worker)
    else:
        common.run_contend(args, contend_worker)


if __name__ == "__main__":
    main()
