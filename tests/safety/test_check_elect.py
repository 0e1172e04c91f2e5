# SPDX-License-Identifier: BSD-3-Clause
"""check_elect.py on hand-written logs: each violation it exists to find is found, and a clean run
passes. Times in ms, written as ns."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import check_elect  # noqa: E402

MS = 1_000_000
START = "START %d 0 pid=1 mode=elect role=%s ttl=1000 drift_ms=12 hold=400 margin=100 wait=2000 " \
        "nodes=3 node_timeout=50 connect_timeout=200\n"


def write(tmp_path, logs, faults=""):
    for cid, (role, lines) in logs.items():
        with open(tmp_path / ("client-%d.log" % cid), "w") as f:
            f.write(START % (cid, role))
            for line in lines:
                f.write(line % {"ms": MS} + "\n" if "%(" in line else line + "\n")
    with open(tmp_path / "faults.log", "w") as f:
        f.write(faults)
    return check_elect.analyze(str(tmp_path))


def lead(cid, seq, t, until, term, resign=None):
    out = ["LEAD %d %d %d %d %d %d" % (cid, seq, t * MS, t * MS, until * MS, term)]
    if resign is not None:
        out.append("RESIGN %d %d %d %d 0 OK" % (cid, seq, resign * MS, resign * MS))
    return out


def test_clean_run(tmp_path):
    r = write(tmp_path, {
        0: ("campaigner", lead(0, 1, 0, 900, 1, resign=400) +
            ["EWRITE 0 1 %d %d %d 1 ACCEPT 0" % (100 * MS, 100 * MS, 100 * MS)]),
        1: ("campaigner", lead(1, 1, 401, 1300, 2, resign=800) +
            ["EWRITE 1 1 %d %d %d 2 ACCEPT 1" % (500 * MS, 500 * MS, 500 * MS)]),
        5: ("observer", ["SEEN 5 0 10 1 1 1 c0", "SEEN 5 0 405 0 1 0 -", "SEEN 5 0 410 1 2 1 c1"]),
        2: ("campaigner", lead(2, 1, 1500, 2500, 3)),
    }, faults="FAULT %d client-kill client1 0\n" % (600 * MS))
    assert r.ok, r.violations
    assert r.leaderless and r.leaderless[0][1] == 900 * MS
    assert len(r.leads) == 3


def test_overlap_and_term_order(tmp_path):
    r = write(tmp_path, {
        0: ("campaigner", lead(0, 1, 0, 900, 5)),
        1: ("campaigner", lead(1, 1, 500, 1300, 4)),
    })
    assert any(v.startswith("overlap") for v in r.violations)
    assert any(v.startswith("term order") for v in r.violations)


def test_fresh_write_refused_and_stale_accepted(tmp_path):
    r = write(tmp_path, {
        0: ("campaigner", lead(0, 1, 0, 900, 1, resign=300) +
            ["EWRITE 0 1 %d %d %d 1 REJECT 2" % (100 * MS, 100 * MS, 100 * MS),
             "EWRITE 0 1 %d %d %d 1 ACCEPT 2" % (250 * MS, 250 * MS, 250 * MS)]),
        1: ("campaigner", lead(1, 1, 301, 1300, 2) +
            ["EWRITE 1 1 %d %d %d 2 ACCEPT 0" % (200 * MS, 200 * MS, 200 * MS)]),
    })
    assert any(v.startswith("fresh write refused") for v in r.violations)
    assert any(v.startswith("stale write accepted") for v in r.violations)


def test_observer_back_and_phantom(tmp_path):
    r = write(tmp_path, {
        0: ("campaigner", lead(0, 1, 0, 900, 3, resign=400)),
        5: ("observer", ["SEEN 5 0 10 1 3 1 c0", "SEEN 5 0 20 1 2 1 c9", "SEEN 5 0 30 0 3 0 -",
                         "SEEN 5 0 40 1 3 2 c0"]),
    })
    assert any("went back" in v for v in r.violations)
    assert any("no campaign returned" in v for v in r.violations)


def test_leaderless_bound(tmp_path):
    # Killed at 100 ms; the next leader only at 5000 ms: beyond TTL + timeouts + slack.
    r = write(tmp_path, {
        0: ("campaigner", lead(0, 1, 0, 900, 1)),
        1: ("campaigner", lead(1, 1, 5000, 6000, 2)),
    }, faults="FAULT %d client-kill client0 0\n" % (100 * MS))
    assert any(v.startswith("leaderless") for v in r.violations)
