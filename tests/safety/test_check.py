"""Self-test of check.py on hand-written logs: each check must fire on the fault it looks for and
stay quiet on a clean history (no nodes needed)."""
import check

MS = 1_000_000


def write_run(tmp_path, clients, faults=(), counter=None):
    for cid, lines in clients.items():
        start = "START %d 0 pid=1 ttl=1000 drift_ms=12.000 hold=20 margin=100 wait=0 nodes=3\n" % cid
        (tmp_path / ("client-%d.log" % cid)).write_text(start + "".join(l + "\n" for l in lines))
    (tmp_path / "faults.log").write_text("".join(l + "\n" for l in faults))
    if counter is not None:
        (tmp_path / "counter").write_text(str(counter).ljust(31) + "\n")
    return check.analyze(str(tmp_path))


def cycle(cid, seq, t_call, t_acq, valid_for_ms, rel_at, rc=0, write=True, old=0):
    """One acquisition of client cid, all times in ms."""
    lines = ["ACQ %d %d %d %d %d" % (cid, seq, t_call * MS, t_acq * MS, (t_acq + valid_for_ms) * MS),
             "CS %d %d %d %d" % (cid, seq, (t_acq + 1) * MS, old)]
    if write:
        lines.append("WRITE %d %d %d %d %d %d" % (cid, seq, (rel_at - 2) * MS, (rel_at - 1) * MS, old, old + 1))
    lines.append("REL %d %d %d %d %d %s x" % (cid, seq, rel_at * MS, (rel_at + 1) * MS, rc,
                                                "OK" if rc == 0 else "REDLOCK_ELOST"))
    return lines


def test_clean_history(tmp_path):
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 50, old=0) + cycle(0, 2, 200, 201, 900, 250, old=2),
                             1: cycle(1, 1, 40, 100, 900, 150, old=1)}, counter=3)
    assert r.ok, r.violations
    assert len(r.windows) == 3 and r.writes == 3


def test_overlap_and_lost_update(tmp_path):
    # 1 acquires at 100 while 0 holds until 300: both read 0 and write 1.
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 300, old=0),
                             1: cycle(1, 1, 90, 100, 900, 150, old=0)}, counter=1)
    assert [(a.client, b.client) for a, b in r.overlaps] == [(0, 1)]
    assert r.lost_updates == 1
    assert not r.ok and len(r.violations) == 2


def test_window_ends_at_validity(tmp_path):
    # 0's validity ends at 101 although it released only at 400 (it was stopped): no overlap with
    # 1 acquiring at 200, and its ELOST is explained by the late release.
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 400, rc=-6, write=False),
                             1: cycle(1, 1, 150, 200, 900, 250, old=0)}, counter=1)
    assert r.ok, r.violations


def test_unexplained_and_explained_elost(tmp_path):
    clients = {0: cycle(0, 1, 0, 1, 900, 50, rc=-6, old=0)}
    r = write_run(tmp_path, clients, counter=1)
    assert len(r.unexplained_elost) == 1 and not r.ok
    r = write_run(tmp_path, clients, faults=["FAULT %d del node0 1 DEL_k" % (20 * MS)], counter=1)
    assert r.ok, r.violations
    # a fault that cannot remove keys explains nothing
    r = write_run(tmp_path, clients, faults=["FAULT %d pause node0 0" % (20 * MS)], counter=1)
    assert len(r.unexplained_elost) == 1


def test_validity_beyond_ttl(tmp_path):
    # more than ttl - drift = 988 ms after the call returned: always wrong
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 990, 50, old=0)}, counter=1)
    assert len(r.validity_excess) == 1 and not r.ok
    # one attempt per call (wait=0): 988 ms from the call, plus 25 ms for scheduling
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 40, 980, 60, old=0)}, counter=1)
    assert len(r.validity_excess) == 1 and not r.ok
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 10, 980, 60, old=0)}, counter=1)
    assert r.ok and abs(r.max_call_excess_ns - 2 * MS) < MS


def test_late_write_reported(tmp_path):
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 10, 50, old=0)}, counter=1)
    assert len(r.late_writes) == 1 and r.ok


def test_longest_unavailability(tmp_path):
    # 1 tries from 60 to 500 ms; 0 holds 1..50 and nobody after: 440 ms without a holder.
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 50, old=0),
                             1: ["FAIL 1 1 %d %d -4 REDLOCK_ENOQUORUM x" % (60 * MS, 500 * MS)]}, counter=1)
    assert abs(r.longest_unavailable_ns - 440 * MS) < MS
