"""The random-fault soak (soak.py) as a test: 20 s in the short suite; set SAFETY_SOAK_SECONDS for
a long run, e.g. SAFETY_SOAK_SECONDS=1800 python3 -m pytest -s tests/safety -k soak"""
import os

import soak


def test_soak(tmp_path, client_bin):
    seconds = int(os.environ.get("SAFETY_SOAK_SECONDS", "20"))
    r = soak.soak(seconds, clients=4, run_dir=str(tmp_path / "soak"))
    assert r.ok, "violations:\n" + "\n".join(r.violations)
    assert len(r.injected()) >= seconds // 4, "too few faults injected"
    assert len(r.windows) > seconds, "too few acquisitions"
