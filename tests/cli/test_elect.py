# SPDX-License-Identifier: BSD-3-Clause
# 'redlock elect': COMMAND runs while leader with REDLOCK_TERM, terms grow, a second campaigner
# waits or fails with 75, 'elect -l --json' prints every change in order, usage errors, and the
# systemd recipe of docs/cli.md as it stands.
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "cli.md")
RECIPE = os.path.join(HERE, "recipes", "scheduler-leader.service")


def env_for(cluster):
    e = dict(os.environ)
    e["REDLOCK_NODES"] = ",".join(cluster.urls)
    return e


def test_elect_runs_command_with_term(cli, cluster5, resource):
    env = env_for(cluster5)
    terms = []
    for _ in range(2):
        r = subprocess.run([cli, "elect", resource, "me", "--", "sh", "-c", 'echo "$REDLOCK_TERM $REDLOCK_FENCING_TOKEN"'],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        term, token = r.stdout.split()
        assert term == token
        terms.append(int(term))
    assert terms[0] >= 1 and terms[1] > terms[0]


def test_second_campaigner_waits_or_fails(cli, cluster5, resource):
    env = env_for(cluster5)
    leader = subprocess.Popen([cli, "elect", resource, "first", "--", "sleep", "2"], env=env)
    try:
        time.sleep(0.5)
        r = subprocess.run([cli, "elect", "-n", resource, "second", "--", "true"], capture_output=True, text=True,
                           env=env, timeout=60)
        assert r.returncode == 75, r.stderr
        assert r.stderr.startswith(f"redlock elect: '{resource}' has a leader already: "), r.stderr
        start = time.monotonic()
        r = subprocess.run([cli, "elect", "-w", "20s", resource, "second", "--", "sh", "-c", "echo $REDLOCK_TERM"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        assert leader.wait(10) == 0
        assert time.monotonic() - start < 20   # handed over when the first one resigned
    finally:
        leader.kill()
        leader.wait()


def test_listen_json_prints_every_change(cli, cluster5, resource):
    env = env_for(cluster5)
    listener = subprocess.Popen([cli, "elect", "-l", "--json", resource], stdout=subprocess.PIPE, text=True, env=env)
    # Lines through a thread, so that a change never printed fails the test instead of hanging it.
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in listener.stdout], daemon=True).start()

    def next_change():
        try:
            return json.loads(lines.get(timeout=30))
        except queue.Empty:
            pytest.fail("elect -l printed no further change within 30 s")

    try:
        first = next_change()
        assert first == {"leader": False, "term": 0, "revision": 0, "value": None}
        for value in ("a", "b"):
            r = subprocess.run([cli, "elect", resource, value, "--", "sleep", "0.2"], env=env, timeout=60)
            assert r.returncode == 0
        seen = [next_change() for _ in range(4)]
    finally:
        listener.send_signal(signal.SIGINT)
        listener.wait(10)
    assert [s["value"] for s in seen] == ["a", None, "b", None]
    assert seen[0]["term"] < seen[2]["term"] and seen[1]["term"] == seen[0]["term"]
    assert all(s["leader"] == (s["value"] is not None) for s in seen)


def test_usage_errors(cli, cluster5, resource):
    env = env_for(cluster5)
    for args in (["elect", resource], ["elect", resource, "v"], ["elect", "-l"],
                 ["elect", resource, "x" * 1025, "--", "true"], ["elect", "-c", "true", resource, "v"],
                 ["elect", "--limit", "3", resource, "v", "--", "true"], ["elect", "-n3", resource, "v", "true"],
                 ["elect", "-s", resource, "v", "true"], ["elect", "--shared", resource, "v", "true"]):
        r = subprocess.run([cli, *args], capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 2, (args, r.stderr)
    r = subprocess.run([cli, "elect", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "REDLOCK_TERM" in r.stdout


def test_recipe_is_in_the_doc_and_runs(cli, cluster5, tmp_path):
    text = open(RECIPE).read()
    assert text.strip() in open(DOC).read(), "docs/cli.md does not show the recipe as it is"
    exec_start = next(l for l in text.splitlines() if l.startswith("ExecStart="))[len("ExecStart="):]
    prog = tmp_path / "scheduler"
    out = tmp_path / "terms"
    prog.write_text('#!/bin/sh\necho "$REDLOCK_TERM" >> %s\nsleep 0.3\n' % out)
    prog.chmod(0o755)
    argv = exec_start.replace("/usr/local/bin/redlock", cli).replace("/usr/local/bin/scheduler", str(prog))
    argv = argv.replace("%H", "host").split()
    procs = [subprocess.Popen(argv, env=env_for(cluster5)) for _ in range(3)]
    assert [p.wait(60) for p in procs] == [0, 0, 0]   # each led in turn, one after the other
    terms = [int(t) for t in out.read_text().split()]
    assert len(terms) == 3 and terms == sorted(set(terms))
    analyze = __import__("shutil").which("systemd-analyze")
    if not analyze:
        print("SKIPPED: systemd-analyze is not installed: the unit file is not verified")
        return
    unit = tmp_path / "scheduler.service"
    unit.write_text(text.replace("/usr/local/bin/redlock", cli).replace("/usr/local/bin/scheduler", str(prog))
                    .replace("/etc/redlock/nodes.env", str(tmp_path / "nodes.env")))
    (tmp_path / "nodes.env").write_text("REDLOCK_NODES=%s\n" % ",".join(cluster5.urls))
    r = subprocess.run([analyze, "verify", "--man=no", str(unit)], capture_output=True, text=True, timeout=60)
    assert not [l for l in (r.stdout + r.stderr).splitlines() if "scheduler.service" in l], r.stdout + r.stderr
