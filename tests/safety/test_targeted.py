# SPDX-License-Identifier: BSD-3-Clause
"""The targeted rows of docs/safety.md ("Nodes that forget: the targeted rows"): 5 nodes, 4
contending clients, an injector that strikes at the nodes holding the current holder's key
(targeted.py). 20 s per row here; REDLOCK_SAFETY_TARGETED_SECONDS=60 (make
test-safety-targeted) for the long form.

With the quarantine (the library's default, c/src/epoch.c) every row must be clean. Without it
(the clients' --no-quarantine: plain Redlock), the wipe and clock-step rows are by design: a
holder's keys vanish from 2 of its nodes, and the checker must see the second holder it lets
in; they assert that it does, in the same run of the suite."""
import os

import pytest

import targeted as T

SECONDS = float(os.environ.get("REDLOCK_SAFETY_TARGETED_SECONDS", "20"))


def _run(tmp_path, row, protection=None, fencing=True):
    r, st = T.run_row(row, SECONDS, str(tmp_path / row), protection=protection, fencing=fencing)
    print(r.summary())
    print(" ".join("%s=%s" % kv for kv in st.items()))
    return r, st


def _only_key_loss(r, st):
    # What a lost key explains: overlaps, lost updates, tokens out of order (a wiped node forgets
    # its fencing counter too). Nothing else may show up, and every overlap must start after a
    # key-losing fault that came after the first holder's acquire call.
    assert not st["other"], "validity or missing-token violations:\n" + "\n".join(r.violations)
    assert not st["unexplained"], "a loss no fault explains:\n" + "\n".join(r.violations)
    assert st["explained"], "an overlap without a key-losing fault inside it:\n" + "\n".join(r.violations)


@pytest.mark.parametrize("protection,fencing", [(True, True), (True, False), (False, True)],
                         ids=["quarantine-fencing", "quarantine-no-fencing", "no-quarantine-fencing"])
@pytest.mark.parametrize("row", ["wipe", "clock-step"])
def test_targeted_key_loss(tmp_path, client_bin, row, protection, fencing):
    """(a) wipe: 2 of the holder's nodes killed and restarted at once, without persistence.
    (b) clock-step: the wall clocks of 2 of the holder's nodes stepped 2 s forward (TTL 1.5 s).
    Protection off: violations demonstrated, by design. On: none. With fencing tokens and
    without (the checker then judges by validity and lost updates)."""
    r, st = _run(tmp_path, row, protection, fencing)
    if not st["strikes"]:
        # The construction needs a holder on 3 or 4 nodes (split votes at a release); on a
        # loaded machine a run can see every holder on all 5 (CI once did, 103 of 103): then
        # there was nothing to strike and nothing to check, and the test says so.
        pytest.skip("no holder was seen on 3 or 4 nodes in %d acquisitions: the row struck nothing "
                    "(holders by nodes: %s)" % (st["acquisitions"], st["holders_by_nodes"]))
    assert st["acquisitions"] > 10
    _only_key_loss(r, st)
    if st["protection"]:
        assert r.ok, "violations with the protection on:\n" + "\n".join(r.violations)
    else:
        assert r.overlaps, "by design: a second holder should get in; the checker saw none"
        assert not r.ok


@pytest.mark.parametrize("fencing", [True, False], ids=["fencing", "no-fencing"])
@pytest.mark.parametrize("row", ["random-steps", "random-wipes"])
def test_targeted_random(tmp_path, client_bin, row, fencing):
    """(c) random forward clock steps of 0.1 to 2 s, (d) random wipes, at most 2 distinct nodes
    within a TTL, blind to who holds what. Protection on: no violation. Off: none was seen in the runs of
    docs/safety.md, yet one step that lands on a node of a holder with a bare majority (3 of 5)
    is enough for one, so without the protection only the kind of violation is asserted (what a
    lost key explains), not their absence: a rare one must not turn CI red."""
    r, st = _run(tmp_path, row, fencing=fencing)
    assert st["steps"] >= SECONDS / 2 - 2
    assert st["acquisitions"] > 10
    _only_key_loss(r, st)
    if st["protection"]:
        assert r.ok, "violations with the protection on:\n" + "\n".join(r.violations)
