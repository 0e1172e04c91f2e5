# SPDX-License-Identifier: BSD-3-Clause
# The per-node report of a lock's last round (lock.node_results): every node OK after a clean acquire,
# REFUSED where another owner holds the key, and a killed node reported as failed while the others are OK.
from __future__ import annotations

import pytest

from redlock import LockNotAcquired, NodeOutcome, NodeResult, Redlock


def test_before_any_round(client, cluster5, name):
    results = client.lock(name).node_results
    assert [r.url for r in results] == cluster5.urls
    assert all(r.outcome == NodeOutcome.NONE and r.rtt is None and r.code == 0 for r in results)


def check_ok(r, url):
    assert isinstance(r, NodeResult)
    assert r.url == url
    assert r.outcome is NodeOutcome.OK and r.ok
    assert r.code == 0 and r.error_name == "REDLOCK_OK" and r.message == ""
    assert isinstance(r.rtt, float) and 0.0 <= r.rtt < 60.0


def test_ok_after_acquire_extend_and_release(client, cluster5, name):
    lock = client.lock(name, ttl=5.0)
    assert lock.acquire()
    # Every round (acquire, extend, release) stops reading replies once its outcome is settled:
    # the nodes it did not wait for show NOT_WAITED, the others OK.
    for step in (None, lock.extend, lock.release):
        if step is not None:
            step()
        results = lock.node_results
        assert isinstance(results, tuple) and len(results) == 5
        assert sum(r.ok for r in results) >= 3, results
        for r, url in zip(results, cluster5.urls):
            if r.outcome is NodeOutcome.NOT_WAITED:
                assert r.rtt is None and r.code == 0
            else:
                check_ok(r, url)


def test_refused_where_another_owner_holds_it(client, other, name):
    holder = other.acquire(name, ttl=10.0)
    try:
        lock = client.lock(name, ttl=5.0, blocking=False)
        assert lock.acquire() is False
        assert type(lock.last_error) is LockNotAcquired
        outcomes = [r.outcome for r in lock.node_results]
        # Decided (and no longer read) once a quorum is out of reach.
        assert outcomes.count(NodeOutcome.REFUSED) >= 3, outcomes
        assert set(outcomes) <= {NodeOutcome.REFUSED, NodeOutcome.NOT_WAITED}, outcomes
    finally:
        holder.release()


def test_a_killed_node_is_reported_failed(fresh5, make_client, name):
    fresh5.kill(2)
    client = make_client(fresh5.urls)
    for _ in range(2):  # the first round meets the refused connect, the next one the backoff
        with client.lock(name, ttl=5.0) as lock:
            results = lock.node_results
            dead = results[2]
            assert dead.url == fresh5.url(2)
            assert dead.outcome in (NodeOutcome.ERROR, NodeOutcome.DOWN), dead
            assert dead.code != 0 and dead.error_name != "REDLOCK_OK"
            assert not dead.ok
            if dead.outcome is NodeOutcome.ERROR:
                assert dead.message  # what the connection attempt met
            others = [results[i].outcome for i in (0, 1, 3, 4)]
            assert set(others) <= {NodeOutcome.OK, NodeOutcome.NOT_WAITED}, results
            assert others.count(NodeOutcome.OK) >= 3
        # The release, decided at quorum too, still names the dead node.
        results = lock.node_results
        assert results[2].outcome in (NodeOutcome.ERROR, NodeOutcome.DOWN, NodeOutcome.NOT_WAITED)
        others = [results[i].outcome for i in (0, 1, 3, 4)]
        assert set(others) <= {NodeOutcome.OK, NodeOutcome.NOT_WAITED}, results
        assert others.count(NodeOutcome.OK) >= 3


def test_urls_are_shown_without_passwords():
    # No connection is needed to read the (empty) report.
    c = Redlock(["redis://:s3cret@127.0.0.1:1", "redis://user:hunter2@127.0.0.1:2",
                 "redis://127.0.0.1:3"])
    try:
        urls = [r.url for r in c.lock("x").node_results]
    finally:
        c.close()
    assert len(urls) == 3 and urls[2] == "redis://127.0.0.1:3"
    assert not any("s3cret" in u or "hunter2" in u for u in urls), urls


def test_records_are_immutable(client, name):
    r = client.lock(name).node_results[0]
    with pytest.raises(AttributeError):
        r.outcome = NodeOutcome.OK
