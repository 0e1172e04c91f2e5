# SPDX-License-Identifier: BSD-3-Clause
# TLS through the Python binding: rediss:// nodes from the shared harness with certificates made
# at run time by tests/c/make-test-certs.sh; a verified connection works, a wrong CA is a TLSError.
from __future__ import annotations

import os
import subprocess

import pytest

import nodes
import redlock
from redlock import InvalidArgument, Redlock, TLSError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    subprocess.run(["sh", os.path.join(ROOT, "tests", "c", "make-test-certs.sh"), str(d)], check=True)
    return d


@pytest.fixture(scope="module")
def tls_cluster(certs):
    tls = {"cert": str(certs / "server.crt"), "key": str(certs / "server.key"), "ca": str(certs / "ca.crt")}
    with nodes.Cluster(count=3, kind="mixed", tls=tls) as cluster:
        yield cluster


def test_verified_tls_connects(tls_cluster, certs, name):
    with Redlock(tls_cluster.urls, tls_ca_file=certs / "ca.crt", node_timeout=2.0) as client:
        with client.lock(name, ttl=10.0) as lock:
            assert lock.held
            lock.extend(10.0)
        assert all(tls_cluster.dbsize(i) == 0 for i in range(3))


def test_wrong_ca_is_a_tls_error(tls_cluster, certs, name):
    with Redlock(tls_cluster.urls, tls_ca_file=str(certs / "other-ca.crt"), retry_count=0,
                 node_timeout=2.0) as client:
        with pytest.raises(TLSError) as info:
            client.acquire(name, ttl=10.0)
    assert "certificate verify failed" in str(info.value)
    assert isinstance(info.value, redlock.RedlockError)
    assert all(tls_cluster.dbsize(i) == 0 for i in range(3))


def test_functions_over_tls(tls_cluster, certs, name):
    with Redlock(tls_cluster.urls, tls_ca_file=certs / "ca.crt", node_timeout=2.0) as admin:
        admin.load_functions()
    with Redlock(tls_cluster.urls, tls_ca_file=certs / "ca.crt", node_timeout=2.0,
                 use_functions=True) as client:
        with client.lock(name, ttl=10.0) as lock:
            lock.extend(10.0)


def test_tls_options_need_rediss(certs):
    with pytest.raises(InvalidArgument, match="rediss://"):
        Redlock(["redis://127.0.0.1:6379"], tls_ca_file=certs / "ca.crt")
    with pytest.raises(TypeError):
        Redlock(["rediss://127.0.0.1:6379"], tls_insecure_skip_verify=1)
    with pytest.raises(TLSError, match="no-such-ca.crt"):
        Redlock(["rediss://127.0.0.1:6379"], tls_ca_file=certs / "no-such-ca.crt")
