# SPDX-License-Identifier: BSD-3-Clause
# Issue 36: a node that refuses the client is never taken for a busy lock. Nodes that want a
# password and get none (NOAUTH) or a wrong one (WRONGPASS) raise AuthError; an ACL user that
# lacks scripting, or nodes whose EVAL and EVALSHA are disabled, raise PermissionDenied
# (REDLOCK_EPERM) and leave no lock key behind. Each primitive (mutex, mutex with wake-up, read lock, write
# lock, semaphore permit, multi-lock, election campaign), given a 10 s wait, must end within
# 2 s with the cause in its message, when the refusing nodes alone rule out a quorum (3 of 3,
# 2 of 3). One refusing node of three does not end the wait: with the lock free, it is taken.
#
# Before the fix, the password cases of the write lock, the semaphore, the multi-lock and the
# election waited out their 10 s and ended in LockTimeout: Redis closes an unauthenticated
# connection that sends more than 10 arguments ("Protocol error: unauthenticated multibulk
# length"), which read as an I/O failure; an ACL user without scripting took a mutex it could not
# release, and the scripted primitives waited out their wait on NOPERM.
from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import nodes
import redlock
from redlock import AuthError, PermissionDenied, Redlock
from refusing import (COMMAND_RE, NOAUTH_TEXT, OTHER_PW, PW, WRONGPASS_RE, acl_users,  # tests/harness
                      guarded as guarded_nodes, scripts_disabled, with_user as _with_user)

WAIT = 10.0     # the wait every acquire is given
PROMPT = 2.0    # a refusal must end it within this

EPERM = -17


def _client(urls, **kw):
    # Short retry pauses (so that a wait that should end but retries shows as many attempts),
    # a node timeout generous enough for a loaded machine.
    kw.setdefault("retry_delay", 0.01)
    kw.setdefault("retry_jitter", 0.02)
    kw.setdefault("node_timeout", 0.5)
    return Redlock(urls, **kw)


# --------------------------------------------------------------------------- node sets

@pytest.fixture(scope="module")
def guarded():
    """Three nodes with requirepass PW (the harness can no longer talk to them afterwards)."""
    with guarded_nodes() as c:
        yield c


@pytest.fixture(scope="module")
def one_guarded():
    """Three nodes, the last of which has requirepass PW."""
    with guarded_nodes(only=[2]) as c:
        yield c


@pytest.fixture(scope="module")
def acl():
    """refusing.acl_users: noscript, noeval, two_noscript, one_noscript, two_wrongpw, one_wrongpw."""
    with acl_users() as c:
        yield c


@pytest.fixture(scope="module")
def renamed():
    """Three nodes started with EVAL and EVALSHA disabled (rename-command ... "")."""
    with scripts_disabled() as c:
        yield c


@pytest.fixture(scope="module")
def no_evalsha():
    """Three nodes started with EVALSHA alone disabled (EVAL works)."""
    with nodes.Cluster(count=3, kind="mixed", conf={"rename-command": ["EVALSHA", ""]}) as c:
        for i in range(3):
            with pytest.raises(nodes.ReplyError, match="unknown command"):
                c.cmd(i, "EVALSHA", "0" * 40, "0")
        assert c.cmd(0, "EVAL", "return 1", "0") == 1
        yield c


@pytest.fixture
def name():
    return "refusals:" + uuid.uuid4().hex[:12]


# --------------------------------------------------------------------------- the primitives
# Each takes (client, name) and acquires with a 10 s wait; it returns what releases the
# acquisition, or fails the test when the acquire returned False (a refusal is not a failure
# that waiting could end: it must raise).

def _held(ok, what, err):
    assert ok is not False, f"{what} returned False instead of raising; last_error: {err!r}"


def _mutex(client, name, **kw):
    lock = client.lock(name, ttl=5.0, **kw)
    _held(lock.acquire(timeout=WAIT), "Lock.acquire", lock.last_error)
    return lock.release


def _wake(client, name):
    return _mutex(client, name, wake=True)


def _read(client, name):
    lock = client.rwlock(name, ttl=5.0).read()
    _held(lock.acquire(timeout=WAIT), "ReadLock.acquire", lock.last_error)
    return lock.release


def _write(client, name):
    lock = client.rwlock(name, ttl=5.0).write()
    _held(lock.acquire(timeout=WAIT), "WriteLock.acquire", lock.last_error)
    return lock.release


def _semaphore(client, name):
    sem = client.semaphore(name, 3, ttl=5.0)
    _held(sem.acquire(timeout=WAIT), "Semaphore.acquire", sem.last_error)
    return sem.release


def _multi(client, name):
    lock = client.lock([name + ":a", name + ":b"], ttl=5.0)
    _held(lock.acquire(timeout=WAIT), "MultiLock.acquire", lock.last_error)
    return lock.release


def _campaign(client, name):
    election = client.election(name, ttl=5.0)
    leadership = election.campaign("candidate", timeout=WAIT)
    return leadership.resign


def _run(coro):
    return asyncio.run(coro)


def _amutex(client, name, **kw):
    async def go():
        lock = client.alock(name, ttl=5.0, **kw)
        _held(await lock.acquire(timeout=WAIT), "AsyncLock.acquire", lock.last_error)
        return lock
    lock = _run(go())
    return lambda: _run(lock.release())


def _awake(client, name):
    return _amutex(client, name, wake=True)


def _acquire_async(client, name):
    lock = client.lock(name, ttl=5.0)
    _held(_run(lock.acquire_async(timeout=WAIT)), "Lock.acquire_async", lock.last_error)
    return lock.release


def _aread(client, name):
    lock = client.rwlock(name, ttl=5.0).aread()
    _held(_run(lock.acquire(timeout=WAIT)), "AsyncReadLock.acquire", lock.last_error)
    return lambda: _run(lock.release())


def _awrite(client, name):
    lock = client.rwlock(name, ttl=5.0).awrite()
    _held(_run(lock.acquire(timeout=WAIT)), "AsyncWriteLock.acquire", lock.last_error)
    return lambda: _run(lock.release())


def _asemaphore(client, name):
    sem = client.asemaphore(name, 3, ttl=5.0)
    _held(_run(sem.acquire(timeout=WAIT)), "AsyncSemaphore.acquire", sem.last_error)
    return lambda: _run(sem.release())


def _amulti(client, name):
    lock = client.alock([name + ":a", name + ":b"], ttl=5.0)
    _held(_run(lock.acquire(timeout=WAIT)), "AsyncLock([a, b]).acquire", lock.last_error)
    return lambda: _run(lock.release())


PRIMITIVES = {
    "mutex": _mutex, "wake": _wake, "read": _read, "write": _write, "semaphore": _semaphore,
    "multi": _multi, "campaign": _campaign,
    "alock": _amutex, "alock-wake": _awake, "acquire_async": _acquire_async, "aread": _aread,
    "awrite": _awrite, "asemaphore": _asemaphore, "alock-multi": _amulti,
}
KINDS = list(PRIMITIVES)


def _refused(primitive, urls, name, expected, **client_kw):
    """Runs the primitive against urls; it must raise `expected` within PROMPT seconds.
    Returns the exception."""
    with _client(urls, **client_kw) as client:
        t0 = time.monotonic()
        with pytest.raises(redlock.RedlockError) as info:
            PRIMITIVES[primitive](client, name)
        elapsed = time.monotonic() - t0
    err = info.value
    assert isinstance(err, expected), f"{primitive}: {type(err).__name__} after {elapsed:.2f} s, " \
                                      f"not {expected.__name__}: {err}"
    assert elapsed < PROMPT, f"{primitive}: the refusal took {elapsed:.2f} s to end a {WAIT} s wait: {err}"
    return err


def _names_a_node(err, cluster, which=None):
    ports = [cluster.port(i) for i in (which if which is not None else range(len(cluster)))]
    assert any(f"127.0.0.1:{p}" in str(err) for p in ports), f"no refusing node named in: {err}"


def _records(key):
    """Keys the library keeps beside a lock that are no lock: fencing counters, and a
    semaphore's limit record, which a granting node keeps for two TTLs (docs/algorithm.md)."""
    return key.endswith(":fencing") or key.endswith(":limit")


def _no_lock_keys(cluster, name, nodes_=None, bound=1.0):
    """No key of the lock on the given nodes: only the library's records may remain (its
    connect probe's keys do not carry the lock's name). Waits up to `bound` for the writes the
    round did not wait for."""
    def left():
        out = {}
        for i in (nodes_ if nodes_ is not None else range(len(cluster))):
            keys = [k for k in cluster.keys(i, "*" + name + "*") if not _records(k)]
            if keys:
                out[i] = sorted(keys)
        return out
    deadline = time.monotonic() + bound
    while (found := left()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not found, f"lock keys left behind by a refused acquire: {found}"


def _absent_for(cluster, i, name, seconds, what):
    """Node i holds no key of the lock (fencing counters aside) for `seconds`: long enough for a
    command the round sent and did not wait for to have arrived."""
    deadline = time.monotonic() + seconds
    while True:
        keys = [k for k in cluster.keys(i, "*" + name + "*") if not _records(k)]
        assert not keys, f"lock keys on {what} (node {i}): {keys}"
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)


# --------------------------------------------------------------------------- passwords

@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", KINDS)
def test_no_password_raises_auth_error_at_once(guarded, primitive, name):
    err = _refused(primitive, guarded.urls, name, AuthError)
    assert err.code == redlock._lib.REDLOCK_EAUTH, err
    assert NOAUTH_TEXT in str(err), err
    _names_a_node(err, guarded)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", KINDS)
def test_wrong_password_raises_auth_error_at_once(guarded, primitive, name):
    urls = [_with_user(u, ":" + OTHER_PW) for u in guarded.urls]
    err = _refused(primitive, urls, name, AuthError)
    assert WRONGPASS_RE.search(str(err)), err
    assert NOAUTH_TEXT not in str(err), f"a wrong password reported as a missing one: {err}"
    assert OTHER_PW not in str(err)
    _names_a_node(err, guarded)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", ["mutex", "write", "semaphore", "multi", "campaign"])
def test_wrong_password_on_two_of_three_ends_the_wait(acl, primitive, name):
    urls = [_with_user(u, "two_wrongpw:" + PW) for u in acl.urls]
    err = _refused(primitive, urls, name, AuthError)
    assert WRONGPASS_RE.search(str(err)), err
    _names_a_node(err, acl, [1, 2])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", ["mutex", "semaphore"])
def test_a_node_that_refused_the_password_runs_no_lock_command(acl, primitive, name):
    """A node that answered AUTH with WRONGPASS must not run what the client sent after it. The
    client sends AUTH and its first commands together; where the default user is open (as here,
    and on any node without requirepass), the commands after a refused AUTH run as that user, so
    today the node holds the lock (or a semaphore's :limit) that the client reported refused."""
    urls = [_with_user(u, "one_wrongpw:" + PW) for u in acl.urls]
    with _client(urls) as client:
        release = PRIMITIVES[primitive](client, name)
        try:
            _absent_for(acl, 2, name, 0.3, "the node that refused the password")
        finally:
            release()
    urls = [_with_user(u, "two_wrongpw:" + PW) for u in acl.urls]
    _refused(primitive, urls, name + ":2", AuthError)
    _no_lock_keys(acl, name + ":2")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", KINDS)
def test_one_node_of_three_without_password_does_not_stop_a_free_lock(one_guarded, primitive, name):
    with _client(one_guarded.urls) as client:
        t0 = time.monotonic()
        release = PRIMITIVES[primitive](client, name)
        elapsed = time.monotonic() - t0
        assert elapsed < PROMPT, f"{primitive}: a free lock took {elapsed:.2f} s with one refusing node"
        assert any(one_guarded.keys(i, "*" + name + "*") for i in (0, 1)), "held, but no key on nodes 0, 1"
        release()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", ["mutex", "write", "semaphore", "multi", "campaign"])
def test_one_node_of_three_with_a_wrong_password_does_not_stop_a_free_lock(acl, primitive, name):
    urls = [_with_user(u, "one_wrongpw:" + PW) for u in acl.urls]
    with _client(urls) as client:
        t0 = time.monotonic()
        release = PRIMITIVES[primitive](client, name)
        elapsed = time.monotonic() - t0
        assert elapsed < PROMPT, f"{primitive}: a free lock took {elapsed:.2f} s with one refusing node"
        assert any(acl.keys(i, "*" + name + "*") for i in (0, 1)), "held, but no key on nodes 0, 1"
        release()


# --------------------------------------------------------------------------- permissions

def _check_permission_denied(err, cluster, which=None):
    assert err.code == EPERM, err
    assert err.error_name == "REDLOCK_EPERM", err
    assert isinstance(err, PermissionError), f"PermissionDenied is not a PermissionError: {type(err).__mro__}"
    assert COMMAND_RE.search(str(err)), f"the refused command is not named: {err}"
    _names_a_node(err, cluster, which)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", KINDS)
@pytest.mark.parametrize("user", ["noscript", "noeval"])
def test_acl_user_without_scripting_raises_permission_denied(acl, user, primitive, name):
    urls = [_with_user(u, f"{user}:{PW}") for u in acl.urls]
    err = _refused(primitive, urls, name, PermissionDenied)
    _check_permission_denied(err, acl)
    assert PW not in str(err)
    _no_lock_keys(acl, name)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", ["mutex", "wake", "write", "semaphore", "multi", "campaign"])
def test_acl_user_without_scripting_on_two_of_three_ends_the_wait(acl, primitive, name):
    urls = [_with_user(u, f"two_noscript:{PW}") for u in acl.urls]
    err = _refused(primitive, urls, name, PermissionDenied)
    _check_permission_denied(err, acl, [1, 2])
    _no_lock_keys(acl, name)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", KINDS)
def test_acl_user_without_scripting_on_one_of_three_takes_a_free_lock(acl, primitive, name):
    urls = [_with_user(u, f"one_noscript:{PW}") for u in acl.urls]
    with _client(urls) as client:
        t0 = time.monotonic()
        release = PRIMITIVES[primitive](client, name)
        elapsed = time.monotonic() - t0
        assert elapsed < PROMPT, f"{primitive}: a free lock took {elapsed:.2f} s with one refusing node"
        # The client knows node 2 could not release a lock, so it takes none there.
        _absent_for(acl, 2, name, 0.3, "the node whose user cannot run the release script")
        assert any(acl.keys(i, "*" + name + "*") for i in (0, 1)), "held, but no key on nodes 0, 1"
        release()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", KINDS)
def test_disabled_scripting_commands_raise_permission_denied(renamed, primitive, name):
    """EVAL and EVALSHA disabled. Today a mutex is taken (a plain SET) and its release then fails
    on every node, leaving the key until its TTL; the scripted primitives wait out their wait."""
    err = _refused(primitive, renamed.urls, name, PermissionDenied)
    _check_permission_denied(err, renamed)
    _no_lock_keys(renamed, name)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("primitive", ["mutex", "write", "semaphore", "multi", "campaign"])
def test_disabled_evalsha_alone_works_or_is_refused_at_once(no_evalsha, primitive, name):
    """EVALSHA disabled, EVAL not: the library can still run its scripts with EVAL (it does
    today), so the lock either works, acquire and release, or is refused at once with
    PermissionDenied; never a wait, never a key left."""
    with _client(no_evalsha.urls) as client:
        t0 = time.monotonic()
        try:
            release = PRIMITIVES[primitive](client, name)
        except PermissionDenied as err:
            assert time.monotonic() - t0 < PROMPT, err
            _check_permission_denied(err, no_evalsha)
        else:
            assert time.monotonic() - t0 < PROMPT
            release()
    if primitive == "mutex":   # the others keep records beside the lock (:limit, :leader...)
        _no_lock_keys(no_evalsha, name)


def test_permission_denied_is_in_the_error_hierarchy():
    assert issubclass(PermissionDenied, redlock.RedlockError)
    assert issubclass(PermissionDenied, PermissionError)
    assert not issubclass(PermissionDenied, AuthError)
    assert "PermissionDenied" in redlock.__all__
    assert redlock.strerror(EPERM) and "refused a command" in redlock.strerror(EPERM), redlock.strerror(EPERM)


# --------------------------------------------------------------------------- other error replies

@pytest.mark.timeout(60)
def test_readonly_and_oom_stay_server_errors(name):
    """READONLY and OOM are not refusals of the client: they stay REDLOCK_ESERVER per node, never
    PermissionDenied or AuthError. Node 0 is out of memory, nodes 1 and 2 are its replicas."""
    with nodes.Cluster(count=3, kind="redis") as c:
        for i in (1, 2):
            c.cmd(i, "REPLICAOF", "127.0.0.1", str(c.port(0)))
        c.cmd(0, "CONFIG", "SET", "maxmemory", "1")
        with _client(c.urls) as client:
            lock = client.lock(name, ttl=5.0, blocking=False)
            t0 = time.monotonic()
            assert lock.acquire() is False
            assert time.monotonic() - t0 < PROMPT
            err = lock.last_error
            assert isinstance(err, (redlock.ServerError, redlock.QuorumError)), repr(err)
            assert not isinstance(err, (PermissionDenied, AuthError)), repr(err)
            failed = [(i, r) for i, r in enumerate(lock.node_results) if r.outcome.name == "ERROR"]
            assert len(failed) >= 2, lock.node_results     # a quorum's worth of failures decided it
            for i, r in failed:
                assert r.code == redlock._lib.REDLOCK_ESERVER, r
                assert ("OOM" if i == 0 else "READONLY") in r.message, r
