# SPDX-License-Identifier: BSD-3-Clause
# Fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting your store"): the C library's
# one script, run through redis-py on a real server of each kind. The edge cases a hand-written
# fence gets wrong: the first write, equal tokens, tokens above 2**53 (a float would lose them),
# a fence key gone mid-run, tokens compared as integers not strings, the fence's lifetime.
from __future__ import annotations

import redis
import pytest

import redlock
from redlock import Fence, FencedOut, fence_key


@pytest.fixture(params=[0, 1], ids=lambda i: "node%d" % i)
def store(cluster5, request):
    """A redis-py client to one real node (the harness mixes Redis and Valkey)."""
    r = redis.Redis.from_url(cluster5.urls[request.param])
    yield r
    r.close()


def test_fence_key_names():
    assert fence_key("orders") == "{orders}:fence"
    assert fence_key("{orders}:17") == "{orders}:17:fence"   # its own tag: the data keys' slot
    for bad in ("", "a}b", "x" * (redlock._lib.REDLOCK_MAX_RESOURCE_LEN + 1)):
        with pytest.raises(redlock.InvalidArgument):
            fence_key(bad)
    with pytest.raises(TypeError):
        fence_key(b"orders")


def test_first_write_equal_and_older_tokens(store, name):
    f5 = Fence(store, name, 5)
    assert f5.set(name + ":v", "five") is True          # the first write: no fence yet
    assert store.get(fence_key(name)) == b"5"
    assert f5.set(name + ":v", "five again") is True     # the same holder writes again
    assert Fence(store, name, 7).set(name + ":v", "seven") is True
    with pytest.raises(FencedOut) as info:
        f5.set(name + ":v", "late")
    err = info.value
    assert (err.token, err.fence) == (5, 7) and err.code == redlock._lib.REDLOCK_EFENCED
    assert "5" in str(err) and "7" in str(err)
    assert store.get(name + ":v") == b"seven"            # nothing written
    assert store.get(fence_key(name)) == b"7"            # the fence never goes down


def test_tokens_compare_as_integers_not_strings_or_floats(store, name):
    # "10" < "9" as strings; 2**53 + 1 == 2**53 as doubles.
    Fence(store, name, 10).incr(name + ":n")
    with pytest.raises(FencedOut):
        Fence(store, name, 9).incr(name + ":n")
    big = 2**53
    Fence(store, name + "b", big + 1).incr(name + "b:n")
    with pytest.raises(FencedOut) as info:
        Fence(store, name + "b", big).incr(name + "b:n")
    assert (info.value.token, info.value.fence) == (big, big + 1)
    top = 2**64 - 1
    assert Fence(store, name + "b", top).incr(name + "b:n") == 2
    assert store.get(fence_key(name + "b")) == str(top).encode()
    for bad in (0, -1, 2**64, True, 1.0, "5"):
        with pytest.raises((redlock.InvalidArgument, TypeError)):
            Fence(store, name, bad)


def test_every_operation(store, name):
    f = Fence(store, name, 3)
    assert f.set(name + ":s", "v", px=60) is True
    assert 0 < store.pttl(name + ":s") <= 60000
    assert f.hset(name + ":h", {"a": 1, "b": 2}) == 2
    assert store.hgetall(name + ":h") == {b"a": b"1", b"b": b"2"}
    assert f.rpush(name + ":l", "x", "y") == 2
    assert f.incr(name + ":n", 5) == 5
    assert f.delete(name + ":s") == 1
    assert store.exists(name + ":s") == 0
    late = Fence(store, name, 2)
    for op in (lambda: late.set(name + ":s", "v"), lambda: late.hset(name + ":h", {"a": 9}),
               lambda: late.rpush(name + ":l", "z"), lambda: late.incr(name + ":n"),
               lambda: late.delete(name + ":h")):
        with pytest.raises(FencedOut):
            op()
    assert store.hgetall(name + ":h") == {b"a": b"1", b"b": b"2"}
    assert store.lrange(name + ":l", 0, -1) == [b"x", b"y"] and store.get(name + ":n") == b"5"
    with pytest.raises(redlock.InvalidArgument):
        f.hset(name + ":h", {})
    with pytest.raises(redlock.InvalidArgument):
        f.rpush(name + ":l")
    with pytest.raises(redis.ResponseError, match="the data key is the fence key"):
        f.set(fence_key(name), "1")


def test_advance_fences_off_before_the_first_write(store, name):
    assert Fence(store, name, 4).advance() == 0       # no fence yet
    assert Fence(store, name, 6).advance() == 4       # the new holder, before it reads
    with pytest.raises(FencedOut):
        Fence(store, name, 4).set(name + ":v", "late")   # the old holder, woken up
    assert store.exists(name + ":v") == 0


def test_lifetime_and_a_fence_gone_mid_run(store, name):
    f = Fence(store, name, 8, retention=30)
    f.set(name + ":v", "a")
    assert 25000 < store.pttl(fence_key(name)) <= 30000  # no key left forever
    Fence(store, name, 9, retention=5).set(name + ":v", "b")
    assert store.pttl(fence_key(name)) > 25000           # a shorter retention never cuts it
    # The fence key lost (evicted, flushed): the next write recreates it; what the store cannot
    # know any more is refused no longer, which is why it must not be evicted (docs/fencing.md).
    store.delete(fence_key(name))
    assert Fence(store, name, 8).set(name + ":v", "c") is True
    assert store.get(fence_key(name)) == b"8"
    with pytest.raises(redlock.InvalidArgument):
        Fence(store, name, 1, retention=0)


def test_noscript_falls_back_to_eval(store, name):
    store.script_flush()
    assert Fence(store, name, 1).set(name + ":v", "x") is True
    assert store.script_exists(redlock._ffi.string(redlock._lib.redlock_fence_script_sha1()).decode()) == [True]


def test_lock_fenced_uses_the_locks_token(cluster5, name):
    store = redis.Redis.from_url(cluster5.urls[0])
    try:
        with redlock.Redlock(cluster5.urls, fencing=True) as c, redlock.Redlock(cluster5.urls) as plain:
            first = c.lock(name, ttl=5.0)
            assert first.acquire(blocking=False)
            old = first.fenced(store)
            assert old.token == first.token and old.key == fence_key(name)
            old.set(name + ":v", "first")
            first.release()
            second = c.lock(name, ttl=5.0)
            assert second.acquire(blocking=False)
            second.fenced(store).set(name + ":v", "second")
            with pytest.raises(FencedOut):
                old.set(name + ":v", "late")   # the first holder, after its lease
            assert store.get(name + ":v") == b"second"
            second.release()
            with pytest.raises(redlock.LockStateError):
                second.fenced(store)           # not held
            no_token = plain.lock(name + ":x", ttl=5.0)
            assert no_token.acquire(blocking=False)
            with pytest.raises(redlock.LockStateError, match="fencing=True"):
                no_token.fenced(store)
            no_token.release()
            with pytest.raises(TypeError):
                Fence(object(), name, 1)
    finally:
        store.close()


def test_fence_cost_bench_smoke(cluster5, capsys, monkeypatch):
    # bench/fence_cost.py --smoke (docs/performance.md): every row measures both writes.
    import importlib.util
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location("fence_cost", os.path.join(root, "bench", "fence_cost.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setenv("REDLOCK_TEST_NODES", ",".join(cluster5.urls[:2]))
    assert bench.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "PostgreSQL UPDATE" in out and out.count("x\n") == 3, out
