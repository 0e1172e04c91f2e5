# SPDX-License-Identifier: BSD-3-Clause
"""Self-test of check.py's semaphore mode on hand-written logs: L holders at once are fine, an
instant with L + 1 is a violation (no nodes needed)."""
import check

from test_check import cycle

MS = 1_000_000


def write_sem_run(tmp_path, clients, limit):
    for cid, lines in clients.items():
        start = ("START %d 0 pid=1 ttl=1000 drift_ms=12.000 hold=20 margin=100 wait=0 nodes=3 fencing=0 "
                 "storage=0 auto_extend=0 pre_write=0 mode=sem limit=%d\n" % (cid, limit))
        (tmp_path / ("client-%d.log" % cid)).write_text(start + "".join(l + "\n" for l in lines))
    (tmp_path / "counter").write_text("0".ljust(31) + "\n")
    return check.analyze(str(tmp_path))


def test_limit_holders_at_once_is_clean(tmp_path):
    # 0 and 1 overlap, 2 starts after 0 released: never more than 2.
    r = write_sem_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 100, write=False),
                                 1: cycle(1, 1, 40, 50, 900, 300, write=False),
                                 2: cycle(2, 1, 90, 120, 900, 400, write=False)}, limit=2)
    assert r.ok, r.violations
    assert not r.overlaps and not r.sem_excess
    assert "most holders at once: 2" in r.summary()


def test_more_than_limit_is_a_violation(tmp_path):
    # All three inside at 100 with a limit of 2: one violation naming the three.
    r = write_sem_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 300, write=False),
                                 1: cycle(1, 1, 40, 50, 900, 300, write=False),
                                 2: cycle(2, 1, 90, 100, 900, 300, write=False)}, limit=2)
    assert not r.ok
    assert len(r.sem_excess) == 1 and len(r.sem_excess[0][1]) == 3
    assert "too many holders: 3" in r.violations[0] and "limit 2" in r.violations[0]
    # the same history is fine with a limit of 3
    r3 = write_sem_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 300, write=False),
                                  1: cycle(1, 1, 40, 50, 900, 300, write=False),
                                  2: cycle(2, 1, 90, 100, 900, 300, write=False)}, limit=3)
    assert r3.ok, r3.violations


def test_expired_holder_does_not_count(tmp_path):
    # 0's validity (100 ms) ran out before 2 acquired, though it released late.
    r = write_sem_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 500, write=False),
                                 1: cycle(1, 1, 40, 50, 900, 500, write=False),
                                 2: cycle(2, 1, 150, 200, 900, 500, write=False)}, limit=2)
    assert r.ok, r.violations
