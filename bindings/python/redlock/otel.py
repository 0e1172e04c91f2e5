# SPDX-License-Identifier: BSD-3-Clause
# OpenTelemetry metrics from the metrics hook: `Redlock(urls, on_event=RedlockMetrics())`.
# Needs opentelemetry-api (pip install 'libredlock[otel]'); the instruments are listed, with
# their meaning, in docs/observability.md, and are the same in Go and Java.
"""OpenTelemetry metrics for redlock.

    from redlock import Redlock
    from redlock.otel import RedlockMetrics

    client = Redlock(urls, on_event=RedlockMetrics())

The instruments are made on the meter ``redlock`` of ``meter_provider`` (default: the global
one, ``opentelemetry.metrics.get_meter_provider()``), so whatever SDK and exporter the
application set up (Prometheus, OTLP...) collects them.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

try:
    from opentelemetry import metrics as _otel_metrics
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError(
        "redlock.otel needs the OpenTelemetry API: pip install 'libredlock[otel]' "
        f"(or opentelemetry-api) ({err})") from None

from ._callbacks import Event, EventType, ListenerState
from ._redlock import lib

__all__ = ["RedlockMetrics", "METER_NAME", "INSTRUMENTS"]

METER_NAME = "redlock"

# Bucket boundaries, in seconds: lock rounds on a LAN take well under a millisecond to a few;
# waits and holds run to minutes.
_DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                     5.0, 10.0, 30.0, 60.0, 300.0)
_RTT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
_ATTEMPT_BUCKETS = (1, 2, 3, 5, 10, 20, 50, 100, 1000)

#: name -> (kind, unit, description): the table of docs/observability.md.
INSTRUMENTS = {
    "redlock.acquire.duration": ("histogram", "s", "Duration of acquire calls, waits included, by outcome"),
    "redlock.acquire.attempts": ("histogram", "{attempt}", "Attempts made by one acquire call"),
    "redlock.lock.held.duration": ("histogram", "s", "How long locks were held, until released or lost"),
    "redlock.lock.lost": ("counter", "{lock}", "Locks lost while held, by reason"),
    "redlock.lock.extensions": ("counter", "{extension}", "Extensions, by outcome"),
    "redlock.node.errors": ("counter", "{error}", "Failures of one node in a round, by node and error"),
    "redlock.node.rtt": ("histogram", "s", "Round-trip time of each node's reply in a round"),
    "redlock.wake.woken": ("counter", "{waiter}", "Waiting acquires woken by a release"),
    "redlock.listener.state_changes": ("counter", "{change}", "State changes of the wake-up listeners"),
}

_OUTCOMES = {
    0: "acquired",
    lib.REDLOCK_ENOTACQUIRED: "refused",
    lib.REDLOCK_ETIMEDOUT: "timeout",
    lib.REDLOCK_ECANCELED: "canceled",
}

_LISTENER_STATES = {s: s.name.lower() for s in ListenerState}


def acquire_outcome(code: int) -> str:
    """The ``redlock.outcome`` of an acquire call that ended with ``code``."""
    return _OUTCOMES.get(code, "error")


class RedlockMetrics:
    """A metrics hook that records OpenTelemetry instruments: pass it as ``on_event``.

    ``on_event``, if given, is called after with every event, so that an application's own hook
    can run beside it. One RedlockMetrics may serve several clients."""

    def __init__(self, meter_provider: Optional[Any] = None,
                 on_event: Optional[Callable[[Event], Any]] = None) -> None:
        if meter_provider is None:
            meter_provider = _otel_metrics.get_meter_provider()
        from . import __version__
        meter = meter_provider.get_meter(METER_NAME, __version__)
        self._next = on_event

        def hist(name: str, buckets: Any) -> Any:
            _, unit, desc = INSTRUMENTS[name]
            return meter.create_histogram(name, unit=unit, description=desc,
                                          explicit_bucket_boundaries_advisory=buckets)

        def counter(name: str) -> Any:
            _, unit, desc = INSTRUMENTS[name]
            return meter.create_counter(name, unit=unit, description=desc)

        self.acquire_duration = hist("redlock.acquire.duration", _DURATION_BUCKETS)
        self.acquire_attempts = hist("redlock.acquire.attempts", _ATTEMPT_BUCKETS)
        self.held_duration = hist("redlock.lock.held.duration", _DURATION_BUCKETS)
        self.lost = counter("redlock.lock.lost")
        self.extensions = counter("redlock.lock.extensions")
        self.node_errors = counter("redlock.node.errors")
        self.node_rtt = hist("redlock.node.rtt", _RTT_BUCKETS)
        self.woken = counter("redlock.wake.woken")
        self.listener_changes = counter("redlock.listener.state_changes")

    def __call__(self, ev: Event) -> None:
        t = ev.type
        if t == EventType.ACQUIRE_DONE:
            self.acquire_duration.record(ev.elapsed, {"redlock.outcome": acquire_outcome(ev.code)})
            if ev.attempt > 0:
                self.acquire_attempts.record(ev.attempt)
        elif t == EventType.EXTENDED:
            self.extensions.add(1, {"redlock.outcome": "extended"})
        elif t == EventType.EXTEND_FAILED:
            self.extensions.add(1, {"redlock.outcome": "failed"})
        elif t == EventType.LOST:
            self.lost.add(1, {"redlock.reason": ev.error_name})
        elif t == EventType.NODE_ERROR:
            self.node_errors.add(1, {"redlock.node": ev.node_url or "", "error.type": ev.error_name})
        elif t == EventType.WOKEN:
            self.woken.add(1)
        elif t == EventType.LISTENER:
            state = _LISTENER_STATES.get(ev.listener_state, str(ev.listener_state))
            self.listener_changes.add(1, {"redlock.node": ev.node_url or "", "redlock.listener.state": state})
        if ev.held is not None:
            self.held_duration.record(ev.held)
        if ev.node_rtts:
            for url, rtt in ev.node_rtts:
                if rtt is not None:
                    self.node_rtt.record(rtt, {"redlock.node": url})
        if self._next is not None:
            self._next(ev)

    on_event = __call__
