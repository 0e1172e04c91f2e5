# SPDX-License-Identifier: BSD-3-Clause
# redlock run and redlock elect stop COMMAND before the lock's validity ends (issue 38): the lost
# signal goes out at the library's at-risk notice, and SIGKILL at the latest halfway through the
# validity then left, whatever --kill-after says. A COMMAND that ignores the lost signal, a
# majority of nodes paused so that no extension succeeds: the command must be dead before the
# validity it started with runs out, and redlock exits with the lost code.
from __future__ import annotations

import os
import time

import pytest

import nodes  # noqa: E402
from clitest import wait_for  # noqa: E402

EXIT_LOST = 76
TTL_S = 3.0

# Ignores TERM; writes its pid, then the wall-clock time it started and the validity redlock
# gave it (REDLOCK_VALIDITY_MS, the validity left when COMMAND started).
STUBBORN = ('trap "" TERM; echo $$ > "$PIDFILE.tmp"; '
            'echo "$(date +%s.%N) $REDLOCK_VALIDITY_MS" >> "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; '
            'while :; do sleep 0.05; done')


def _dead(pid: int) -> bool:
    """Gone, or a zombie (dead, not yet reaped: redlock reaps it only after its checks)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):   # gone before the open, or between it and the read
        return True


def _run_until_killed(runner, argv, tmp_path):
    pidfile = tmp_path / "pid"
    with nodes.Cluster(count=3, kind="mixed") as c:
        env = runner.env(REDLOCK_NODES=",".join(c.urls), PIDFILE=pidfile)
        p = runner.popen(*argv, "sh", "-c", STUBBORN, env=env)
        paused = []
        try:
            wait_for(pidfile.exists, what="command start")
            # A majority stops answering, long before the first extension (due at TTL/3).
            for i in (0, 1):
                c.pause(i)
                paused.append(i)
            pid_line, start_line = pidfile.read_text().splitlines()
            pid = int(pid_line)
            started_at, validity_ms = start_line.split()
            # The validity's end as COMMAND saw it: its start is a little after the
            # validity was measured, so this is, if anything, late.
            validity_end = float(started_at) + int(validity_ms) / 1000.0
            died_at = None
            deadline = time.monotonic() + 3 * TTL_S + 10
            while time.monotonic() < deadline:
                if _dead(pid):
                    died_at = time.time()
                    break
                time.sleep(0.005)
            _, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for i in paused:
                c.resume(i)
    return p.returncode, err, died_at, validity_end, int(validity_ms)


@pytest.mark.parametrize("sub", ["run", "elect"])
def test_command_is_dead_before_the_validity_ends(runner, resource, tmp_path, sub):
    # --kill-after 10s (the default, said outright): it would come long after the validity.
    if sub == "run":
        argv = ["run", "-v", "--ttl", "3s", "--kill-after", "10s", resource]
    else:
        argv = ["elect", "-v", "--ttl", "3s", "--kill-after", "10s", resource, "value"]
    rc, err, died_at, validity_end, validity_ms = _run_until_killed(runner, argv, tmp_path)
    assert rc == EXIT_LOST, err
    assert "extended '" not in err, "an extension succeeded before the nodes were paused: " + err
    assert validity_ms > 2000, err
    assert died_at is not None, "the command outlived the test: " + err
    # Dead before the validity ended, with room to spare (SIGKILL halfway through the at-risk
    # margin, 300 ms of 3 s)...
    assert died_at < validity_end - 0.05, (died_at - validity_end, err)
    # ...but only once the lock was at risk: not right at the start.
    assert died_at > validity_end - 1.0, (died_at - validity_end, err)
    assert "at risk" in err and "SIGTERM" in err, err
    assert "SIGKILL" in err and "validity ends" in err, err
    assert "killed by SIGKILL" in err, err


def test_kill_after_shorter_than_the_validity_still_applies(runner, resource, tmp_path):
    # --kill-after 50ms: SIGKILL 50 ms after the lost signal, before the validity's bound would.
    argv = ["run", "--ttl", "3s", "--kill-after", "50ms", resource]
    rc, err, died_at, validity_end, _ = _run_until_killed(runner, argv, tmp_path)
    assert rc == EXIT_LOST, err
    assert died_at is not None and died_at < validity_end - 0.1, err
    assert "still running 50ms after SIGTERM" in err, err
