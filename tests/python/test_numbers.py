# SPDX-License-Identifier: BSD-3-Clause
# Number conversion keeps the sign and refuses NaN, infinities and out-of-range values with a
# ValueError that names the argument and says why: nothing may wrap or saturate into another value
# (Redlock(urls, max_hold=-2**1024) was once taken as about 49 days).
from __future__ import annotations

import datetime
import fractions
import math

import pytest

from redlock import InvalidArgument, Redlock

HUGE = 2**1024            # too large for a float
BAD = [  # (value, words the message must contain)
    (-HUGE, "must not be negative"),
    (-1, "must not be negative"),
    (-1e-9, "must not be negative"),
    (-math.inf, "must not be negative"),
    (datetime.timedelta(seconds=-1), "must not be negative"),
    (fractions.Fraction(-1, 3), "must not be negative"),
    (math.nan, "NaN"),
    (math.inf, "must be finite"),
    (HUGE, "must be at most"),
    (1e300, "must be at most"),
]
IDS = ["-2**1024", "-1", "-1e-9", "-inf", "timedelta(-1s)", "Fraction(-1,3)", "nan", "inf",
       "2**1024", "1e300"]

CLIENT_DURATIONS = ["retry_delay", "retry_jitter", "wait", "drift_min", "node_timeout",
                    "connect_timeout", "max_hold"]


def _check(info, arg, words):
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert msg.startswith(arg + " "), f"the message does not start with the argument: {msg}"
    assert words in msg, msg
    assert len(msg) < 300, "a huge number must not be printed in full"


@pytest.mark.parametrize("arg", CLIENT_DURATIONS)
@pytest.mark.parametrize("value,words", BAD, ids=IDS)
def test_client_durations(arg, value, words):
    with pytest.raises(InvalidArgument) as info:
        Redlock(["redis://127.0.0.1:1"], **{arg: value})
    _check(info, arg, words)


def test_the_reported_cases():
    with pytest.raises(InvalidArgument, match="^max_hold must not be negative"):
        Redlock(["redis://127.0.0.1:1"], max_hold=-2**1024)
    with Redlock(["redis://127.0.0.1:1"]) as client:
        with pytest.raises(InvalidArgument, match="^ttl must not be negative"):
            client.lock("x", ttl=-2**1024)


@pytest.mark.parametrize("arg", ["retry_count", "max_extensions"])
@pytest.mark.parametrize("value,words", [(-HUGE, "must not be negative"), (-1, "must not be negative"),
                                         (2**32, "must be at most 4294967295"),
                                         (HUGE, "must be at most")])
def test_client_counts(arg, value, words):
    with pytest.raises(InvalidArgument) as info:
        Redlock(["redis://127.0.0.1:1"], **{arg: value})
    _check(info, arg, words)


@pytest.mark.parametrize("value,words", [(-HUGE, "must not be negative"), (math.nan, "NaN"),
                                         (math.inf, "must be finite"), (0.5, "[0, 0.5)"),
                                         (HUGE, "[0, 0.5)")])
def test_drift_factor(value, words):
    with pytest.raises(InvalidArgument) as info:
        Redlock(["redis://127.0.0.1:1"], drift_factor=value)
    _check(info, "drift_factor", words)


@pytest.fixture
def offline():
    with Redlock(["redis://127.0.0.1:1"], node_timeout=0.05) as client:
        yield client


LOCK_DURATIONS = ["ttl", "retry_delay", "retry_jitter", "drift_min"]


@pytest.mark.parametrize("arg", LOCK_DURATIONS)
@pytest.mark.parametrize("value,words", BAD, ids=IDS)
def test_lock_durations(offline, arg, value, words):
    with pytest.raises(InvalidArgument) as info:
        offline.lock("x", **{arg: value})
    _check(info, arg, words)


@pytest.mark.parametrize("value,words", BAD, ids=IDS)
def test_auto_extend_max_hold(offline, value, words):
    with pytest.raises(InvalidArgument) as info:
        offline.lock("x", auto_extend=True, max_hold=value)
    _check(info, "max_hold", words)


@pytest.mark.parametrize("value,words", BAD, ids=IDS)
def test_acquire_and_extend_ttl(offline, value, words):
    lock = offline.lock("x")
    with pytest.raises(InvalidArgument) as info:
        lock.acquire(ttl=value)
    _check(info, "ttl", words)
    with pytest.raises(InvalidArgument) as info:
        lock.extend(value)
    _check(info, "ttl", words)


def test_ttl_limits(offline):
    with pytest.raises(InvalidArgument, match=r"^ttl must be at most 86400 seconds"):
        offline.lock("x", ttl=86400.001)
    with pytest.raises(InvalidArgument, match=r"^ttl must be at least 0.001 seconds"):
        offline.lock("x", ttl=0)
    assert offline.lock("x", ttl=86400).ttl == 86400.0


@pytest.mark.parametrize("value,exc,words", [
    (-HUGE, ValueError, "timeout must be -1"),
    (-2, ValueError, "timeout must be -1"),
    (-0.5, ValueError, "timeout must be -1"),
    (math.nan, InvalidArgument, "timeout must be a number of seconds"),
    (math.inf, InvalidArgument, "timeout must be finite"),
    (HUGE, InvalidArgument, "timeout must be at most 1e12"),
])
def test_timeout(offline, value, exc, words):
    with pytest.raises(exc) as info:
        offline.lock("x", timeout=value)
    assert words in str(info.value)
    with pytest.raises(exc) as info:
        offline.lock("x").acquire(timeout=value)
    assert words in str(info.value)


@pytest.mark.parametrize("value,words", [(-HUGE, "wait must not be negative"),
                                         (math.nan, "NaN"), (math.inf, "wait must be finite"),
                                         (HUGE, "wait must be at most")])
def test_lock_wait(offline, value, words):
    with pytest.raises(InvalidArgument) as info:
        offline.lock("x", wait=value)
    assert words in str(info.value)


def test_good_values_convert_exactly(offline):
    lock = offline.lock("x", ttl=datetime.timedelta(milliseconds=1500),
                        retry_delay=fractions.Fraction(1, 4), retry_jitter=0,
                        drift_min=datetime.timedelta(0), retry_count=2**32 - 1)
    assert lock.ttl == 1.5
    assert lock.options["retry_delay"] == 0.25 and lock.options["retry_jitter"] == 0.0
    assert lock.options["drift_min"] == 0.0 and lock.options["retry_count"] == 2**32 - 1
    assert offline.lock("x", ttl=-0.0 + 1).ttl == 1.0
    with pytest.raises(TypeError):
        offline.lock("x", ttl=True)
    with pytest.raises(TypeError):
        offline.lock("x", ttl="10")
