# SPDX-License-Identifier: BSD-3-Clause
# redlock.otel: the OpenTelemetry instruments read back through the SDK's in-memory reader after a
# scripted scenario on real nodes: 10 acquisitions (one of them woken from a wait, one then lost),
# 2 refusals, 1 extension, and one node paused (CLIENT PAUSE) during a round that needs it.
from __future__ import annotations

import os
import threading
import time

import pytest

import redlock

try:
    import opentelemetry.sdk  # noqa: F401
except ImportError as err:  # a skip here, a failure in CI (CI=true): make test-python installs it
    if os.environ.get("CI"):
        raise
    pytest.skip(f"the OpenTelemetry SDK is not installed ({err}): pip install -r tests/python/requirements.txt",
                allow_module_level=True)

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402

from redlock.otel import INSTRUMENTS, RedlockMetrics, acquire_outcome  # noqa: E402


def read(reader):
    """{instrument name: {frozenset(attributes): point}} from one collection."""
    out = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == "redlock"
            for m in sm.metrics:
                assert m.unit == INSTRUMENTS[m.name][1], (m.name, m.unit)
                out[m.name] = {frozenset(p.attributes.items()): p for p in m.data.data_points}
    return out


def test_outcome_names():
    assert acquire_outcome(0) == "acquired"
    assert acquire_outcome(redlock._lib.REDLOCK_ENOTACQUIRED) == "refused"
    assert acquire_outcome(redlock._lib.REDLOCK_ETIMEDOUT) == "timeout"
    assert acquire_outcome(redlock._lib.REDLOCK_ECANCELED) == "canceled"
    assert acquire_outcome(redlock._lib.REDLOCK_ENOQUORUM) == "error"


def test_scenario_read_back(make_client):
    import nodes
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    seen = []
    metrics = RedlockMetrics(provider, on_event=seen.append)
    with nodes.Cluster(count=3, kind="mixed") as cl:
        c = make_client(cl.urls, retry_count=0, node_timeout=0.3, on_event=metrics)
        other = make_client(cl.urls, retry_count=0)
        # 8 plain acquisitions, one extended.
        for i in range(8):
            lock = c.acquire("otel:plain", ttl=10)
            if i == 0:
                lock.extend()
            lock.release()
        # The 9th: a wait, woken by the holder's release.
        holder = other.acquire("otel:wait", ttl=10)
        got = []
        # Its retry is far away (as in test_wake.py): only the release's wake-up gets it the lock.
        waited = c.lock("otel:wait", ttl=10, retry_delay=20.0, retry_jitter=0.0, wake=True)
        waiter = threading.Thread(target=lambda: got.append(waited.acquire(timeout=60)))
        waiter.start()

        def registered():
            # Listening on every node, and registered as a waiter on a majority, which refused it.
            ready = sum(1 for e in list(seen) if e.resource == "otel:wait" and e.type == redlock.EventType.LISTENER
                        and e.listener_state == redlock.ListenerState.READY)
            return ready == 3 and sum(1 for i in range(3) if cl.keys(i, "*otel:wait:wq*")) >= 2

        deadline = time.monotonic() + 30
        while not registered():
            assert time.monotonic() < deadline, "the waiter never registered"  # a bound, not a timing check
            time.sleep(0.01)
        holder.release()
        waiter.join(30)
        assert got == [True]
        waited.release()
        # The 10th, then lost: its key deleted on every node before the release.
        lost = c.acquire("otel:lost", ttl=10)
        for i in range(3):
            for key in cl.keys(i, "*otel:lost*"):
                cl.cmd(i, "DEL", key)
        with pytest.raises(redlock.LockLost):
            lost.release()
        # 2 refusals.
        busy = other.acquire("otel:busy", ttl=10)
        for _ in range(2):
            assert not c.lock("otel:busy", ttl=10).acquire(blocking=False)
        busy.release()
        # A paused node in a round that needs its answer: node 1 holds the key for another
        # owner, node 2 is paused, so only node 2 could make the quorum; it times out.
        probe = c.acquire("otel:probe", ttl=10)
        probe_key = next(k for k in cl.keys(0, "*otel:probe*") if "wake" not in k)
        probe.release()
        paused_key = probe_key.replace("otel:probe", "otel:paused")
        cl.cmd(1, "SET", paused_key, "someone-else", "PX", "10000")
        assert cl.cmd(2, "CLIENT", "PAUSE", "3000", "ALL") == "OK"
        assert not c.lock("otel:paused", ttl=10).acquire(blocking=False)
        paused_url = c.nodes[2]
        time.sleep(3.2)  # the pause ends by itself

    m = read(reader)
    dur = m["redlock.acquire.duration"]
    by_outcome = {dict(k)["redlock.outcome"]: p for k, p in dur.items()}
    # 10 acquisitions and the probe; 2 refusals; the paused round.
    paused_outcome = acquire_outcome(next(e.code for e in seen if e.type == redlock.EventType.ACQUIRE_DONE
                                          and e.resource == "otel:paused"))
    assert by_outcome["acquired"].count == 11
    assert by_outcome["refused"].count == 2 + (paused_outcome == "refused")
    assert sum(p.count for p in by_outcome.values()) == 14
    assert paused_outcome in ("refused", "error")
    assert by_outcome["acquired"].sum > 0
    attempts = m["redlock.acquire.attempts"][frozenset()]
    assert attempts.count == 14 and attempts.sum >= 15  # the woken wait made two attempts at least
    held = m["redlock.lock.held.duration"][frozenset()]
    assert held.count == 11  # 8 plain, the waiter, the probe released; 1 lost
    assert {dict(k)["redlock.reason"]: p.value for k, p in m["redlock.lock.lost"].items()} == {"REDLOCK_ELOST": 1}
    ext = m["redlock.lock.extensions"]
    assert {dict(k)["redlock.outcome"]: p.value for k, p in ext.items()} == {"extended": 1}
    errors = {(dict(k)["redlock.node"], dict(k)["error.type"]): p.value for k, p in m["redlock.node.errors"].items()}
    assert errors == {(paused_url, "REDLOCK_ETIMEDOUT"): 1}
    # One WOKEN per wake-up: a waiter woken by the first node's release message may find the others
    # not yet released, be refused and be woken again.
    woken = sum(1 for e in seen if e.type == redlock.EventType.WOKEN)
    assert woken >= 1 and m["redlock.wake.woken"][frozenset()].value == woken
    rtt = {dict(k)["redlock.node"]: p for k, p in m["redlock.node.rtt"].items()}
    assert set(rtt) == set(c.nodes)
    rounds = 2 * 11 + 1 + 2 + 1  # each hold's acquire and release, the extension, the refusals, the paused round
    assert all(p.count >= 1 for p in rtt.values()) and sum(p.count for p in rtt.values()) >= 2 * rounds
    changes = {(dict(k)["redlock.node"], dict(k)["redlock.listener.state"]): p.value
               for k, p in m.get("redlock.listener.state_changes", {}).items()}
    assert all(url in c.nodes for url, _ in changes)
    assert {u for u, s in changes if s == "ready"} == set(c.nodes), changes
    assert sum(v for (_, s), v in changes.items() if s == "ready") == 3, changes
