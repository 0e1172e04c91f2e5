# SPDX-License-Identifier: BSD-3-Clause
# pottery's README usage examples for Redlock and AIORedlock, taken from the installed pottery's own
# metadata and run as doctests against redlock with only the imports and the constructors changed:
# the migration docs/python.md promises, checked line by line.
from __future__ import annotations

import doctest
import uuid

import pytest

try:
    from importlib.metadata import PackageNotFoundError, metadata
except ImportError:  # Python < 3.8 has no importlib.metadata; the binding needs 3.9 anyway
    pytest.skip("importlib.metadata is missing", allow_module_level=True)

try:
    README = metadata("pottery").get_payload() or metadata("pottery")["Description"]
except PackageNotFoundError as err:
    pytest.skip(f"pottery's README examples need pottery installed ({err}); install it with: "
                "python3 -m pip install -r tests/python/requirements.txt", allow_module_level=True)

# Every change made to pottery's text. Each must match, so a README that moved on fails here
# instead of silently testing less.
CHANGES = [
    # imports
    (">>> from pottery import Redlock\n", ">>> from redlock import Redlock\n"),
    (">>> from pottery import ReleaseUnlockedLock\n",
     ">>> from redlock import LockLost as ReleaseUnlockedLock\n"),
    (">>> from pottery import QuorumNotAchieved\n",
     ">>> from redlock import LockNotAcquired as QuorumNotAchieved\n"),
    ("...     from pottery import AIORedlock\n", "...     from redlock import Redlock\n"),
    (">>> from pottery import AIORedlock\n", ">>> from redlock import Redlock\n"),
    # constructors
    ("Redlock(key='printer', masters={redis}, auto_release_time=.2)",
     "Redlock(URLS, key_prefix=PREFIX).lock('printer', ttl=.2)"),
    ("Redlock(key='printer', masters={redis}, context_manager_blocking=True, context_manager_timeout=0.2)",
     "Redlock(URLS, key_prefix=PREFIX).lock('printer', blocking=True, timeout=0.2)"),
    ("AIORedlock(key='shower', masters={aioredis})",
     "Redlock(URLS, key_prefix=PREFIX).alock('shower')"),
]


def _section(start: str, end: str) -> str:
    i = README.find(start)
    j = README.find(end, i + 1)
    if i < 0 or j < 0:
        pytest.fail(f"pottery's README has no section between {start!r} and {end!r}: "
                    "its layout changed; update this test")
    return README[i:j]


def _examples() -> str:
    # Redlock (without synchronize(), a decorator redlock does not offer) and AIORedlock.
    text = (_section('<a name="redlock">', '<a name="synchronize">')
            + _section('<a name="aioredlock">', '<a name="nextid">'))
    for old, new in CHANGES:
        if old in text:
            text = text.replace(old, new)
        elif not (old.startswith("...") and old.replace("...     ", ">>> ") in text):
            pytest.fail(f"pottery's README no longer contains {old!r}; update this test")
    assert "pottery" not in "\n".join(l for l in text.splitlines() if l.startswith((">>>", "...")))
    return text


def test_pottery_readme_examples(cluster5):
    text = _examples()
    globs = {"URLS": cluster5.urls, "PREFIX": f"readme-{uuid.uuid4().hex[:8]}:"}
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, globs, "pottery README (Redlock, AIORedlock)", "README", 0)
    assert len(test.examples) >= 30, f"only {len(test.examples)} examples found"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out = []
    runner.run(test, out=out.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(out)
