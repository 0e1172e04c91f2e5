# SPDX-License-Identifier: BSD-3-Clause
# No password in any output: Redlock.nodes, repr/str of every object, every exception (message,
# detail, args, notes, chained causes), every event, node report and log record. A password is
# planted in good URLs against nodes that require it, in wrong ones, and in malformed URLs that the
# C library cannot parse (so cannot mask), such as redis://:hunter2-S3cret.
from __future__ import annotations

import logging
import traceback

import pytest

import nodes
import redlock
from redlock import AuthError, Redlock

PASSWORD = "hunter2-S3cret"
FRAGMENTS = (PASSWORD, "hunter2", "S3cret")


def assert_clean(*texts):
    for text in texts:
        for fragment in FRAGMENTS:
            assert fragment not in text, f"{fragment!r} shown in: {text}"


def exception_texts(err):
    """Everything a program or a traceback can show of an exception and its chain."""
    out = []
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        out += ["".join(traceback.format_exception_only(type(err), err)), str(err), repr(err),
                repr(err.args), str(getattr(err, "detail", "")), str(getattr(err, "resource", ""))]
        out += [str(n) for n in getattr(err, "__notes__", ())]
        err = err.__cause__ or err.__context__
    return out


@pytest.fixture(scope="module")
def guarded():
    """Three nodes that require PASSWORD."""
    with nodes.Cluster(count=3, kind="mixed") as cluster:
        urls = [u.replace("redis://", f"redis://:{PASSWORD}@") for u in cluster.urls]
        for i in range(len(cluster)):
            cluster.cmd(i, "CONFIG", "SET", "requirepass", PASSWORD)
        yield cluster, urls


MALFORMED = [
    f"redis://:{PASSWORD}",                      # no '@': the password reads as a port
    f"redis://user:{PASSWORD}",
    f"redis://:{PASSWORD}@",                     # no host
    f"redis://:{PASSWORD}@127.0.0.1:notaport",
    f"redis://:{PASSWORD}@[::1",                 # unclosed IPv6 bracket
    f"redis://:{PASSWORD}@127.0.0.1:6379/notadb",
    f"foo://:{PASSWORD}@127.0.0.1",              # unknown scheme
    f"unix://:{PASSWORD}@",                      # no path
    f"redis://:{PASSWORD}@127.0.0.1\0:6379",     # NUL
    f"redis://:{PASSWORD}\udc80@127.0.0.1",      # cannot be encoded as UTF-8
    f"{PASSWORD}",                               # not a URL at all
    f"redis://{PASSWORD}:@127.0.0.1",            # the user name is the secret
]


@pytest.mark.parametrize("url", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_url_errors_show_no_password(url, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(Exception) as info:
        Redlock([url])
    assert_clean(*exception_texts(info.value), caplog.text)


def test_client_option_errors_show_no_password(caplog):
    caplog.set_level(logging.DEBUG)
    url = f"redis://:{PASSWORD}@127.0.0.1:1"
    cases = [
        dict(nodes=[url, url]),                                  # the same server twice
        dict(nodes=[url, f"redis://:{PASSWORD}@localhost:1"]),   # the same after resolving
        dict(nodes=[url], tls_ca_file="/nonexistent/ca.pem"),    # TLS option with redis://
        dict(nodes=[f"redis://:{PASSWORD}@127.0.0.1:{p}" for p in range(1, 80)]),  # too many
        dict(nodes=[url], node_timeout=-1),
        dict(nodes=[f"rediss://:{PASSWORD}@127.0.0.1:1"], tls_ca_file="/nonexistent/ca.pem"),
    ]
    for kw in cases:
        nodes_ = kw.pop("nodes")
        with pytest.raises(Exception) as info:
            Redlock(nodes_, **kw)
        assert_clean(*exception_texts(info.value), caplog.text)


def test_working_client_shows_no_password(guarded, caplog):
    caplog.set_level(logging.DEBUG)
    cluster, urls = guarded
    events = []
    with Redlock(urls, node_timeout=0.5, on_event=events.append) as client:
        assert client.nodes == tuple(u.replace(PASSWORD, "***") for u in urls) or all(
            "***" in n for n in client.nodes), client.nodes
        with client.lock("secret-test", ttl=5.0) as lock:
            shown = [repr(client), str(client), repr(lock), str(lock), repr(client.nodes),
                     repr(lock.node_results), repr(lock.options)]
            assert all(r.ok or r.outcome.name == "NOT_WAITED" for r in lock.node_results)
        alock = client.alock("secret-test")
        shown += [repr(alock), str(alock)]
    shown += [repr(e) for e in events]
    assert events
    assert_clean(*shown, caplog.text)


def test_wrong_password_raises_at_once_and_shows_no_password(guarded, caplog):
    caplog.set_level(logging.DEBUG)
    cluster, urls = guarded
    wrong = [u.replace(PASSWORD, PASSWORD + "-wrong") for u in urls]
    events = []
    with Redlock(wrong, node_timeout=0.5, on_event=events.append) as client:
        lock = client.lock("secret-test", ttl=5.0)
        with pytest.raises(AuthError) as info:  # no wait fixes a password: raised, not False
            lock.acquire()  # blocking=True, timeout=-1
        texts = exception_texts(info.value)
        texts += [repr(client.nodes), repr(lock), repr(lock.node_results)]
        texts += [repr(e) for e in events]
        with pytest.raises(redlock.LockStateError) as info:
            lock.release()
        texts += exception_texts(info.value)
    assert_clean(*texts, caplog.text)
    # A missing password is reported too, without any.
    with Redlock(cluster.urls, node_timeout=0.5) as client:
        with pytest.raises(AuthError) as info:
            client.acquire("secret-test", ttl=5.0, blocking=False)
        assert_clean(*exception_texts(info.value))


def test_unreachable_node_errors_show_no_password(caplog):
    caplog.set_level(logging.DEBUG)
    urls = [f"redis://user:{PASSWORD}@127.0.0.1:{p}" for p in (1, 2, 3)]
    with Redlock(urls, node_timeout=0.05, connect_timeout=0.05) as client:
        lock = client.lock("secret-test", ttl=5.0)
        assert lock.acquire(timeout=0.2) is False
        texts = exception_texts(lock.last_error)
        texts += [repr(lock.node_results), repr(client.nodes)]
        with pytest.raises(redlock.RedlockError) as info:
            with client.lock("secret-test", blocking=False):
                pass
        texts += exception_texts(info.value)
    assert_clean(*texts, caplog.text)
    assert all("***" in n for n in client.nodes)


def test_c_masks_every_url_shown():
    # The binding shows URLs only as the C core masks them (c/common/url.c).
    client = redlock.Redlock([f"redis://u:{PASSWORD}@127.0.0.1:1/0", "redis://127.0.0.1:6379/1",
                              "unix:///tmp/r.sock?db=1"])
    assert client.nodes[0] == "redis://***@127.0.0.1:1/0"
    assert client.nodes[1:] == ("redis://127.0.0.1:6379/1", "unix:///tmp/r.sock?db=1")
    with pytest.raises(redlock.InvalidArgument) as info:
        redlock.Redlock([f"redis://:{PASSWORD}"])
    assert PASSWORD not in str(info.value) and "***" in str(info.value)