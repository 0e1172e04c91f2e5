# SPDX-License-Identifier: BSD-3-Clause
# pytest fixtures for the Python binding's tests: local Redis/Valkey nodes from the shared harness
# tests/harness/nodes.py, clients over them, and unique lock names.
from __future__ import annotations

import os
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "harness"))
# _workers.py must be importable by name in spawned child processes, whatever pytest's import mode.
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import nodes  # noqa: E402  (the shared harness, found through the line above)

try:
    import redlock  # noqa: F401
except ImportError as err:  # the extension must be built first
    raise pytest.UsageError(
        f"cannot import the redlock binding ({err}); build it first: python3 -m pip install ."
    ) from None


def pytest_configure(config: pytest.Config) -> None:
    # Print the reason of every skip (pottery missing, ...) even under -q: a skip must be seen.
    chars = config.option.reportchars or ""
    if "s" not in chars and "a" not in chars and "A" not in chars:
        config.option.reportchars = chars + "s"


@pytest.fixture(scope="session")
def cluster5():
    """Five nodes (Redis and Valkey mixed) shared by the tests that never stop a node."""
    with nodes.Cluster(count=5, kind="mixed") as cluster:
        yield cluster


@pytest.fixture
def fresh5():
    """Five nodes of this test's own, for tests that kill or pause nodes."""
    with nodes.Cluster(count=5) as cluster:
        yield cluster


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A lock name no other test uses, so tests on the shared cluster stay independent."""
    return f"pytest:{request.node.name}:{uuid.uuid4().hex[:8]}"


def _fast(urls, **kw):
    # Short retry delays keep contended tests quick; the algorithm itself is unchanged. A generous
    # node timeout keeps a loaded CI machine from turning "held elsewhere" into "no quorum".
    kw.setdefault("retry_delay", 0.001)
    kw.setdefault("retry_jitter", 0.01)
    kw.setdefault("node_timeout", 0.5)
    return redlock.Redlock(urls, **kw)


@pytest.fixture
def client(cluster5):
    with _fast(cluster5.urls) as c:
        yield c


@pytest.fixture
def other(cluster5):
    """A second, independent client on the same nodes (another "process")."""
    with _fast(cluster5.urls) as c:
        yield c


@pytest.fixture
def make_client():
    """Builds clients that are closed after the test: make_client(urls, **options)."""
    made = []

    def make(urls, **kw):
        c = _fast(urls, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
