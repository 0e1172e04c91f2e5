# SPDX-License-Identifier: BSD-3-Clause
"""The random-fault soak (soak.py) as a test, with fencing tokens, the fake fencing storage and one
auto-extended client: 20 s in the short suite; set SAFETY_SOAK_SECONDS for a long run, e.g.
SAFETY_SOAK_SECONDS=1800 python3 -m pytest -s tests/safety -k soak"""
import os

import soak


def test_soak(tmp_path, client_bin):
    seconds = int(os.environ.get("SAFETY_SOAK_SECONDS", "20"))
    r = soak.soak(seconds, clients=4, run_dir=str(tmp_path / "soak"))
    assert r.ok, "violations:\n" + "\n".join(r.violations)
    assert len(r.injected()) >= seconds // 4, "too few faults injected"
    assert len(r.windows) > seconds, "too few acquisitions"
    # fencing is on by default: every acquisition has a token, every write went through the storage
    assert all(w.token for w in r.windows) and not r.token_order
    assert sum(1 for st in r.stores if st.accepted) == r.writes
