# SPDX-License-Identifier: BSD-3-Clause
# Shared by the peer-benchmark drivers written in Python: the command line every driver accepts
# (the Go and Node drivers take the same flags) and the one JSON line each run prints.
from __future__ import annotations

import argparse
import json
import threading
import time

# Every driver gives each library the same per-node reply timeout as the C core's default
# (node_timeout_ms 50), so that a paused node costs each of them a bounded time.
NODE_TIMEOUT_S = 0.05
TTL_S = 10.0
CONTEND_WAIT_S = 30.0


def parse_args(impls):
    ap = argparse.ArgumentParser(description="one benchmark case; prints one JSON line")
    ap.add_argument("--impl", required=True, choices=impls)
    ap.add_argument("--case", default="cycle", choices=("cycle", "contend"))
    ap.add_argument("--urls", required=True, help="comma-separated redis://host:port")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=2000, help="timed cycles in all (cycle case)")
    ap.add_argument("--seconds", type=float, default=3.0, help="time cap (cycle) or duration (contend)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed cycles per worker")
    ap.add_argument("--prefix", default="bench")
    return ap.parse_args()


def pct(sorted_us, q):
    if not sorted_us:
        return None
    return sorted_us[min(len(sorted_us) - 1, int(q * len(sorted_us)))]


def emit(args, lat_us, errors, seconds, first_error=None, per_worker=None, extra=None):
    """Prints the result line. lat_us: per-cycle latencies (cycle) or hand-over gaps (contend)."""
    s = sorted(lat_us)
    ops = len(lat_us) if per_worker is None else sum(per_worker)
    row = {
        "impl": args.impl, "case": args.case, "nodes": len(args.urls.split(",")),
        "workers": args.workers, "ops": ops, "errors": errors, "seconds": round(seconds, 4),
        "ops_per_s": round(ops / seconds, 1) if seconds > 0 else None,
        "p50_us": pct(s, 0.50), "p99_us": pct(s, 0.99),
        "first_error": first_error, "per_worker": per_worker,
    }
    if extra:
        row.update(extra)
    print(json.dumps(row), flush=True)


def run_cycles(args, make_worker):
    """make_worker(w) -> cycle(key) raising on failure. Runs args.workers threads on distinct keys
    until args.iterations timed cycles in all, or args.seconds, and emits the result."""
    per = max(1, args.iterations // args.workers)
    lat = [[] for _ in range(args.workers)]
    errs = [0] * args.workers
    first = [None]
    cycles = [make_worker(w) for w in range(args.workers)]
    for w in range(args.workers):  # warm-up: connections and scripts exist before timing
        for i in range(args.warmup):
            try:
                cycles[w](f"{args.prefix}:warm:{w}:{i}")
            except Exception:
                pass
    start = threading.Barrier(args.workers + 1)
    stop_at = [0.0]

    def work(w):
        cycle, out, now = cycles[w], lat[w], time.perf_counter_ns
        start.wait()
        for i in range(per):
            t0 = now()
            try:
                cycle(f"{args.prefix}:{w}:{i}")
            except Exception as e:  # counted, timed, and the first one reported
                errs[w] += 1
                if first[0] is None:
                    first[0] = f"{type(e).__name__}: {e}"
            t1 = now()
            out.append((t1 - t0) / 1000.0)
            if t1 >= stop_at[0]:
                break

    threads = [threading.Thread(target=work, args=(w,)) for w in range(args.workers)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    stop_at[0] = time.perf_counter_ns() + int(args.seconds * 1e9)
    start.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    emit(args, [x for l in lat for x in l], sum(errs), elapsed, first[0])


def run_contend(args, make_worker):
    """make_worker(w) -> (acquire(), release()) on ONE shared key; acquire blocks with the
    library's own retry policy. Measures the hand-over gap (a release to the next acquire) and
    how many acquisitions each worker got in args.seconds."""
    mu = threading.Lock()
    last_release = [None]
    gaps, counts, errs, first = [], [0] * args.workers, [0], [None]
    pairs = [make_worker(w) for w in range(args.workers)]
    start = threading.Barrier(args.workers + 1)
    end = [0.0]

    def work(w):
        acquire, release = pairs[w]
        start.wait()
        while time.perf_counter() < end[0]:
            try:
                acquire()
            except Exception as e:
                with mu:
                    errs[0] += 1
                    first[0] = first[0] or f"{type(e).__name__}: {e}"
                continue
            t = time.perf_counter_ns()
            with mu:
                if last_release[0] is not None:
                    gaps.append((t - last_release[0]) / 1000.0)
                counts[w] += 1
            try:
                with mu:
                    last_release[0] = time.perf_counter_ns()
                release()
            except Exception as e:
                with mu:
                    errs[0] += 1
                    first[0] = first[0] or f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=work, args=(w,)) for w in range(args.workers)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    end[0] = t0 + args.seconds
    start.wait()
    for t in threads:
        t.join()
    emit(args, gaps, errs[0], time.perf_counter() - t0, first[0], per_worker=counts)
