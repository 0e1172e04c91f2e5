# SPDX-License-Identifier: BSD-3-Clause
"""Self-test of check.py on hand-written logs: each check must fire on the fault it looks for and
stay quiet on a clean history (no nodes needed)."""
import check

MS = 1_000_000


def write_run(tmp_path, clients, faults=(), counter=None, storage=None, fencing=False):
    """storage: (highest token, accepted writes) for the fake fencing storage file."""
    for cid, lines in clients.items():
        start = "START %d 0 pid=1 ttl=1000 drift_ms=12.000 hold=20 margin=100 wait=0 nodes=3%s\n" % (
            cid, " fencing=1 storage=1 auto_extend=0 pre_write=0" if fencing else "")
        (tmp_path / ("client-%d.log" % cid)).write_text(start + "".join(l + "\n" for l in lines))
    (tmp_path / "faults.log").write_text("".join(l + "\n" for l in faults))
    if counter is not None:
        (tmp_path / "counter").write_text(str(counter).ljust(31) + "\n")
    if storage is not None:
        (tmp_path / "storage").write_text("%-20d %-20d\n" % storage)
    return check.analyze(str(tmp_path))


def cycle(cid, seq, t_call, t_acq, valid_for_ms, rel_at, rc=0, write=True, old=0, token=None,
          fence=None, ext=(), lost=None):
    """One acquisition of client cid, all times in ms. token: logged on ACQ. fence: (t_at, accepted,
    stored before) of a write through the fencing storage (the counter is written only if
    accepted). ext: (t, valid_until) of extensions. lost: (t, code, name) of a lost callback."""
    lines = ["ACQ %d %d %d %d %d%s" % (cid, seq, t_call * MS, t_acq * MS, (t_acq + valid_for_ms) * MS,
                                       "" if token is None else " %d" % token),
             "CS %d %d %d %d" % (cid, seq, (t_acq + 1) * MS, old)]
    lines += ["EXT %d %d %d %d 1" % (cid, seq, t * MS, vu * MS) for t, vu in ext]
    if lost:
        lines.append("LOST %d %d %d %d %s 0 lost" % (cid, seq, lost[0] * MS, lost[1], lost[2]))
    if fence:
        t_at, accepted, before = fence
        lines.append("FENCE %d %d %d %d %d %d %s %d" % (cid, seq, t_at * MS - 1000, t_at * MS, t_at * MS + 1000,
                                                         token, "ACCEPT" if accepted else "REJECT", before))
        if accepted:
            lines.append("WRITE %d %d %d %d %d %d" % (cid, seq, (t_at - 1) * MS, t_at * MS + 1000, old, old + 1))
    elif write:
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


# ---------------------------------------------------------------------------------------------
# Fencing tokens, the fake fencing storage, auto-extension

def test_fencing_clean(tmp_path):
    # 0 (token 1), 1 (token 2), 0 again (token 5: failed attempts may skip numbers), all written.
    r = write_run(tmp_path, {
        0: cycle(0, 1, 0, 1, 900, 50, old=0, token=1, fence=(40, True, 0)) +
           cycle(0, 2, 200, 201, 900, 250, old=2, token=5, fence=(240, True, 2)),
        1: cycle(1, 1, 40, 100, 900, 150, old=1, token=2, fence=(140, True, 1))},
        counter=3, storage=(5, 3), fencing=True)
    assert r.ok, r.violations
    assert [w.token for w in r.windows] == [1, 2, 5]
    assert "fencing: 3 acquisitions with a token (from 1 to 5)" in r.summary()


def test_token_going_backwards(tmp_path):
    # Three holders one after the other; the third one's token is lower than the second's.
    clients = {0: cycle(0, 1, 0, 1, 900, 50, old=0, token=3, fence=(40, True, 0)),
               1: cycle(1, 1, 40, 100, 900, 150, old=1, token=7, fence=(140, True, 3)),
               2: cycle(2, 1, 150, 200, 900, 250, old=2, token=4, fence=(240, False, 7))}
    r = write_run(tmp_path, clients, counter=2, storage=(7, 2), fencing=True)
    assert [(a.client, b.client) for a, b in r.token_order] == [(1, 2)]
    assert not r.overlaps and not r.ok
    # 2's write was refused within its validity: that is flagged too
    assert [s.client for s in r.fresh_refused] == [2]
    # a repeated token is not an increase either
    clients[2] = cycle(2, 1, 150, 200, 900, 250, old=2, token=7, fence=(240, False, 7))
    r = write_run(tmp_path, clients, counter=2, storage=(7, 2), fencing=True)
    assert [(a.client, b.client) for a, b in r.token_order] == [(1, 2)]


def test_token_missing(tmp_path):
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 50, old=0, token=0)}, counter=1, fencing=True)
    assert len(r.token_missing) == 1 and not r.ok
    # without fencing, token 0 is what the client logs
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 900, 50, old=0, token=0)}, counter=1)
    assert r.ok, r.violations


def test_stale_write_accepted(tmp_path):
    # 0 (token 1) stalls past its validity (ends at 101); 1 (token 2) acquires at 200 and its write
    # is stored at 210; the storage then accepts 0's write at 300: a storage that does not check.
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 400, rc=-6, old=0, token=1, fence=(300, True, 2)),
                             1: cycle(1, 1, 150, 200, 900, 250, old=0, token=2, fence=(210, True, 0))},
                  counter=1, storage=(2, 2), fencing=True)
    assert [(s.client, n.client) for s, n in r.stale_accepted] == [(0, 1)]
    assert not r.ok
    assert any(v.startswith("stale write accepted") for v in r.violations)


def test_stale_write_refused(tmp_path):
    # The same history with a storage that does its job: 0's late write is refused. No violation,
    # and the refusal is counted as one from a holder past its valid_until.
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 400, rc=-6, old=0, token=1, fence=(300, False, 2)),
                             1: cycle(1, 1, 150, 200, 900, 250, old=0, token=2, fence=(210, True, 0))},
                  counter=1, storage=(2, 1), fencing=True)
    assert r.ok, r.violations
    assert "1 refused (1 of them from a holder past its valid_until)" in r.summary()


def test_expired_write_accepted_is_reported(tmp_path):
    # 0's write comes after its valid_until, but before any later holder wrote: the storage cannot
    # know it is late. Reported, not a violation.
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 400, rc=-6, old=0, token=1, fence=(205, True, 0)),
                             1: cycle(1, 1, 150, 200, 900, 250, old=1, token=2, fence=(210, True, 1))},
                  counter=2, storage=(2, 2), fencing=True)
    assert r.ok, r.violations
    assert [s.client for s in r.expired_accepted] == [0]


def test_storage_mismatch(tmp_path):
    clients = {0: cycle(0, 1, 0, 1, 900, 50, old=0, token=1, fence=(40, True, 0))}
    assert write_run(tmp_path, clients, counter=1, storage=(1, 1), fencing=True).ok
    r = write_run(tmp_path, clients, counter=1, storage=(1, 2), fencing=True)
    assert len(r.storage_mismatch) == 1 and not r.ok
    r = write_run(tmp_path, clients, counter=1, storage=(3, 1), fencing=True)
    assert len(r.storage_mismatch) == 1 and not r.ok


def test_extension_extends_the_window(tmp_path):
    # 0's acquisition is valid until 101, but an extension at 60 makes it valid until 960; 1
    # acquiring at 200, before 0 released at 500, is then an overlap.
    a = cycle(0, 1, 0, 1, 100, 500, old=0, ext=[(60, 960)])
    b = cycle(1, 1, 150, 200, 900, 250, old=1)
    r = write_run(tmp_path, {0: a, 1: b}, counter=2)
    assert [(x.client, y.client) for x, y in r.overlaps] == [(0, 1)]
    assert r.windows[0].extensions == 1 and not r.validity_excess
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 500, old=0), 1: b}, counter=2)
    assert r.ok, r.violations
    # an extension valid for more than ttl - drift (988 ms)
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 50, old=0, ext=[(20, 1015)])}, counter=1)
    assert len(r.ext_excess) == 1 and not r.ok


def test_lost_callback(tmp_path):
    # The watchdog reports a loss at 150, after the validity ended (101): the window was cut short.
    r = write_run(tmp_path, {0: cycle(0, 1, 0, 1, 100, 400, rc=-6, write=False, lost=(150, -5, "REDLOCK_EEXPIRED"))})
    assert r.ok, r.violations
    assert "losses reported: REDLOCK_EEXPIRED 1" in r.summary()
    # a loss at 50, with validity left and no fault that removes keys: unexplained
    clients = {0: cycle(0, 1, 0, 1, 100, 400, rc=-6, write=False, lost=(50, -6, "REDLOCK_ELOST"))}
    r = write_run(tmp_path, clients)
    assert len(r.unexplained_lost) == 1 and not r.ok
    r = write_run(tmp_path, clients, faults=["FAULT %d del node0 1 DEL_k" % (20 * MS)])
    assert r.ok, r.violations


def rw(lines, side):
    """A cycle as a read-write lock client's: an RW line after its ACQ."""
    return lines[:1] + ["RW %s %s %s" % (lines[0].split()[1], lines[0].split()[2], side)] + lines[1:]


def test_rw_readers_share_writer_excludes(tmp_path):
    # Two readers overlap each other: allowed. A writer after both: clean.
    r = write_run(tmp_path, {0: rw(cycle(0, 1, 0, 1, 900, 50, write=False), "R"),
                             1: rw(cycle(1, 1, 10, 11, 900, 60, write=False), "R") +
                                rw(cycle(1, 2, 70, 71, 900, 100, old=0), "W")}, counter=1)
    assert r.ok, r.violations
    # A writer inside a reader's validity: a violation, whichever came first.
    r = write_run(tmp_path, {0: rw(cycle(0, 1, 0, 1, 900, 50, write=False), "R"),
                             1: rw(cycle(1, 1, 10, 20, 900, 60, old=0), "W")}, counter=1)
    assert [(a.client, b.client) for a, b in r.overlaps] == [(0, 1)]
    assert not r.ok
    # Two writers overlap: a violation, as with the mutex.
    r = write_run(tmp_path, {0: rw(cycle(0, 1, 0, 1, 900, 50, old=0), "W"),
                             1: rw(cycle(1, 1, 10, 20, 900, 60, old=0), "W")}, counter=1)
    assert len(r.overlaps) == 1 and not r.ok


def test_held_lock_taken(tmp_path):
    # Client 0 holds background locks 0 and 10 from 5 ms to its BGEND at 900 ms (lock 10 lost at
    # 600 ms). Client 3 is refused lock 0 twice while held, gets it after BGEND (fine), and gets
    # lock 10 at 700 ms, after its loss (fine) and at 300 ms, while held: the violation.
    holder = ["BGHELD 0 0 %d 20" % (5 * MS), "BGWIN 0 0 %d %d" % (5 * MS, 3005 * MS),
              "BGWIN 0 10 %d %d" % (5 * MS, 3005 * MS),
              "BGLOST 0 1 %d -5 REDLOCK_EEXPIRED safety:bg:0:10 gone" % (600 * MS),
              "BGEND 0 1 %d 20 19 1" % (900 * MS)]
    take = ["TAKE 3 1 %d %d -3 0 0 0" % (100 * MS, 101 * MS),
            "TAKE 3 2 %d %d -3 0 0 0" % (200 * MS, 201 * MS),
            "TAKE 3 3 %d %d 0 0 10 %d" % (300 * MS, 301 * MS, 1300 * MS),
            "TAKE 3 4 %d %d 0 0 10 %d" % (700 * MS, 701 * MS, 1700 * MS),
            "TAKE 3 5 %d %d 0 0 0 %d" % (950 * MS, 951 * MS, 1950 * MS)]
    r = write_run(tmp_path, {0: holder, 3: take})
    assert [(t[1], t[6]) for t in r.taken] == [(3, 10)]
    assert r.takes_while_held == 3
    assert not r.ok and len(r.violations) == 1 and "held lock taken" in r.violations[0]
    # The same without the take inside the window: clean.
    r = write_run(tmp_path, {0: holder, 3: take[:2] + take[3:]})
    assert r.ok, r.violations
    assert r.takes_while_held == 2 and "taken while held: 0" in r.summary()
