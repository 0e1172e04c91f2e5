# SPDX-License-Identifier: BSD-3-Clause
# pytest fixtures for the redlock command-line tool's tests: the built binary (from $REDLOCK_CLI
# or build/c/cli/redlock), nodes from the shared harness tests/harness/nodes.py, and helpers.
from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))

import nodes  # noqa: E402  (the shared harness, found through the line above)


def _find_cli() -> str:
    path = os.environ.get("REDLOCK_CLI") or os.path.join(ROOT, "build", "c", "cli", "redlock")
    if not os.access(path, os.X_OK):
        raise pytest.UsageError(
            f"redlock CLI not found at {path}: build it (cmake --build build) or set REDLOCK_CLI")
    return os.path.abspath(path)


@pytest.fixture(scope="session")
def cli() -> str:
    return _find_cli()


@pytest.fixture(scope="session")
def cluster5():
    """Five mixed nodes shared by the tests that never stop or reconfigure a node."""
    with nodes.Cluster(count=5, kind="mixed") as cluster:
        yield cluster


@pytest.fixture
def resource() -> str:
    return "cli-test:" + uuid.uuid4().hex[:12]


class Runner:
    """Runs the CLI with a clean environment (no REDLOCK_* from the caller)."""

    def __init__(self, cli: str):
        self.cli = cli

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REDLOCK_")}
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run(self, *args, env=None, timeout=60, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([self.cli, *args], capture_output=True, text=True, timeout=timeout,
                              env=env if env is not None else self.env(), **kw)

    def popen(self, *args, env=None, **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen([self.cli, *args], text=True,
                                env=env if env is not None else self.env(), **kw)


@pytest.fixture(scope="session")
def runner(cli) -> Runner:
    return Runner(cli)


def pytest_configure(config):
    # Show why a test was skipped (a missing tool: zsh, systemd-analyze, openssl...) in the summary.
    if "s" not in config.option.reportchars:
        config.option.reportchars += "s"
