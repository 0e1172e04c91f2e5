# SPDX-License-Identifier: BSD-3-Clause
# The ```python examples of docs/python.md run, top to bottom in one namespace, against local
# nodes: the docs' example hosts become the harness's nodes. A block that cannot run says why in
# an HTML comment on the line before it: <!-- not run: REASON -->.
from __future__ import annotations

import ast
import asyncio
import inspect
import logging
import os
import re

import pytest

import redlock

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "docs", "python.md")
NOT_RUN = re.compile(r"^<!-- not run: (\S.*\S) -->$")


def blocks(path: str):
    """(line of the opening fence, code, reason it is not run or None) for each ```python block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start, body = i + 1, []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            prev = lines[start - 2].strip() if start >= 2 else ""
            m = NOT_RUN.match(prev)
            out.append((start, "\n".join(body) + "\n", m.group(1) if m else None))
        i += 1
    return out


def localise(code: str, urls) -> str:
    """The docs' example hosts (10.0.0.1-3, a/b/c) become the local nodes."""
    for k, host in enumerate(("10.0.0.1", "10.0.0.2", "10.0.0.3")):
        code = re.sub(r"redis://%s(:6379)?" % re.escape(host), urls[k], code)
    for k, host in enumerate("abc"):
        code = code.replace(f"redis://{host}:6379", urls[k])
    return code


class Metrics:
    def __init__(self):
        self.calls = []

    def histogram(self, name, value, tags=None):
        self.calls.append((name, value, tags))

    def increment(self, name, tags=None):
        self.calls.append((name, 1, tags))


class Storage:
    """A store that refuses fencing tokens lower than the highest it has seen."""

    def __init__(self):
        self.highest = 0

    def write(self, data, fence):
        assert isinstance(fence, int) and fence >= 1, fence
        assert fence >= self.highest, (fence, self.highest)
        self.highest = fence


def test_every_block_runs_or_says_why(cluster5):
    found = blocks(DOC)
    assert found, "no ```python block in docs/python.md"
    processed = []
    ns = {
        "__name__": "docs_python_md",
        "Redlock": redlock.Redlock, "redlock": redlock.redlock,
        "urls": cluster5.urls[:3],
        "log": logging.getLogger("docs-example"),
        "metrics": Metrics(), "storage": Storage(), "data": b"row",
        "work": [1, 2, 3], "process": processed.append,
    }
    ns["client"] = redlock.Redlock(ns["urls"])
    ran = 0
    for line, code, reason in found:
        if reason is not None:
            continue
        src = localise(code, cluster5.urls)
        compiled = compile(src, f"docs/python.md:{line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(compiled, ns)  # noqa: S307 - the project's own docs
        if inspect.iscoroutine(result):
            asyncio.run(result)
        ran += 1
    # What the examples did, where a wrong example would show.
    assert processed == [1, 2, 3]                  # the auto-extension example's loop ran
    assert ns["storage"].highest >= 1              # the fencing example wrote with a token
    assert int(ns["store"].get("ledger:entries")) >= 1   # ...and through the store's fence
    assert any(c[0] == "lock.acquire_seconds" for c in ns["metrics"].calls)  # the hook saw the asyncio example
    assert ran >= len(found) - 3, "most examples must run; mark only those that cannot"


def test_not_run_markers_give_a_reason():
    for line, code, reason in blocks(DOC):
        if reason is not None:
            assert len(reason) > 10, f"docs/python.md:{line}: say why the example is not run"


def test_localise_leaves_no_example_host():
    urls = ["redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"]
    for line, code, reason in blocks(DOC):
        if reason is None:
            assert not re.search(r"redis://(10\.0\.0\.\d|[abc]:6379)", localise(code, urls)), line


@pytest.mark.parametrize("text,want", [
    ("<!-- not run: two programs side by side -->", "two programs side by side"),
    ("<!-- not run: -->", None),
])
def test_marker_syntax(text, want):
    m = NOT_RUN.match(text)
    assert (m.group(1) if m else None) == want
