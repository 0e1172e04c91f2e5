# SPDX-License-Identifier: BSD-3-Clause
"""The quarantine's clock check (c/src/epoch.c, docs/algorithm.md "Quarantine") on real servers
under the clock-step shim (clockshift.c): a node whose wall clock is stepped forward, seen by a
client that checked it before, is put out of the vote for the longest TTL the nodes record; a
step back is not acted on; a client that connects after the step sees the quarantine the first
one wrote on the node; without the quarantine the stepped node votes at once. The restart, wipe
and bound cases: tests/c/test_quarantine.c; under contention: test_targeted.py."""
import re
import time

import pytest

import safetylib as S

redlock = pytest.importorskip("redlock", reason="the Python binding (make test-safety installs it)")


def _client(c, **kw):
    return redlock.Redlock(c.urls, node_timeout=2.0, retry_count=0, **kw)


def _cycle(client, name, ttl=3.0):
    lock = client.lock(name, ttl=ttl)
    assert lock.acquire(blocking=False)
    results = lock.node_results
    lock.release()
    return results


def _quarantined(results):
    return {i for i, r in enumerate(results) if r.outcome == redlock.NodeOutcome.QUARANTINED}


def _warm(client, name, ttl=3.0):
    """Cycles on name until some node's grant counted in a round after the first: its check was
    heard and read a marker (the first round of a new deployment makes them), so the client holds
    a reading of it to compare the next one with. Returns the first such node. A round ends on its
    quorum: a node whose check is always the last to come back is never heard, and has no reading
    (docs/algorithm.md, "Clock jumps"), so the tests step a node that was heard."""
    _cycle(client, name, ttl=ttl)
    for _ in range(20):
        results = _cycle(client, name, ttl=ttl)
        heard = [i for i, r in enumerate(results) if r.outcome == redlock.NodeOutcome.OK]
        if heard:
            return heard[0]
    raise AssertionError("no node heard in 20 rounds: %r" % (results,))


def _until_marked(c, client, name, ttl, n):
    """Cycles on name, each granted by the two other nodes without node n's grant counting, until
    node n carries its quarantine. A round ends on its quorum: when node n's check comes after
    that, node n was not heard, and the next round that hears it judges it."""
    for _ in range(10):
        results = _cycle(client, name, ttl=ttl)
        assert results[n].outcome != redlock.NodeOutcome.OK, results
        if c.cmd(n, "EXISTS", "{redlock:epoch}:q"):
            return
    raise AssertionError("node %d was not quarantined in 10 rounds: %r" % (n, results))


@pytest.mark.parametrize("kind", ["redis", "valkey"])
def test_forward_step_quarantines(shim, kind):
    with S.nodes.Cluster(3, kind=kind, clockshift=shim) as c, _client(c) as client:
        n = _warm(client, "q:warm")           # a node checked twice: its marker, a clock reading
        other = (n + 1) % 3
        time.sleep(1.1)                       # markers older than a deployment being marked
        c.step_clock(n, 2000)
        time.sleep(0.01)
        # The two others still make a quorum; node n's grant does not count.
        _until_marked(c, client, "q:after-step", 3.0, n)
        # The quarantine is on node n itself: its reason and length (the 3 s TTL recorded,
        # plus its drift allowance).
        why = c.cmd(n, "GET", "{redlock:epoch}:q")
        assert why and "clock jumped" in why and "forward" in why, why
        assert 2000 < c.cmd(n, "PTTL", "{redlock:epoch}:q") <= 3000 + 30 + 2 + 1
        assert c.cmd(other, "EXISTS", "{redlock:epoch}:q") == 0
        # A client that connects now saw no jump, but reads the quarantine before it votes.
        with _client(c) as late:
            c.cmd(other, "SET", "q:needs-node-n", "someone-else", "PX", "10000")
            lk = late.lock("q:needs-node-n", ttl=1.0)
            assert lk.acquire(blocking=False) is False
            results = lk.node_results
            assert _quarantined(results) == {n}, results
            assert "clock jumped" in results[n].message and "out of the vote for" in results[n].message


def test_step_after_a_long_span(shim):
    """A client whose last reading of a node is older than the lock's TTL: a step forward of more
    than a lock allows (its validity's drift term) but less than the span's drift allowance could
    be drift, or a step that expired a holder's key early (models/mutex.pml, mutex-step-unseen).
    The client does not count that node for a quarantine's length, and writes nothing on the node
    (a client that read it within a TTL judges for itself: test_forward_step_quarantines)."""
    # drift 10 %: a 500 ms lock allows 50 + 2 ms of a node's clock; 3 s unread allow 300 + 2 ms.
    with S.nodes.Cluster(3, kind="mixed", clockshift=shim) as c, _client(c, drift_factor=0.1) as idle:
        n = _warm(idle, "q:warm", ttl=0.5)
        time.sleep(3.0)
        c.step_clock(n, 150)
        time.sleep(0.01)
        for _ in range(10):   # until node n's check is heard (a round ends on its quorum)
            results = _cycle(idle, "q:after", ttl=0.5)
            assert results[n].outcome != redlock.NodeOutcome.OK, results
            if _quarantined(results):
                break
        assert _quarantined(results) == {n}, results
        msg = results[n].message
        assert re.search(r"its clock ran 1\d\d ms ahead in [34] s unread: a step, or drift "
                         r"\(this client's doubt\); out of the vote for 0\.[5-6] s more", msg), msg
        assert c.cmd(n, "EXISTS", "{redlock:epoch}:q") == 0   # not written on the node
        # It lasts as a quarantine would: the 500 ms TTL and its allowance, 553 ms, though the
        # checks that go on reading node n meanwhile find nothing wrong there.
        for name in ("q:after2", "q:after2b"):
            results = _cycle(idle, name, ttl=0.5)
            assert _quarantined(results) == {n}, results
            assert "this client's doubt); out of the vote for 0." in results[n].message, results
        time.sleep(0.6)
        # Then node n votes again (not out of the vote, and counted once its check is heard).
        for _ in range(10):
            results = _cycle(idle, "q:after3", ttl=0.5)
            assert not _quarantined(results), results
            if results[n].outcome == redlock.NodeOutcome.OK:
                break
        assert results[n].outcome == redlock.NodeOutcome.OK, results
        # Within the TTL's allowance, a long span is no doubt: 3 s unread, no step.
        time.sleep(3.0)
        assert not _quarantined(_cycle(idle, "q:quiet", ttl=0.5))


def test_backward_step_and_switch_off(shim):
    with S.nodes.Cluster(3, kind="mixed", clockshift=shim) as c, \
            _client(c) as client, _client(c, quarantine=False) as plain:
        n = _warm(client, "q:warm")
        _warm(plain, "q:warm-plain")
        time.sleep(1.1)
        # A step back lengthens keys' lives (liveness, not safety): not acted on.
        c.step_clock(n, -3000)
        for _ in range(3):
            assert not _quarantined(_cycle(client, "q:back"))
        assert c.cmd(n, "EXISTS", "{redlock:epoch}:q") == 0
        # Forward, seen only by a client with the quarantine off: it writes nothing, and votes on.
        c.step_clock(1, 5000)
        for _ in range(3):
            results = _cycle(plain, "q:plain")
            assert not _quarantined(results)
        assert c.cmd(1, "EXISTS", "{redlock:epoch}:q") == 0


def test_quarantine_ttl_option():
    """quarantine_ttl states a longer TTL than the markers record (other libraries' clients on the
    same nodes): the quarantine of a wiped node lasts for it, plus its drift allowance."""
    with pytest.raises(redlock.InvalidArgument, match="quarantine_ttl_ms"):
        redlock.Redlock(["redis://127.0.0.1:6379"], quarantine_ttl=86401)
    with S.nodes.Cluster(3, kind="mixed") as c, _client(c, quarantine_ttl=2.0) as client:
        for _ in range(3):
            _cycle(client, "q:warm", ttl=0.5)   # the markers record 500 ms
        time.sleep(1.1)
        c.cmd(0, "FLUSHALL")
        _until_marked(c, client, "q:after-wipe", 0.5, 0)
        why = c.cmd(0, "GET", "{redlock:epoch}:q")
        assert why and "lost its keys" in why, why
        # 2000 ms stated, not the 500 recorded: 2000 + 2000 * 0.01 + 2 + 1
        assert 1900 < c.cmd(0, "PTTL", "{redlock:epoch}:q") <= 2023
