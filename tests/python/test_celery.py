# SPDX-License-Identifier: BSD-3-Clause
# The Celery recipe (docs/python.md): two real Celery workers, each with its own embedded beat,
# share a Redis broker started by the harness; every tick's task is sent twice, and the lock over
# three other nodes lets exactly one run happen per tick.
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import nodes

try:
    import celery  # noqa: F401
except ImportError as err:  # a skip here, a failure in CI (CI=true): make test-python installs it
    if os.environ.get("CI"):
        raise
    pytest.skip(f"Celery is not installed ({err}): pip install -r tests/python/requirements.txt",
                allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
PERIOD = 1.0
RUNS = 5


def _start_worker(i: int, env: dict, tmp_path) -> subprocess.Popen:
    env = dict(env, RLTEST_WORKER=f"w{i}")
    log = open(tmp_path / f"worker{i}.log", "wb")
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tasks", "worker", "-B", "--concurrency", "1",
         "--hostname", f"w{i}@%h", "--schedule", str(tmp_path / f"beat{i}"), "--loglevel", "INFO",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=os.path.join(HERE, "celery_app"), env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_two_workers_one_run_per_tick(tmp_path):
    with nodes.Cluster(count=1) as broker, nodes.Cluster(count=3, kind="mixed") as lock_nodes:
        env = dict(os.environ, RLTEST_PERIOD=str(PERIOD), RLTEST_LOCK_NODES=" ".join(lock_nodes.urls),
                   RLTEST_BROKER=broker.url(0) + "/0", RLTEST_RESULTS=broker.url(0) + "/0")
        workers = [_start_worker(i, env, tmp_path) for i in (1, 2)]
        try:
            deadline = time.monotonic() + 90  # a bound for a stuck run, not a speed check
            while True:
                runs = _list(broker, "runs")
                if len(runs) >= RUNS:
                    break
                for i, w in enumerate(workers):
                    assert w.poll() is None, f"worker {i + 1} exited:\n{(tmp_path / f'worker{i + 1}.log').read_text()}"
                assert time.monotonic() < deadline, "no runs recorded:\n" + _logs(tmp_path)
                time.sleep(0.2)
        finally:
            for w in workers:
                _stop(w)
        runs = _list(broker, "runs")
        skips = _list(broker, "skips")
    ticks = [r.split()[0] for r in runs]
    # Exactly one run per tick: no tick ran twice, although both beats sent it.
    assert len(ticks) == len(set(ticks)), f"a tick ran twice: {runs}"
    # Both beats did send: the duplicates were skipped by the lock, each for a tick that ran.
    assert skips, f"no duplicate was ever skipped (did both beats run?): runs {runs}\n" + _logs(tmp_path)
    assert {s.split()[0] for s in skips} <= set(ticks), (runs, skips)


def _list(cluster, key):
    return cluster.cmd(0, "LRANGE", "rltest:" + key, "0", "-1")


def _logs(tmp_path):
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(tmp_path.glob("worker*.log")))
