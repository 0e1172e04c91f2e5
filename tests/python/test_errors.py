# SPDX-License-Identifier: BSD-3-Clause
# Bad input and the exception classes: wrong types give TypeError, bad values give InvalidArgument
# (a RedlockError and a ValueError) carrying the C library's detail, and each C code has its class.
from __future__ import annotations

import math

import nodes
import pytest

import redlock
from redlock import AuthError, InvalidArgument, LockNotAcquired, NotSupported, Redlock, RedlockError

lib = redlock._lib


# -- the exception classes -------------------------------------------------------------------

ALL_CODES = {
    "REDLOCK_EINVAL": redlock.InvalidArgument,
    "REDLOCK_ENOMEM": redlock.RedlockMemoryError,
    "REDLOCK_ENOTACQUIRED": redlock.LockNotAcquired,
    "REDLOCK_ENOQUORUM": redlock.QuorumError,
    "REDLOCK_EEXPIRED": redlock.LockExpired,
    "REDLOCK_ELOST": redlock.LockLost,
    "REDLOCK_ETIMEDOUT": redlock.LockTimeout,
    "REDLOCK_EIO": redlock.RedlockIOError,
    "REDLOCK_ESERVER": redlock.ServerError,
    "REDLOCK_EAUTH": redlock.AuthError,
    "REDLOCK_ETLS": redlock.TLSError,
    "REDLOCK_ENOTSUP": redlock.NotSupported,
    "REDLOCK_ECANCELED": redlock.Cancelled,
    "REDLOCK_ELIMIT": redlock.ExtensionLimit,
    "REDLOCK_ESTATE": redlock.LockStateError,
    "REDLOCK_EUNREACHABLE": redlock.NodesUnreachable,
    "REDLOCK_EPERM": redlock.PermissionDenied,
    "REDLOCK_EATRISK": redlock.LockAtRisk,
    "REDLOCK_EFENCED": redlock.FencedOut,
}


@pytest.mark.parametrize("cname,cls", sorted(ALL_CODES.items()))
def test_each_c_code_has_its_own_class(cname, cls):
    from redlock._errors import check
    code = getattr(lib, cname)
    assert cls.code == code
    with pytest.raises(cls) as info:
        check(code, "node 1 said something", "res")
    err = info.value
    assert type(err) is cls and isinstance(err, RedlockError)
    assert err.code == code and err.error_name == cname
    assert err.detail == "node 1 said something" and err.resource == "res"
    assert "node 1 said something" in str(err) and redlock.strerror(code) in str(err)


def test_distinct_classes_and_useful_builtin_bases():
    assert len(set(ALL_CODES.values())) == len(ALL_CODES)
    assert issubclass(redlock.InvalidArgument, ValueError)
    assert issubclass(redlock.LockStateError, RuntimeError)
    assert issubclass(redlock.LockTimeout, TimeoutError)
    assert issubclass(redlock.LockTimeout, redlock.LockNotAcquired)  # "not acquired" covers both
    assert not issubclass(redlock.LockNotAcquired, redlock.LockTimeout)


def test_check_returns_on_success():
    from redlock._errors import check
    assert check(0) is None


# -- the client -------------------------------------------------------------------------------

def test_nodes_as_a_single_string_is_a_type_error(cluster5):
    with pytest.raises(TypeError, match="list of URLs"):
        Redlock(cluster5.url(0))


@pytest.mark.parametrize("nodes", [None, 42, [1, 2, 3], [None], [b"ok", object()]])
def test_nodes_of_wrong_type(nodes):
    with pytest.raises(TypeError):
        Redlock(nodes)


@pytest.mark.parametrize("url,words", [
    ("redis://127.0.0.1:abc", "port"),
    ("redis://127.0.0.1:99999", "port"),
    ("http://127.0.0.1:6379", "scheme"),
    ("", ""),
    ("redis://", ""),
    ("unix://", ""),
    ("redis://[::1:6379", ""),
])
def test_malformed_urls_are_invalid_arguments_with_detail(url, words):
    with pytest.raises(InvalidArgument) as info:
        Redlock([url, "redis://127.0.0.1:1", "redis://127.0.0.1:2"])
    assert isinstance(info.value, ValueError)
    assert info.value.code == lib.REDLOCK_EINVAL
    assert info.value.detail, "the C library's errbuf detail is missing"
    assert words.lower() in str(info.value).lower()


def test_url_with_nul_is_rejected_before_c_sees_it():
    with pytest.raises(InvalidArgument, match="NUL"):
        Redlock(["redis://127.0.0.1:1\0garbage", "redis://127.0.0.1:2", "redis://127.0.0.1:3"])


def test_duplicate_nodes():
    with pytest.raises(InvalidArgument) as info:
        Redlock(["redis://127.0.0.1:7000", "redis://127.0.0.1:7001", "redis://127.0.0.1:7000"])
    assert info.value.detail


def test_duplicate_nodes_spelled_differently():
    with pytest.raises(InvalidArgument):
        Redlock(["redis://127.0.0.1:7000", "redis://localhost:7000"])


def test_no_nodes():
    with pytest.raises(InvalidArgument):
        Redlock([])


def test_too_many_nodes():
    with pytest.raises(InvalidArgument):
        Redlock([f"redis://127.0.0.1:{7000 + i}" for i in range(lib.REDLOCK_MAX_NODES + 1)])


def test_rediss_is_accepted_and_tls_options_need_it():
    Redlock(["rediss://127.0.0.1:6379"]).close()  # no connection yet; TLS tests: test_tls.py
    with pytest.raises(InvalidArgument) as info:
        Redlock(["redis://127.0.0.1:6379"], tls_server_name="localhost")
    assert isinstance(info.value, RedlockError) and "rediss://" in str(info.value)


URLS = ["redis://127.0.0.1:7000", "redis://127.0.0.1:7001", "redis://127.0.0.1:7002"]


@pytest.mark.parametrize("kw", [
    {"retry_count": -1},
    {"retry_delay": -0.5},
    {"retry_jitter": math.nan},
    {"node_timeout": 0},
    {"node_timeout": 1e9},
    {"connect_timeout": 1e9},
    {"drift_factor": -0.1},
    {"drift_factor": 0.9},
    {"drift_factor": math.nan},
    {"wait": 1e12},
    {"max_extensions": -3},
    {"max_hold": -1},
    {"key_prefix": "p" * (2 * 1024 + 1)},
    {"key_prefix": "a\0b"},
])
def test_bad_option_values(kw):
    with pytest.raises(InvalidArgument):
        Redlock(URLS, **kw)


@pytest.mark.parametrize("kw", [
    {"retry_count": "3"},
    {"retry_count": 2.5},
    {"retry_count": True},
    {"retry_delay": "0.1"},
    {"node_timeout": None},
    {"drift_factor": "0.01"},
    {"key_prefix": 5},
    {"max_hold": [1]},
])
def test_option_types(kw):
    with pytest.raises(TypeError):
        Redlock(URLS, **kw)


# -- lock names, TTLs and waits ------------------------------------------------------------------

def test_none_name_is_a_type_error(client):
    with pytest.raises(TypeError, match="None"):
        client.lock(None)


# (a list or tuple of names is a MultiLock: test_multilock.py; a set has no order to keep)
@pytest.mark.parametrize("bad", [42, 3.5, {"x"}, object()])
def test_name_of_wrong_type(client, bad):
    with pytest.raises(TypeError):
        client.acquire(bad, ttl=1.0)


def test_empty_name(client):
    with pytest.raises(InvalidArgument):
        client.lock("")


def test_huge_name(client):
    limit = lib.REDLOCK_MAX_RESOURCE_LEN
    with client.lock("x" * limit, ttl=1.0) as lock:  # the limit itself is fine
        assert lock.held
    with pytest.raises(InvalidArgument) as info:
        client.lock("x" * (limit + 1))
    assert str(limit) in str(info.value)
    with pytest.raises(InvalidArgument):
        client.lock("\u00e9" * (limit // 2 + 1))  # the limit counts UTF-8 bytes


def test_name_with_nul(client):
    with pytest.raises(InvalidArgument, match="NUL"):
        client.lock("a\0b")


def test_name_that_is_not_utf8_encodable(client):
    with pytest.raises(InvalidArgument):
        client.lock("bad \udc80 surrogate")


@pytest.mark.parametrize("ttl", [0, 0.0, 0.0001, 86400.001, 1e9, 1e300, math.inf, 2**80])
def test_ttl_out_of_range_is_decided_by_c(client, name, ttl):
    with pytest.raises(InvalidArgument) as info:
        client.acquire(name, ttl=ttl)
    assert "ttl" in info.value.detail


@pytest.mark.parametrize("ttl", [-1, -0.001, math.nan, -math.inf])
def test_negative_or_nan_ttl(client, name, ttl):
    with pytest.raises(InvalidArgument, match="ttl"):
        client.lock(name, ttl=ttl)


@pytest.mark.parametrize("ttl", ["10", None, b"1", [1], True])
def test_ttl_of_wrong_type(client, name, ttl):
    with pytest.raises(TypeError, match="ttl"):
        client.lock(name, ttl=ttl)


def test_bad_ttl_in_extend_and_acquire(client, name):
    with client.lock(name, ttl=2.0) as lock:
        with pytest.raises(InvalidArgument):
            lock.extend(0)
        with pytest.raises(InvalidArgument):
            lock.extend(-5)
        with pytest.raises(TypeError):
            lock.extend("5")
        assert lock.held


@pytest.mark.parametrize("wait", [-1, -0.5, math.nan])
def test_negative_wait(client, name, wait):
    with pytest.raises(InvalidArgument, match="wait"):
        client.lock(name, ttl=1.0, wait=wait)


def test_absurd_wait_is_refused(client, name):
    # Waits longer than C's seven days are one C wait cancelled at the deadline (test_long_waits.py);
    # beyond 1e12 s they are a mistake.
    with pytest.raises(InvalidArgument, match="wait must be at most"):
        client.acquire(name, ttl=1.0, wait=1e13)


def test_wait_with_non_blocking(client, name):
    with pytest.raises(ValueError):
        client.lock(name, ttl=1.0, wait=5.0, blocking=False)


@pytest.mark.parametrize("kw", [{"wait": "5"}, {"blocking": "no"}, {"blocking": 0}])
def test_wait_and_blocking_types(client, name, kw):
    with pytest.raises(TypeError):
        client.lock(name, ttl=1.0, **kw)


def test_lock_needs_a_client():
    with pytest.raises(TypeError):
        redlock.Lock("not a client", "x")


# -- the message says the cause once ----------------------------------------------------------

def test_auth_refusal_says_the_cause_once():
    # The message gives the code's words, then C's detail (which, for a refusal, no longer
    # starts with them; other codes' details still may): never the words twice.
    with nodes.Cluster(count=3, kind="mixed") as cluster:
        for i in range(len(cluster)):
            cluster.cmd(i, "CONFIG", "SET", "requirepass", "s3cret")
        with Redlock(cluster.urls, node_timeout=0.5) as client:   # no password in the URLs
            with pytest.raises(AuthError) as info:
                client.acquire("auth-once", ttl=5.0, blocking=False)
    message = str(info.value)
    assert message.count("authentication failed") == 1, message
    assert message.startswith("'auth-once': authentication failed: "), message
    assert "NOAUTH" in message and "2 needed" in message, message   # C's detail is all there
    assert "this node needs a password" in message, message
    assert info.value.detail.startswith("3 of 3 nodes refused the client"), info.value.detail   # as C wrote it


def test_contention_says_the_cause_once(client, other, name):
    with client.lock(name, ttl=5.0):
        with pytest.raises(LockNotAcquired) as info:
            other.acquire(name, ttl=5.0, blocking=False)
    message = str(info.value)
    assert message.count("not acquired") == 1, message
    assert "nodes granted" in message, message


@pytest.mark.parametrize("detail,shown", [
    ("authentication failed: 0 of 3 nodes granted", "authentication failed: 0 of 3 nodes granted"),
    ("authentication failed", "authentication failed"),
    ("node 1 said no", "authentication failed: node 1 said no"),
    ("failed: x", "authentication failed: failed: x"),   # only the code's whole words are its own
])
def test_the_code_words_at_the_head_of_a_detail_are_said_once(detail, shown):
    err = redlock._errors.error(lib.REDLOCK_EAUTH, detail, "r")
    assert str(err) == f"'r': {shown}" and err.detail == detail
