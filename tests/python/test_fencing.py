# SPDX-License-Identifier: BSD-3-Clause
# Fencing tokens through the Python binding: Redlock(fencing=True) gives every acquisition a token,
# lock.token, that grows from holder to holder (also across clients); None without fencing.
from __future__ import annotations

import time

import pytest

from redlock import Redlock


def test_tokens_grow_across_acquisitions_and_clients(make_client, cluster5, name):
    first = make_client(cluster5.urls, fencing=True)
    second = make_client(cluster5.urls, fencing=True)
    reused = first.lock(name, ttl=5.0)  # one handle acquired again and again
    tokens = []
    for _ in range(3):
        for lock in (reused, second.lock(name, ttl=5.0)):
            with lock:
                token = lock.token
                assert type(token) is int and token >= 1
                assert lock.token == token  # stable while held
                tokens.append(token)
            assert lock.token is None  # released
    assert all(a < b for a, b in zip(tokens, tokens[1:])), tokens


def test_no_token_without_fencing(client, name):
    lock = client.lock(name, ttl=5.0)
    assert lock.token is None  # never acquired
    with lock:
        assert lock.held and lock.token is None


def test_no_token_once_the_validity_ran_out(make_client, cluster5, name):
    c = make_client(cluster5.urls, fencing=True)
    lock = c.acquire(name, ttl=0.2)
    assert lock.token is not None
    time.sleep(0.4)
    assert not lock.held and lock.token is None


def test_fencing_must_be_a_bool(cluster5):
    with pytest.raises(TypeError, match="fencing"):
        Redlock(cluster5.urls, fencing=1)
