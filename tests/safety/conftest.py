# SPDX-License-Identifier: BSD-3-Clause
# pytest fixtures of the safety tests: the lock client binary, the clock-step shim, run
# directories, proxies.
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetylib as S  # noqa: E402
from proxy import Proxy  # noqa: E402


@pytest.fixture(scope="session")
def client_bin():
    try:
        return S.find_client()
    except FileNotFoundError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def shim():
    """The clock-step shim (clockshift.c, libclockshift.so), for nodes.Cluster(clockshift=...)."""
    try:
        return S.find_clockshift()
    except FileNotFoundError as e:
        pytest.fail(str(e))


@pytest.fixture
def make_run(tmp_path, client_bin):
    """make_run(urls, resource) -> safetylib.Run in a fresh directory; clients killed at the end."""
    runs = []

    def make(urls, resource="safety:r"):
        r = S.Run(tmp_path / ("run%d" % len(runs)), urls, resource, client_bin)
        runs.append(r)
        return r
    yield make
    for r in runs:
        r.close()


@pytest.fixture
def make_proxies():
    """make_proxies(cluster) -> one Proxy per node, in node order; closed at the end."""
    made = []

    def make(cluster):
        ps = [Proxy(cluster.port(i)).start() for i in range(cluster.count)]
        made.extend(ps)
        return ps
    yield make
    for p in made:
        p.close()
