# SPDX-License-Identifier: BSD-3-Clause
# Basic behaviour of the Python binding: context managers, explicit acquire/release, validity,
# extension, re-entry, and what happens to the lock when the block raises.
from __future__ import annotations

import datetime
import re
import time

import pytest

import redlock
from redlock import (ExtensionLimit, Lock, LockLost, LockNotAcquired, LockStateError, Redlock,
                     RedlockError)
from _waits import eventually as wait_until


def key_count(cluster, key):
    return sum(cluster.cmd(i, "EXISTS", key) for i in range(cluster.count))


def on_every_node(cluster, key):
    """Every round returns once a quorum decided: the SET to a node it did not wait for may
    still be on its way. The key is on every node once it lands."""
    return wait_until(lambda: key_count(cluster, key) == cluster.count)


def released(cluster, lock, key):
    """The release was confirmed by a quorum, which holds the key no more at once; the nodes it
    did not wait for delete it when the release reaches them (well before a 30 s TTL)."""
    confirmed = [i for i, r in enumerate(lock.node_results) if r.ok]
    assert len(confirmed) >= cluster.count // 2 + 1, lock.node_results
    assert [cluster.cmd(i, "EXISTS", key) for i in confirmed] == [0] * len(confirmed)
    return wait_until(lambda: key_count(cluster, key) == 0)


def test_version_comes_from_the_header():
    import os
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "c", "include", "redlock.h")) as f:
        header = f.read()
    parts = [re.search(rf"#define REDLOCK_VERSION_{p} (\d+)", header).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    assert redlock.__version__ == ".".join(parts)
    assert redlock.LIBRARY_VERSION == redlock.__version__


def test_redlock_helper_holds_the_key_on_every_node(cluster5, name):
    with redlock.redlock(name, nodes=cluster5.urls, ttl=30.0, node_timeout=0.5) as lock:
        assert isinstance(lock, Lock)
        assert lock.held and lock.locked()
        assert 25.0 < lock.validity <= 30.0
        assert on_every_node(cluster5, name)
    assert released(cluster5, lock, name)
    assert not lock.held
    assert lock.validity == 0.0


def test_client_lock_context_manager_blocks_others(client, other, cluster5, name):
    with client.lock(name, ttl=10.0, wait=5.0) as lock:
        assert lock.name == name
        with pytest.raises(LockNotAcquired) as info:
            other.acquire(name, ttl=5.0, blocking=False)
        # The C detail says which node said what.
        assert cluster5.url(0) in str(info.value)
        assert info.value.code == redlock._lib.REDLOCK_ENOTACQUIRED
        assert info.value.resource == name
    # Released at exit: the other client gets it at once.
    got = other.acquire(name, ttl=5.0, blocking=False)
    assert got.held
    got.release()


def test_explicit_acquire_release_and_reuse(client, other, name):
    lock = client.acquire(name, ttl=5.0)
    assert lock.held
    lock.release()
    assert not lock.held
    with pytest.raises(LockStateError):
        lock.release()  # not held any more
    lock.acquire()  # the same handle, again
    assert lock.held
    with pytest.raises(LockNotAcquired):
        other.acquire(name, ttl=5.0, blocking=False)
    lock.release()


def test_ttl_accepts_ints_floats_and_timedeltas(client, name):
    for ttl in (2, 2.5, datetime.timedelta(seconds=3)):
        with client.lock(name, ttl=ttl) as lock:
            assert 1.5 < lock.validity <= 3.0


def test_extend_moves_the_validity(client, cluster5, name):
    with client.lock(name, ttl=1.0) as lock:
        assert lock.validity <= 1.0
        assert lock.extensions == 0
        lock.extend(30.0)
        assert 25.0 < lock.validity <= 30.0
        assert 25000 < cluster5.cmd(0, "PTTL", name) <= 30000
        lock.extend()  # the TTL it was made with
        assert lock.validity <= 1.0
        assert lock.extensions == 2
    with client.lock(name, ttl=1.0) as lock:
        assert lock.extensions == 0   # counted per acquisition


def test_extension_limit(make_client, cluster5, name):
    c = make_client(cluster5.urls, max_extensions=1)
    with c.lock(name, ttl=5.0) as lock:
        lock.extend(5.0)
        with pytest.raises(ExtensionLimit) as info:
            lock.extend(5.0)
        assert "max_extensions" in str(info.value)
        assert lock.extensions == 1   # the count max_extensions bounds


def test_reentering_a_held_lock_raises_instead_of_deadlocking(client, name):
    lock = client.lock(name, ttl=5.0)
    with lock:
        with pytest.raises(LockStateError) as info:
            with lock:
                pass
        assert isinstance(info.value, RuntimeError)
        assert lock.held  # the failed re-entry left the outer hold alone
    assert not lock.held


def test_exception_in_block_propagates_and_releases(client, other, name):
    with pytest.raises(ZeroDivisionError):
        with client.lock(name, ttl=10.0):
            1 / 0
    other.acquire(name, ttl=1.0, blocking=False).release()


def test_release_inside_the_block_is_fine(client, name):
    with client.lock(name, ttl=5.0) as lock:
        lock.release()
    assert not lock.held


def test_lost_lock_is_reported_at_exit(client, name):
    with pytest.raises(LockLost) as info:
        with client.lock(name, ttl=0.2):
            time.sleep(0.4)
    assert "no longer ours" in str(info.value)
    assert info.value.code == redlock._lib.REDLOCK_ELOST


def test_taken_over_lock_is_reported_at_exit(client, other, cluster5, name):
    with pytest.raises(LockLost):
        with client.lock(name, ttl=0.2):
            # Once the key has expired on every node, another owner takes it.
            assert wait_until(lambda: key_count(cluster5, name) == 0)
            other.acquire(name, ttl=5.0, blocking=False)
    # The other owner's hold survived our exit (we only delete our own value).
    with pytest.raises(LockNotAcquired):
        client.acquire(name, ttl=1.0, blocking=False)


def test_lost_lock_never_hides_the_blocks_own_exception(client, name):
    with pytest.raises(KeyError) as info:
        with client.lock(name, ttl=0.2):
            time.sleep(0.4)
            raise KeyError("from the block")
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:  # Python 3.11+
        assert any("LockLost" in n or "no longer ours" in n for n in notes), notes


def test_client_close_is_idempotent_and_locks_outlive_it(cluster5, name):
    c = Redlock(cluster5.urls, node_timeout=0.5)
    lock = c.acquire(name, ttl=5.0)
    c.close()
    c.close()
    assert c.closed
    lock.release()  # the C library keeps the client alive for its locks
    with pytest.raises(LockStateError):
        c.lock(name)


def test_client_as_context_manager(cluster5, name):
    with Redlock(cluster5.urls, retry_count=5, node_timeout=0.5) as c:
        assert c.node_count == 5
        with c.lock(name, ttl=1.0) as lock:
            assert lock.held
    assert c.closed


def test_key_prefix(make_client, cluster5, name):
    c = make_client(cluster5.urls, key_prefix="app:")
    with c.lock(name, ttl=30.0):
        assert on_every_node(cluster5, "app:" + name)
        assert key_count(cluster5, name) == 0


def test_bytes_and_unicode_names(client, cluster5):
    with client.lock(b"raw:\xff\xfebytes", ttl=2.0) as lock:
        assert lock.held
    with client.lock("fa\u00e7ade:\u6f22\u5b57", ttl=30.0):
        assert on_every_node(cluster5, "fa\u00e7ade:\u6f22\u5b57")


def test_wait_acquires_once_the_holder_releases(client, other, name):
    import threading
    holder = other.acquire(name, ttl=10.0)
    threading.Timer(0.3, holder.release).start()
    t0 = time.monotonic()
    with client.lock(name, ttl=5.0, wait=10.0) as lock:
        assert lock.held
    assert time.monotonic() - t0 < 5.0
