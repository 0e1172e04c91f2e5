#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reproduction: a failed acquire attempt leaves its key on nodes that timed out (slow, not dead),
for the whole TTL, although docs/algorithm.md ("Acquire: one attempt", step 7) says those nodes get
the clean-up release. Exit 1 if the key is left behind, 0 if it was cleaned up.

3 nodes; nodes 0 and 1 sit behind proxy.py with 500 ms of reply latency (the SET runs at once, its
reply arrives late). One client makes one attempt (wait 0, node timeout 200 ms): node 2 grants,
0 and 1 time out -> REDLOCK_ENOQUORUM. Then GET the key on every node, directly.
  REDLOCK_SAFETY_CLIENT=<build>/tests/safety/safety_client python3 tests/safety/repro_timeout_cleanup.py
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetylib as S  # noqa: E402
from proxy import Proxy  # noqa: E402


def main():
    with S.nodes.Cluster(3) as c, tempfile.TemporaryDirectory() as d:
        ps = [Proxy(c.port(i)).start() for i in range(3)]
        try:
            run = S.Run(d, [p.url for p in ps], "k")
            for p in ps[:2]:
                p.set_mode("latency", ms=500)
            run.spawn(1, ttl=5000, wait=0, iterations=1, duration=0.3, node_timeout=200)
            run.wait()
            fail = run.events(1, "FAIL")
            print("attempt:", " ".join(fail[0][5:]) if fail else "(no failure logged)")
            time.sleep(0.1)
            left = []
            for i in range(3):
                v, ttl = c.cmd(i, "GET", "k"), c.cmd(i, "PTTL", "k")
                print("node %d: value %s, PTTL %s" % (i, v, ttl))
                if v is not None:
                    left.append(i)
            run.close()
        finally:
            for p in ps:
                p.close()
    if left:
        print("BUG: the failed attempt's key stays on node(s) %s until its TTL runs out" % left)
        return 1
    print("ok: the failed attempt cleaned up on every node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
