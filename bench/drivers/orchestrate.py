#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Runs every peer-benchmark case against the nodes of `nodes.py exec --count 9` (bench/run starts
# it), collects the drivers' JSON lines and redlock_bench's CSV, and writes results and charts.
from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))
import nodes  # noqa: E402

SLOW_DELAY_S = 0.020


# ---------------------------------------------------------------------------------------------
# A loopback TCP proxy that delays every reply by SLOW_DELAY_S (requests pass at once), in order.

class SlowProxy:
    def __init__(self, target_host, target_port, delay):
        self.target = (target_host, target_port)
        self.delay = delay
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        # Clients closing their connections mid-read are normal here; keep stderr for results.
        self.loop.set_exception_handler(lambda loop, ctx: None)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _conn(self, cr, cw):
        try:
            sr, sw = await asyncio.open_connection(*self.target)
        except OSError:
            cw.close()
            return
        for s in (cw, sw):
            s.transport.get_extra_info("socket").setsockopt(6, 1, 1)  # TCP_NODELAY

        async def up():
            while data := await cr.read(65536):
                sw.write(data)
            sw.close()

        q: asyncio.Queue = asyncio.Queue()

        async def down_read():
            while data := await sr.read(65536):
                q.put_nowait((self.loop.time() + self.delay, data))
            q.put_nowait((0, b""))

        async def down_write():
            while True:
                due, data = await q.get()
                if not data:
                    break
                wait = due - self.loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                cw.write(data)
            cw.close()

        await asyncio.gather(up(), down_read(), down_write(), return_exceptions=True)

    def url(self):
        return f"redis://127.0.0.1:{self.port}"


# ---------------------------------------------------------------------------------------------

def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
            "load1": os.getloadavg()[0], "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z")}


class Runner:
    def __init__(self, a):
        self.a = a
        self.rows = []
        self.ctl = nodes.Control()
        self.urls = self.ctl.urls()
        self.impls = {}
        py = a.python
        if py:
            for i in ("ours-py", "pottery", "redis-py"):
                if self._probe([py, "-c", {"ours-py": "import redlock", "pottery": "import pottery",
                                           "redis-py": "import redis"}[i]]):
                    self.impls[i] = [py, os.path.join(HERE, "py_driver.py"), "--impl", i]
        if a.go_driver and os.access(a.go_driver, os.X_OK):
            for i in ("ours-go", "redsync"):
                self.impls[i] = [a.go_driver, "--impl", i]
        if a.node_modules and os.path.isdir(os.path.join(a.node_modules, "redlock")) and shutil.which("node"):
            self.impls["node-redlock"] = ["node", os.path.join(ROOT, "bench", "node", "driver.js")]
        self.seq = 0
        self.failures = 0

    @staticmethod
    def _probe(argv):
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def log(self, *m):
        print(*m, file=sys.stderr, flush=True)

    def driver(self, impl, label, urls, case="cycle", workers=1, seconds=None, iterations=None):
        if impl not in self.impls:
            return None
        self.seq += 1
        argv = self.impls[impl] + ["--case", case, "--urls", ",".join(urls), "--workers", str(workers),
                                   "--iterations", str(iterations or self.a.iterations),
                                   "--seconds", str(seconds or self.a.seconds),
                                   "--warmup", str(self.a.warmup),
                                   "--prefix", f"bench:{os.getpid()}:{self.seq}"]
        env = dict(os.environ)
        if self.a.node_modules:
            env["NODE_PATH"] = self.a.node_modules
        try:
            p = subprocess.run(argv, capture_output=True, text=True, env=env,
                               timeout=(seconds or self.a.seconds) * 3 + 60)
        except subprocess.TimeoutExpired:
            self.log(f"  {impl:13} {label}: timed out")
            self.failures += 1
            return None
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not lines:
            self.log(f"  {impl:13} {label}: driver failed (rc {p.returncode}): {p.stderr.strip()[-400:]}")
            self.failures += 1
            return None
        row = json.loads(lines[-1])
        row["label"] = label
        self.rows.append(row)
        fmt = lambda v: "-" if v is None else f"{v:9.0f}"  # noqa: E731
        self.log(f"  {impl:13} {label:22} p50 {fmt(row['p50_us'])} us  p99 {fmt(row['p99_us'])} us  "
                 f"{row['ops_per_s']:9.0f}/s  errors {row['errors']}"
                 + (f"  ({row['first_error'][:80]})" if row["errors"] else ""))
        return row

    def redlock_bench(self):
        if not self.a.c_bench:
            return
        self.log("C core: redlock_bench (floors, handle, try+release; one slow; threads; connections; paused)")
        os.makedirs(self.a.out_dir, exist_ok=True)
        out = os.path.join(self.a.out_dir, "redlock_bench.csv")
        it = str(self.a.c_iterations)
        argv = [self.a.c_bench, "--iterations", it, "--csv", out, "--nodes", ",".join(map(str, self.a.nodes))]
        if self.a.smoke:
            argv += ["--sections", "cycle,paused", "--node-timeout-ms", "250"]
        p = subprocess.run(argv, capture_output=True, text=True)
        self.log("\n".join("    " + l for l in p.stdout.splitlines()))
        if p.returncode != 0:
            self.log(f"  redlock_bench failed (rc {p.returncode}): {p.stderr.strip()[-400:]}")
            self.failures += 1
        if not os.path.exists(out):
            return
        for r in csv.DictReader(l for l in open(out) if not l.startswith("#")):
            impl = {"floor": "floor", "handle": "c-core", "try+release": "c-core-try"}.get(r["variant"], r["variant"])
            num = lambda k: float(r[k]) if r.get(k) else None  # noqa: E731
            sec = r["section"]
            label = {"cycle": f"nodes={r['nodes']}", "threads": f"workers={r['threads']}",
                     "healthy": "healthy-phase", "one_paused": "one-paused"}.get(sec, sec)
            # The one-slow-node section runs at 3, 5 and 7 nodes; the peers' case is 5.
            if sec in ("one_slow", "slow_healthy", "conns"):
                label = {"one_slow": "one-slow", "slow_healthy": "slow-healthy", "conns": "conns"}[sec]
                label += "" if sec != "conns" and r["nodes"] == "5" else f" nodes={r['nodes']} threads={r['threads']}"
            self.rows.append({"impl": impl, "case": "cycle", "nodes": int(r["nodes"]),
                              "workers": int(r["threads"] or 1), "ops": int(r["cycles"]),
                              "errors": int(r["errors"]), "p50_us": num("p50_us"), "p99_us": num("p99_us"),
                              "ops_per_s": num("cycles_per_s"), "label": label, "source": "redlock_bench"})

    def fresh(self, urls):
        """Each node set starts as a new deployment (FLUSHALL): the library's quarantine keeps a
        node without its marker out of the vote beside nodes that have one (docs/algorithm.md,
        "Quarantine"), so a set that took in nodes a smaller set had not marked would time its
        first TTL without them."""
        for u in urls:
            scheme, rest = u.split("://", 1)
            if scheme == "unix":
                addr = ("unix", rest.split("?", 1)[0])
            else:
                host, port = rest.rsplit("/", 1)[0].rsplit(":", 1)
                addr = ("tcp", host.strip("[]"), int(port))
            nodes.resp_call(addr, ["FLUSHALL"])

    def ping_rtt(self):
        exe = shutil.which("redis-benchmark") or shutil.which("valkey-benchmark")
        if not exe:
            return
        m = re.match(r"redis://([^:/]+):(\d+)", self.urls[0])
        n = "2000" if self.a.smoke else "20000"
        p = subprocess.run([exe, "-h", m.group(1), "-p", m.group(2), "-c", "1", "-n", n, "-t", "ping_inline", "-q"],
                           capture_output=True, text=True)
        text = p.stdout.replace("\r", "\n")
        rps = re.findall(r"([\d.]+) requests per second", text)
        p50 = re.findall(r"p50=([\d.]+) msec", text)
        if rps:
            row = {"impl": "ping-rtt", "case": "baseline", "nodes": 1, "workers": 1, "errors": 0,
                   "ops_per_s": float(rps[-1]), "p50_us": float(p50[-1]) * 1000 if p50 else None,
                   "p99_us": None, "mean_us": 1e6 / float(rps[-1]), "label": "redis-benchmark ping_inline -c 1"}
            self.rows.append(row)
            self.log(f"  redis-benchmark PING round trip: mean {row['mean_us']:.1f} us, p50 {row['p50_us']} us")

    def run(self):
        a = self.a
        peers = [i for i in ("ours-py", "pottery", "ours-go", "redsync", "node-redlock") if i in self.impls]
        self.log(f"{len(self.urls)} nodes; drivers: {', '.join(self.impls) or 'none'}; "
                 f"{a.iterations} cycles or {a.seconds} s per run")
        self.log("baseline: PING round trip")
        self.ping_rtt()
        self.redlock_bench()

        self.log("uncontended acquire+release, distinct keys, by node count")
        for n in a.nodes:
            self.fresh(self.urls)
            for impl in peers:
                self.driver(impl, f"nodes={n}", self.urls[:n])
        self.driver("redis-py", "nodes=1", self.urls[:1])

        self.log("concurrent workers on distinct keys, 5 nodes")
        for w in a.workers:
            for impl in peers + ["redis-py"]:
                self.driver(impl, f"workers={w}", self.urls[:5], workers=w,
                            iterations=max(a.iterations, w * 20))

        self.log(f"{a.contenders} workers contending for one key, 5 nodes, {a.contend_seconds} s each")
        for impl in peers + ["redis-py"]:
            self.driver(impl, f"contend={a.contenders}", self.urls[:5], case="contend",
                        workers=a.contenders, seconds=a.contend_seconds)

        self.log("5 nodes, node 4 paused (SIGSTOP), restarted fresh for each library")
        for impl in peers:
            self.ctl.restart(4)
            self.ctl.pause(4)
            try:
                self.driver(impl, "one-paused", self.urls[:5])
            finally:
                self.ctl.resume(4)
        self.log(f"5 nodes, node 4 behind a proxy adding {SLOW_DELAY_S * 1000:.0f} ms to every reply")
        host, port = re.match(r"redis://([^:/]+):(\d+)", self.urls[4]).groups()
        proxy = SlowProxy(host, int(port), SLOW_DELAY_S)
        for impl in peers:
            self.driver(impl, "one-slow", self.urls[:4] + [proxy.url()])
        self.write()

    def write(self):
        a = self.a
        os.makedirs(a.out_dir, exist_ok=True)
        result = {"machine": self.info, "settings": {k: v for k, v in vars(a).items()
                                                     if k in ("iterations", "seconds", "smoke", "nodes",
                                                              "workers", "contenders", "contend_seconds")},
                  "rows": self.rows}
        name = "smoke.json" if a.smoke else "results.json"
        with open(os.path.join(a.out_dir, name), "w") as f:
            json.dump(result, f, indent=1)
        self.log(f"wrote {os.path.join(a.out_dir, name)}")
        if not a.smoke:
            try:
                import summarize
                summarize.main(os.path.join(a.out_dir, name), a.out_dir)
            except ImportError as e:  # no matplotlib: the results are still written
                self.log(f"charts skipped: {e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--python", help="Python with redlock / pottery / redis installed")
    ap.add_argument("--go-driver")
    ap.add_argument("--node-modules")
    ap.add_argument("--c-bench", help="redlock_bench binary")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--seconds", type=float)
    a = ap.parse_args()
    a.iterations = a.iterations or (200 if a.smoke else 2000)
    a.seconds = a.seconds or (0.5 if a.smoke else 3.0)
    a.c_iterations = 200 if a.smoke else max(a.iterations, 2000)
    a.warmup = 5 if a.smoke else 20
    a.nodes = [1, 5] if a.smoke else [1, 3, 5, 7, 9]
    a.workers = [1, 8] if a.smoke else [1, 8, 64]
    a.contenders = 16
    a.contend_seconds = 0.5 if a.smoke else 4.0
    r = Runner(a)
    r.info = machine()
    r.log("machine: " + json.dumps(r.info))
    t0 = time.time()
    r.run()
    r.log(f"done in {time.time() - t0:.0f} s")
    # Failed cycles are counted in the results (a loaded machine can miss a 50 ms node timeout);
    # the run fails only when a driver or redlock_bench could not run at all.
    sys.exit(1 if r.failures else 0)


if __name__ == "__main__":
    main()
