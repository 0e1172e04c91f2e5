# SPDX-License-Identifier: BSD-3-Clause
# Auto-extension warns before a loss (issue 38): with a majority of nodes paused no extension
# succeeds, and the Lock hears that it is at risk (``at_risk``, on_lost with Lock.AT_RISK) while
# it is still held, a margin before its validity ends; the loss comes after it.
from __future__ import annotations

import threading
import time

import redlock
from redlock import Lock, LockAtRisk, LockExpired, RedlockError


def test_at_risk_before_the_loss(fresh5, make_client, name):
    client = make_client(fresh5.urls, node_timeout=0.1)   # margin: max(3 s / 10, 0.2 s) = 0.3 s
    notices = []
    got_loss = threading.Event()

    def on_lost(lock, err):
        notices.append((err.code, lock.validity, lock.held, time.monotonic(), type(err)))
        if err.code != Lock.AT_RISK:
            got_loss.set()

    lock = client.lock(name, ttl=3.0, auto_extend=True, on_lost=on_lost)
    assert lock.acquire()
    paused = []
    try:
        for i in (0, 1, 2):   # long before the first extension, due at 1 s
            fresh5.pause(i)
            paused.append(i)
        assert lock.at_risk.wait(6.0)
        assert not lock.lost.is_set()
        lock.check()   # at risk is not lost: no exception
        assert got_loss.wait(6.0)
    finally:
        for i in paused:
            fresh5.resume(i)
    assert len(notices) == 2, notices
    (code0, validity0, held0, t0, cls0), (code1, _, held1, t1, cls1) = notices
    assert code0 == Lock.AT_RISK and held0 and 0.1 < validity0 <= 0.35, notices
    assert cls0 is LockAtRisk, notices   # the warning has its own class...
    assert code1 != Lock.AT_RISK and not held1, notices
    assert cls1 is LockExpired, notices   # ...and the loss its usual one
    assert t1 - t0 >= 0.15, notices
    assert lock.lost.is_set() and lock.at_risk.is_set()
    try:
        lock.check()
        raise AssertionError("check() did not raise after the loss")
    except LockExpired:
        pass


def test_no_notice_while_extensions_succeed(cluster5, make_client, name):
    client = make_client(cluster5.urls)
    notices = []
    with client.lock(name, ttl=0.6, auto_extend=True, on_lost=lambda lock, err: notices.append(err)) as lock:
        time.sleep(2.0)
        assert lock.held
    assert notices == [] and not lock.at_risk.is_set()


def test_lock_at_risk_class():
    # The at-risk code has its class, exported, a RedlockError but no failure class.
    assert "LockAtRisk" in redlock.__all__
    assert LockAtRisk.code == Lock.AT_RISK == -18
    assert issubclass(LockAtRisk, RedlockError)
    assert not issubclass(LockAtRisk, (LockExpired, redlock.LockLost))
    err = redlock._errors.error(Lock.AT_RISK, "validity ends in 300 ms", "job")
    assert type(err) is LockAtRisk and err.error_name == "REDLOCK_EATRISK" and err.resource == "job"
