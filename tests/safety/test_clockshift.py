# SPDX-License-Identifier: BSD-3-Clause
"""The clock-step shim (clockshift.c) under real servers, through the harness
(nodes.Cluster(clockshift=...)): a node's TIME and its key expiry follow the offset, its
monotonic timers do not, and the offset survives a restart of the node (it is the machine's)."""
import time

import pytest

import safetylib as S


def wait_until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return cond()


def node_time(c, i):
    sec, usec = c.cmd(i, "TIME")
    return int(sec) + int(usec) / 1e6


@pytest.mark.parametrize("kind", ["redis", "valkey"])
def test_step_moves_time_and_expiry(shim, kind):
    with S.nodes.Cluster(2, kind=kind, clockshift=shim) as c:
        # Not stepped: the wall clock as everyone sees it.
        assert abs(node_time(c, 0) - time.time()) < 1.0
        assert c.clock_offset(0) == 0
        c.cmd(0, "SET", "k", "v", "PX", "10000")
        c.cmd(1, "SET", "k", "v", "PX", "10000")
        assert c.step_clock(0, 20000) == 20000
        # TIME jumps 20 s and the key with 10 s to live is gone; node 1 is untouched.
        assert wait_until(lambda: node_time(c, 0) - time.time() > 19.0), "TIME did not follow the step"
        assert c.cmd(0, "EXISTS", "k") == 0
        assert c.cmd(1, "EXISTS", "k") == 1
        assert abs(node_time(c, 1) - time.time()) < 1.0
        # A key set after the step lives its full TTL on the stepped clock.
        c.cmd(0, "SET", "k2", "v", "PX", "10000")
        assert 9000 < c.cmd(0, "PTTL", "k2") <= 10000
        # A backward step makes keys live longer (expiry is an absolute wall-clock time).
        c.step_clock(0, -5000)
        assert wait_until(lambda: c.cmd(0, "PTTL", "k2") > 10000), "PTTL did not follow the step back"
        # Blocking timeouts are on the monotonic clock: BLPOP 0.3 still waits about 0.3 s.
        t0 = time.monotonic()
        assert c.cmd(0, "BLPOP", "nothing", "0.3") is None
        assert 0.25 < time.monotonic() - t0 < 2.0
        # The offset is the node's: a restart keeps it.
        c.restart(0)
        assert c.clock_offset(0) == 15000
        assert node_time(c, 0) - time.time() > 14.0


def test_without_shim_unchanged():
    """A cluster without clockshift runs as before and has no clock to step."""
    with S.nodes.Cluster(1) as c:
        assert abs(node_time(c, 0) - time.time()) < 1.0
        with pytest.raises(S.nodes.HarnessError):
            c.step_clock(0, 1000)
