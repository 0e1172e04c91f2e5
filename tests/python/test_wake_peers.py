# SPDX-License-Identifier: BSD-3-Clause
# A waiter of ours behind a peer library's holder (pottery, go-redsync): the peer's value carries no
# wake mark and its release publishes nothing, so our waiter polls with its retry policy and gets the
# lock after the peer's release, with no WOKEN event, and leaves no queue entry behind.
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
import time

import pytest

from redlock import EventType, Redlock
from _waits import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The binding's enum has these once it knows wake-up; the C values are stable.
WOKEN = getattr(EventType, "WOKEN", 9)
ACQUIRED = EventType.ACQUIRED
ACQUIRE_FAILED = EventType.ACQUIRE_FAILED


class Recorder:
    def __init__(self):
        self.events = []
        self._mutex = threading.Lock()

    def __call__(self, event):
        with self._mutex:
            self.events.append(event)

    def count(self, type_):
        with self._mutex:
            return sum(1 for e in self.events if int(e.type) == int(type_))


def queue_keys(cluster, key):
    return [cluster.cmd(i, "EXISTS", key + ":wq", key + ":wl", key + ":wr") for i in range(len(cluster.urls))]


def wait_behind(cluster, name, release_peer):
    """Our waiter (default retry policy, wake-up on) waits for `name` while a peer holds it, then the
    peer releases through release_peer(). Returns the recorder of our client's events."""
    rec = Recorder()
    key = "redlock:" + name
    with Redlock(cluster.urls, key_prefix="redlock:", node_timeout=0.5, on_event=rec) as ours:
        lock = ours.lock(name, ttl=10.0)
        got = []
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=60)))
        t.start()
        try:
            # Refused more than once: it polls (a peer's release would not wake it).
            wait_until(lambda: rec.count(ACQUIRE_FAILED) >= 2, "our waiter's retries")
            assert rec.count(ACQUIRED) == 0   # no false acquisition while the peer holds
        finally:
            release_peer()
            t.join(90)
        assert not t.is_alive()
        assert got == [True], [(e.type, e.message) for e in rec.events][-5:]
        assert rec.count(WOKEN) == 0
        assert rec.count(ACQUIRED) == 1
        # Granted where it had registered: it left the queue, and no reservation was made. The
        # acquisition was decided at quorum: a node it did not wait for gets the leave when its
        # late reply comes (bounded well under the registration's 15 s lease).
        wait_until(lambda: queue_keys(cluster, key) == [0] * len(cluster.urls), "our waiter to leave the queue",
                   timeout=5.0)
        lock.release()
    # The release too: the nodes it did not wait for delete the key a moment later (10 s TTL).
    wait_until(lambda: sum(cluster.cmd(i, "EXISTS", key) for i in range(len(cluster.urls))) == 0,
               "the release on every node", timeout=5.0)
    return rec


def test_pottery_release_does_not_wake_our_waiter_who_polls(cluster5, name):
    try:
        import redis
        from pottery import Redlock as PotteryRedlock
    except ImportError as err:  # a skip with its reason printed, never a silent pass
        pytest.skip(f"needs pottery and redis ({err}); install them with: "
                    "python3 -m pip install -r tests/python/requirements.txt")
    logging.getLogger("pottery").setLevel(logging.ERROR)
    masters = [redis.Redis.from_url(u) for u in cluster5.urls]
    try:
        theirs = PotteryRedlock(key=name, masters=set(masters), auto_release_time=30.0)
        assert theirs.acquire(blocking=False)
        # Held on a majority, not necessarily on node 0: read every node.
        values = [cluster5.cmd(i, "GET", "redlock:" + name) for i in range(len(cluster5.urls))]
        held = [v for v in values if v]
        assert len(held) * 2 > len(values), values
        assert not any(v.startswith("w") for v in held)   # no wake mark: a peer's holder
        wait_behind(cluster5, name, theirs.release)
    finally:
        for m in masters:
            m.close()


@pytest.fixture(scope="module")
def redsync_peer(tmp_path_factory):
    """The go-redsync holder (tests/python/redsync_peer), built with the repository's Go module."""
    go = shutil.which("go")
    if not go:
        pytest.skip("the go-redsync case needs a Go toolchain (go on PATH) to build tests/python/redsync_peer")
    out = str(tmp_path_factory.mktemp("redsync") / "redsync_peer")
    p = subprocess.run([go, "build", "-o", out, "./tests/python/redsync_peer"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert p.returncode == 0, "go build of tests/python/redsync_peer failed:\n" + p.stdout
    return out


def test_redsync_release_does_not_wake_our_waiter_who_polls(cluster5, name, redsync_peer):
    key = "redlock:" + name
    peer = subprocess.Popen([redsync_peer, "-urls", ",".join(cluster5.urls), "-key", key, "-ttl", "30s"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = peer.stdout.readline()
        assert line.startswith("HELD "), line + peer.stderr.read()
        value = line.split()[1]
        assert sum(cluster5.cmd(i, "GET", key) == value for i in range(5)) >= 3
        released = []

        def release():
            peer.stdin.write("\n")
            peer.stdin.flush()
            released.append(peer.stdout.readline().strip())

        wait_behind(cluster5, name, release)
        assert released == ["RELEASED true"]
        assert peer.wait(30) == 0
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()
