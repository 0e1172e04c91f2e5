# SPDX-License-Identifier: BSD-3-Clause
# Tests of the redlock command-line tool (run, status, doctor) against real local nodes from the
# shared harness. Exit codes and behaviour are those documented in docs/cli.md.
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness"))
import nodes  # noqa: E402
from clitest import key_count, nodes_arg, wait_for  # noqa: E402

EXIT_USAGE = 2
EXIT_CONFLICT = 75
EXIT_LOST = 76


# ---------------------------------------------------------------------------------------------
# conventions: help, version, usage errors

def test_version_and_help(runner):
    r = runner.run("--version")
    assert r.returncode == 0
    assert r.stdout.startswith("redlock ") and r.stdout.strip().split()[1].count(".") == 2
    # the tool's version, then the library's, as --help says
    words = r.stdout.split()
    assert len(words) == 4 and words[2] == "(libredlock" and words[3].endswith(")"), r.stdout
    assert runner.run("-V").stdout == r.stdout
    for sub in ("run", "status", "doctor"):
        r = runner.run(sub, "--help")
        assert r.returncode == 0, sub
        assert r.stdout.startswith("usage: redlock " + sub)
        assert "exit codes" in r.stdout
    assert runner.run("--help").returncode == 0


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["--bogus"],
    ["run"],
    ["run", "res"],
    ["run", "--nodes", "redis://127.0.0.1:1", "res"],
    ["run", "--bogus", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1", "--ttl", "5parsecs", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1", "--ttl", "10ms", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1", "--wait", "soon", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1", "-E", "300", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1", "--lost-signal", "SIGNOPE", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1", "--kill-after", "-1", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:abc", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1,,redis://127.0.0.1:2", "res", "true"],
    ["run", "--nodes", "http://127.0.0.1:1", "res", "true"],
    ["run", "--nodes", "redis://127.0.0.1:1", "--ttl"],
    ["run", "--nodes", "redis://127.0.0.1:1", "--node-timeout", "20m", "res", "true"],   # refused by the library
    ["run", "--nodes", "redis://127.0.0.1:1", "", "true"],                               # so is the resource
    ["run", "res", "true"],                               # no nodes anywhere
    ["status"],
    ["status", "--nodes", "redis://127.0.0.1:1"],
    ["status", "--nodes", "redis://127.0.0.1:1", "a", "b"],
    ["status", "--nodes", "redis://x:99999", "res"],
    ["status", "--nodes", "redis://127.0.0.1:1", "--timeout", "0", "res"],
    ["doctor"],
    ["doctor", "--nodes", "redis://127.0.0.1:1", "extra"],
    ["doctor", "--nodes", "redis://127.0.0.1:1", "--clock-probe", "2h"],
    ["doctor", "--nodes", "redis://127.0.0.1:1", "--config", "/nonexistent/redlock.conf"],
])
def test_usage_errors_exit_2_with_one_line(runner, args):
    r = runner.run(*args)
    assert r.returncode == EXIT_USAGE, (args, r.stderr)
    assert r.stdout == ""
    if args:  # a bare 'redlock' prints the usage text
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith("redlock")
        # docs/cli.md: usage errors add where to look
        sub = args[0] if args[0] in ("run", "status", "doctor") else None
        assert lines[0].endswith("(see 'redlock %s--help')" % (sub + " " if sub else "")), lines[0]


@pytest.mark.parametrize("sub", ["run", "status", "doctor"])
def test_a_url_error_names_the_node_from_0_and_shows_an_address_without_userinfo(runner, sub):
    args = {"run": ["run", "res", "true"], "status": ["status", "res"], "doctor": ["doctor"]}[sub]
    r = runner.run(sub, "--nodes", "127.0.0.1:7501", *args[1:])
    assert r.returncode == EXIT_USAGE, r.stderr
    assert r.stderr.startswith("redlock %s: node 0 '127.0.0.1:7501': unknown scheme" % sub), r.stderr
    assert r.stderr.rstrip().endswith("(see 'redlock %s --help')" % sub), r.stderr
    r = runner.run(sub, "--nodes", "app:pw@127.0.0.1:7501", *args[1:])
    assert "node 0 '***@127.0.0.1:7501'" in r.stderr and "pw" not in r.stderr, r.stderr


def test_run_refuses_one_server_twice_numbering_nodes_from_0(runner):
    r = runner.run("run", "--nodes", "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://localhost:1", "res", "true")
    assert r.returncode == EXIT_USAGE, r.stderr
    assert "node 0 (redis://127.0.0.1:1) and node 2 (redis://localhost:1) are the same server" in r.stderr


def test_nodes_are_numbered_from_0_as_in_the_library(runner, cluster5, resource):
    # Issue 36: the CLI numbers nodes as the library, Python and Go do: the first is node 0.
    good, bad = cluster5.url(0), "foo://127.0.0.1:7502"
    for sub, args in (("run", [resource, "true"]), ("status", [resource]), ("doctor", [])):
        r = runner.run(sub, "--nodes", f"{good},{bad}", *args)
        assert r.returncode == EXIT_USAGE, r.stderr
        assert r.stderr.startswith(f"redlock {sub}: node 1 '{bad}': unknown scheme"), r.stderr
    st = json.loads(runner.run("status", "--json", "--nodes", nodes_arg(cluster5), resource).stdout)
    assert [n["index"] for n in st["nodes"]] == list(range(5)), st["nodes"]
    r = runner.run("status", "--nodes", nodes_arg(cluster5), resource)
    rows = [line.split()[:2] for line in r.stdout.splitlines()[2:7]]
    assert rows == [[str(i), cluster5.url(i)] for i in range(5)], r.stdout
    r = runner.run("doctor", "--json", "--clock-probe", "0", "--nodes", nodes_arg(cluster5))
    doc = json.loads(r.stdout)
    assert [n["index"] for n in doc["nodes"]] == list(range(5)), doc["nodes"]
    assert {f["node"] for f in doc["findings"] if f["check"] == "no-persistence"} == set(range(5)), doc


@pytest.mark.parametrize("first", ["redis://127.0.0.1:1", "redis://no-such-host.invalid:6379"])
def test_unreachable_nodes_end_the_wait_with_69(runner, first):
    # A typo in an address must not hang: the default wait is forever, yet no quorum of nodes can
    # be reached (refused, a name that does not resolve), so the library ends it
    # (REDLOCK_EUNREACHABLE) and redlock exits 69 naming the nodes. -v shows the failed attempts.
    urls = ",".join([first, "redis://127.0.0.1:2", "redis://127.0.0.1:3"])
    t0 = time.monotonic()
    r = runner.run("run", "-v", "--nodes", urls, "res", "true", timeout=30)
    took = time.monotonic() - t0
    assert r.returncode == 69, r.stderr
    assert took < 15, took
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("redlock run: cannot acquire 'res': no quorum of nodes can be reached"), last
    assert first.split("//")[1] in last and "127.0.0.1:3" in last, last
    assert "attempt 1 to acquire 'res' failed with nodes down or failing" in r.stderr, r.stderr


@pytest.mark.parametrize("cmd", ["run", "elect"])
def test_wait_beyond_seven_days_is_refused(runner, cluster5, resource, cmd):
    # The library's longest finite wait is 7 days; the CLI says so rather than waiting in pieces.
    args = [resource, "true"] if cmd == "run" else [resource, "me", "--", "true"]
    r = runner.run(cmd, "--nodes", nodes_arg(cluster5), "--wait", "8d", *args)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert "--wait must be at most 7d, or forever" in r.stderr, r.stderr
    r = runner.run(cmd, "--nodes", nodes_arg(cluster5), "--wait", "7d", *args)
    assert r.returncode == 0, r.stderr


def test_duration_forms_are_accepted(runner, cluster5, resource):
    for ttl in ("2", "1.5s", "1500ms", "0.05m"):
        r = runner.run("run", "--nodes", nodes_arg(cluster5), "--ttl", ttl, resource, "true")
        assert r.returncode == 0, (ttl, r.stderr)


# ---------------------------------------------------------------------------------------------
# run: exit status, environment, serialisation, conflicts

@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_exit_status_passes_through(runner, cluster5, resource, code):
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "--", "sh", "-c", f"exit {code}")
    assert r.returncode == code, r.stderr
    assert key_count(cluster5, resource) == 0


def test_command_killed_by_signal_gives_128_plus_n(runner, cluster5, resource):
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "--", "sh", "-c", "kill -USR1 $$")
    assert r.returncode == 128 + signal.SIGUSR1, r.stderr
    assert key_count(cluster5, resource) == 0


def test_command_not_found_and_not_executable(runner, cluster5, resource, tmp_path):
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "no-such-command-xyz")
    assert r.returncode == 127
    assert "no-such-command-xyz" in r.stderr
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program\n")
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, str(plain))
    assert r.returncode == 126
    assert key_count(cluster5, resource) == 0


def test_environment_and_options_after_resource(runner, cluster5, resource):
    # Options may follow RESOURCE; the command's own options are never ours.
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "--ttl", "20s", "sh", "-c",
                   'echo "$REDLOCK_RESOURCE $REDLOCK_VALIDITY_MS"; echo "$@"', "sh", "--ttl", "-n")
    assert r.returncode == 0, r.stderr
    res, validity = r.stdout.splitlines()[0].split()
    assert res == resource
    assert 15000 < int(validity) <= 20000
    assert r.stdout.splitlines()[1] == "--ttl -n"


def test_fencing_token_in_the_environment(runner, cluster5, resource):
    # --fencing: each run gets a token, strictly greater than the last run's.
    tokens = []
    for _ in range(3):
        r = runner.run("run", "--nodes", nodes_arg(cluster5), "--fencing", resource, "sh", "-c",
                       'echo "token=$REDLOCK_FENCING_TOKEN"')
        assert r.returncode == 0, r.stderr
        tokens.append(int(r.stdout.strip().split("=", 1)[1]))
    assert tokens[0] >= 1 and tokens[0] < tokens[1] < tokens[2]
    assert cluster5.cmd(0, "GET", resource + ":fencing") == str(tokens[2])
    # Without --fencing an inherited variable is not passed on as if it were a token.
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "sh", "-c",
                   'echo "token=${REDLOCK_FENCING_TOKEN-unset}"', env=runner.env(REDLOCK_FENCING_TOKEN=999))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "token=unset"


def test_key_is_held_while_the_command_runs(runner, cluster5, resource):
    r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "--", "sh", "-c", "sleep 0.3")
    assert r.returncode == 0
    p = runner.popen("run", "--nodes", nodes_arg(cluster5), "--ttl", "10s", resource, "sleep", "30")
    try:
        wait_for(lambda: key_count(cluster5, resource) == 5, what="lock keys")
        values = {cluster5.cmd(i, "GET", resource) for i in range(5)}
        assert len(values) == 1
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert key_count(cluster5, resource) == 0


def test_concurrent_runs_are_serialised(runner, cluster5, resource, tmp_path):
    log = tmp_path / "markers.log"
    script = ('echo "start $ID" >> "$LOG"; sleep 0.2; echo "end $ID" >> "$LOG"')
    procs = []
    for i in range(4):
        env = runner.env(REDLOCK_NODES=nodes_arg(cluster5), ID=i, LOG=log)
        procs.append(runner.popen("run", "--ttl", "5s", "--wait", "60s", resource, "sh", "-c", script, env=env))
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    lines = log.read_text().split("\n")[:-1]
    assert len(lines) == 8
    seen = set()
    for start, end in zip(lines[0::2], lines[1::2]):
        kind_s, id_s = start.split()
        kind_e, id_e = end.split()
        assert (kind_s, kind_e) == ("start", "end"), lines
        assert id_s == id_e, lines
        seen.add(id_s)
    assert seen == {"0", "1", "2", "3"}


def test_nonblock_while_held_gives_conflict_code(runner, cluster5, resource):
    holder = runner.popen("run", "--nodes", nodes_arg(cluster5), resource, "sleep", "30")
    try:
        wait_for(lambda: key_count(cluster5, resource) >= 3, what="holder")
        t0 = time.monotonic()
        r = runner.run("run", "--nodes", nodes_arg(cluster5), "-n", resource, "touch", "/nonexistent/never-run")
        assert r.returncode == EXIT_CONFLICT, r.stderr
        assert "locked by another owner" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        r = runner.run("run", "--nodes", nodes_arg(cluster5), "--nonblock", "-E", "9", resource, "true")
        assert r.returncode == 9
        r = runner.run("run", "--nodes", nodes_arg(cluster5), "--wait", "300ms", resource, "true")
        assert r.returncode == EXIT_CONFLICT
        assert "gave up waiting" in r.stderr
        assert time.monotonic() - t0 < 30
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.communicate(timeout=30)


def _hold_until(runner, cluster5, resource, go, *flags):
    """A holder of resource that releases once the file go exists."""
    holder = runner.popen("run", "--nodes", nodes_arg(cluster5), *flags, resource, "sh", "-c",
                          f'while [ ! -e "{go}" ]; do sleep 0.05; done')
    wait_for(lambda: key_count(cluster5, resource) == 5, what="holder")
    return holder


def _wake_channels(cluster5) -> list:
    """The wake-up channels someone listens on, per node."""
    return [cluster5.cmd(i, "PUBSUB", "CHANNELS", "redlock:wake:*") for i in range(cluster5.count)]


@pytest.mark.parametrize("mode", ["--fair", "--wake"])
def test_woken_wait_is_woken_by_the_release(runner, cluster5, resource, tmp_path, mode):
    # --wake or --fair -w: the waiter listens for releases on every node and is woken by the
    # holder's release; it would otherwise sleep until the holder's key would expire (30 s, extended).
    go, log = tmp_path / "go", tmp_path / "waiter.log"
    holder = _hold_until(runner, cluster5, resource, go, mode, "-v")
    try:
        assert _wake_channels(cluster5) == [[]] * 5  # nobody waits yet
        with open(log, "w") as err:
            waiter = runner.popen("run", "--nodes", nodes_arg(cluster5), mode, "-w", "60", "-v", resource,
                                  "echo", "ran", stderr=err)
        wait_for(lambda: all(len(c) == 1 for c in _wake_channels(cluster5)), what="the waiter's listeners")
        # and registered in the queue on a majority (with --wake only its second attempt
        # registers: a release before that would find nobody to wake)
        wait_for(lambda: sum(1 for i in range(5) if cluster5.cmd(i, "KEYS", "*%s:wq" % resource)) >= 3,
                 what="the waiter's registration")
        assert waiter.poll() is None, log.read_text()
        go.touch()
        assert holder.wait(timeout=30) == 0
        out, _ = waiter.communicate(timeout=60)
    finally:
        go.touch()
        _, herr = holder.communicate(timeout=30)
    text = log.read_text()
    assert waiter.returncode == 0, text
    assert out == "ran\n"
    print("HOLDER", herr)
    print("WAITER", text)
    assert ("fair mode" in text) == (mode == "--fair"), text
    assert "cut short by a release" in text and "woken by a release of '%s'" % resource in text, text
    assert text.count(": ready") == 5, text  # -v: each node's listener, told after the wait
    assert key_count(cluster5, resource) == 0


@pytest.mark.parametrize("flags", [[], ["--no-wake"], ["--wake", "--no-wake"]])
def test_wait_polls_by_default_and_with_no_wake(runner, cluster5, resource, tmp_path, flags):
    # By default, and with --no-wake (which wins over --wake): the waiter opens no listener and
    # gets the lock by polling once it is free.
    go = tmp_path / "go"
    holder = _hold_until(runner, cluster5, resource, go)
    try:
        waiter = runner.popen("run", "--nodes", nodes_arg(cluster5), *flags, "-w", "30", "-v", resource,
                              "echo", "ran")
        time.sleep(0.3)
        assert waiter.poll() is None
        go.touch()
        out, err = waiter.communicate(timeout=60)
    finally:
        go.touch()
        holder.communicate(timeout=30)
    assert waiter.returncode == 0, err
    assert out == "ran\n"
    assert ", polling" in err and "woken" not in err and "listener" not in err, err
    assert _wake_channels(cluster5) == [[]] * 5


def test_descriptors_reach_the_command_but_node_sockets_do_not(runner, cluster5, resource, tmp_path):
    extra = tmp_path / "fd3.txt"
    with open(extra, "w") as f3:
        fd = f3.fileno()
        r = runner.run("run", "--nodes", nodes_arg(cluster5), resource, "sh", "-c",
                       f'ls -l /proc/$$/fd; test -e /proc/$$/fd/{fd} && echo via-fd3 >> /proc/$$/fd/{fd}',
                       pass_fds=(fd,))
    assert r.returncode == 0, r.stderr
    assert "socket:" not in r.stdout, r.stdout
    assert extra.read_text() == "via-fd3\n"


# ---------------------------------------------------------------------------------------------
# run: losing the lock

LOST_CHILD = ('trap \'echo got-TERM > "$OUT"; exit 0\' TERM; echo started > "$STARTED"; '
              'while :; do sleep 0.05; done')


def _start_lost_child(runner, cluster, resource, tmp_path, *extra):
    out, started = tmp_path / "out", tmp_path / "started"
    env = runner.env(REDLOCK_NODES=nodes_arg(cluster), OUT=out, STARTED=started)
    p = runner.popen("run", "--ttl", "1s", *extra, resource, "sh", "-c", LOST_CHILD, env=env)
    wait_for(started.exists, what="command start")
    return p, out


def test_lost_lock_signals_the_command(runner, cluster5, resource, tmp_path):
    p, out = _start_lost_child(runner, cluster5, resource, tmp_path)
    t0 = time.monotonic()
    for i in range(5):
        cluster5.cmd(i, "DEL", resource)
    _, err = p.communicate(timeout=30)
    assert p.returncode == EXIT_LOST, err
    assert out.read_text() == "got-TERM\n"
    assert "lost" in err and "SIGTERM" in err
    assert time.monotonic() - t0 < 30


def test_lost_lock_escalates_to_sigkill(runner, cluster5, resource, tmp_path):
    stubborn = tmp_path / "stubborn"
    env = runner.env(REDLOCK_NODES=nodes_arg(cluster5))
    p = runner.popen("run", "--ttl", "1s", "--kill-after", "500ms", "--lost-signal", "USR1", resource, "sh", "-c",
                     f'trap "" USR1; touch {stubborn}; while :; do sleep 0.05; done', env=env)
    wait_for(stubborn.exists, what="command start")
    for i in range(5):
        cluster5.cmd(i, "DEL", resource)
    _, err = p.communicate(timeout=30)
    assert p.returncode == EXIT_LOST, err
    assert "SIGUSR1" in err and "SIGKILL" in err
    assert "killed by SIGKILL" in err


def test_lock_found_lost_at_release_gives_lost_code(runner, cluster5, resource, tmp_path):
    # No extension is due within the run (TTL 30 s), so only the release can notice.
    started = tmp_path / "started"
    p = runner.popen("run", "--nodes", nodes_arg(cluster5), resource, "sh", "-c",
                     f'touch {started}; sleep 1; exit 0')
    wait_for(started.exists, what="command start")
    for i in range(5):
        cluster5.cmd(i, "DEL", resource)
    _, err = p.communicate(timeout=30)
    assert p.returncode == EXIT_LOST, err
    assert "not held for the whole run" in err


def test_lost_lock_when_a_majority_stops_answering(runner, resource, tmp_path):
    with nodes.Cluster(count=3, kind="mixed") as c:
        p, out = _start_lost_child(runner, c, resource, tmp_path, "--lost-exit-code", "99")
        try:
            c.pause(0)
            c.pause(1)
            _, err = p.communicate(timeout=30)
        finally:
            c.resume(0)
            c.resume(1)
        assert p.returncode == 99, err
        assert out.read_text() == "got-TERM\n"
        assert "could not extend" in err


# ---------------------------------------------------------------------------------------------
# run: signals

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_are_forwarded_and_the_lock_released(runner, cluster5, resource, tmp_path, sig):
    out, started = tmp_path / "out", tmp_path / "started"
    name = signal.Signals(sig).name[3:]
    env = runner.env(REDLOCK_NODES=nodes_arg(cluster5), OUT=out, STARTED=started)
    p = runner.popen("run", "--ttl", "10s", resource, "sh", "-c",
                     f'trap \'echo got-{name} > "$OUT"; exit 7\' {name}; touch "$STARTED"; '
                     'while :; do sleep 0.05; done', env=env)
    wait_for(started.exists, what="command start")
    # The acquire returned at quorum: the SETs to nodes it did not wait for land a moment later.
    wait_for(lambda: key_count(cluster5, resource) == 5, what="the key on every node")
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 7, err
    assert out.read_text() == f"got-{name}\n"
    assert key_count(cluster5, resource) == 0


def test_command_killed_by_a_forwarded_signal_kills_redlock_the_same_way(runner, cluster5, resource, tmp_path):
    started = tmp_path / "started"
    p = runner.popen("run", "--nodes", nodes_arg(cluster5), resource, "sh", "-c",
                     f'touch {started}; sleep 30')
    wait_for(started.exists, what="command start")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM, err   # the shell's $? is 143
    assert key_count(cluster5, resource) == 0


def test_signal_while_waiting_ends_the_wait(runner, cluster5, resource, tmp_path):
    holder = runner.popen("run", "--nodes", nodes_arg(cluster5), resource, "sleep", "30")
    try:
        wait_for(lambda: key_count(cluster5, resource) >= 3, what="holder")
        marker = tmp_path / "ran"
        waiter = runner.popen("run", "--nodes", nodes_arg(cluster5), "--wake", resource, "touch", str(marker))
        # The signal must come once the waiter waits (its handlers are set before its acquire
        # starts), not while it is still starting up: its wake-up listeners (--wake) show that it waits.
        wait_for(lambda: sum(1 for c in _wake_channels(cluster5) if c) >= 3, what="the waiter's listeners")
        assert waiter.poll() is None
        waiter.send_signal(signal.SIGINT)
        _, err = waiter.communicate(timeout=30)
        # redlock dies of the signal itself (after cleaning up), so that a calling script stops too
        assert waiter.returncode == -signal.SIGINT, err
        assert "interrupted" in err
        assert not marker.exists()
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.communicate(timeout=30)


def test_command_is_stopped_when_redlock_dies(runner, cluster5, resource, tmp_path):
    out, started = tmp_path / "out", tmp_path / "started"
    env = runner.env(REDLOCK_NODES=nodes_arg(cluster5), OUT=out, STARTED=started)
    p = runner.popen("run", "--ttl", "2s", resource, "sh", "-c", LOST_CHILD, env=env)
    wait_for(started.exists, what="command start")
    p.kill()
    p.communicate(timeout=30)
    wait_for(out.exists, what="the orphaned command to get SIGTERM")
    assert out.read_text() == "got-TERM\n"


# ---------------------------------------------------------------------------------------------
# settings: environment and config file

def test_config_file_and_environment(runner, cluster5, resource, tmp_path):
    conf = tmp_path / "redlock.conf"
    conf.write_text("# test config\n"
                    f"nodes = {','.join(cluster5.urls[:3])}\n"
                    f"nodes = {','.join(cluster5.urls[3:])}\n"
                    "ttl = 7s\n"
                    'key_prefix = "cfg:"\n'
                    "node_timeout = 100ms\n")
    script = 'echo "$REDLOCK_VALIDITY_MS"; sleep 0.5'
    p = runner.popen("run", "--config", str(conf), resource, "sh", "-c", script)
    wait_for(lambda: key_count(cluster5, "cfg:" + resource) == 5, what="prefixed keys")
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert 5000 < int(out) <= 7000
    assert key_count(cluster5, "cfg:" + resource) == 0

    # $REDLOCK_CONFIG works too, and the command line wins over the file.
    r = runner.run("run", "--ttl", "3s", resource, "sh", "-c", 'echo "$REDLOCK_VALIDITY_MS"',
                   env=runner.env(REDLOCK_CONFIG=conf))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) <= 3000

    # $REDLOCK_NODES wins over the file's nodes: here it names a dead port.
    r = runner.run("run", "-n", resource, "true",
                   env=runner.env(REDLOCK_CONFIG=conf, REDLOCK_NODES="redis://127.0.0.1:1"))
    assert r.returncode == 69, r.stderr

    bad = tmp_path / "bad.conf"
    bad.write_text("nodes = redis://127.0.0.1:1\ncolour = blue\n")
    r = runner.run("status", "--config", str(bad), resource)
    assert r.returncode == EXIT_USAGE
    assert f"{bad}:2" in r.stderr and "colour" in r.stderr


# ---------------------------------------------------------------------------------------------
# status

def test_status_free_held_and_json(runner, cluster5, resource):
    r = runner.run("status", resource, "--nodes", nodes_arg(cluster5))
    assert r.returncode == 1, r.stderr
    assert "free" in r.stdout
    holder = runner.popen("run", "--nodes", nodes_arg(cluster5), "--ttl", "20s", resource, "sleep", "30")
    try:
        wait_for(lambda: key_count(cluster5, resource) == 5, what="holder")
        value = cluster5.cmd(0, "GET", resource)
        r = runner.run("status", resource, "--nodes", nodes_arg(cluster5))
        assert r.returncode == 0, r.stderr
        assert r.stdout.count(value) == 6  # five rows and the summary
        r = runner.run("status", "--json", resource, "--nodes", nodes_arg(cluster5))
        assert r.returncode == 0
        doc = json.loads(r.stdout)
        assert doc["state"] == "held" and doc["holder"] == value and doc["holder_nodes"] == 5
        assert doc["quorum"] == 3
        for n in doc["nodes"]:
            assert n["state"] == "held" and n["value"] == value
            assert 10000 < n["ttl_ms"] <= 20000
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.communicate(timeout=30)


def test_status_with_nodes_down_and_masked_passwords(runner, resource):
    with nodes.Cluster(count=3, kind="redis") as c:
        c.cmd(0, "SET", resource, "someone", "PX", 60000)
        c.cmd(1, "SET", resource, "someone", "PX", 60000)
        urls = list(c.urls)
        urls[2] = urls[2].replace("redis://", "redis://alice:hunter2secret@")
        r = runner.run("status", resource, "--nodes", ",".join(urls))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "hunter2secret" not in r.stdout + r.stderr
        assert "alice:***@" in r.stdout
        c.kill(0)
        c.kill(1)
        r = runner.run("status", "--json", resource, "--nodes", ",".join(urls))
        assert r.returncode == 69
        doc = json.loads(r.stdout)
        assert doc["state"] == "unknown"
        assert [n["state"] for n in doc["nodes"]] == ["error", "error", "error"]
        assert "hunter2secret" not in r.stdout + r.stderr


# ---------------------------------------------------------------------------------------------
# doctor

def doctor(runner, urls, *extra):
    r = runner.run("doctor", "--json", "--clock-probe", "0", "--nodes", ",".join(urls), *extra)
    doc = json.loads(r.stdout)
    checks = {(f["node"], f["check"]): f for f in doc["findings"]}
    for f in doc["findings"]:
        assert f["severity"] in ("info", "warn", "severe")
        assert f["message"] and f["fix"]
    return r, doc, checks


def test_doctor_on_default_nodes(runner, cluster5):
    r = runner.run("doctor", "--nodes", nodes_arg(cluster5), "--ttl", "45s", "--clock-probe", "300ms")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "summary: 0 severe" in r.stdout
    assert r.stdout.count("[no-persistence]") == 5
    assert "45s" in r.stdout
    r, doc, checks = doctor(runner, cluster5.urls)
    assert r.returncode == 0
    assert doc["severe"] == 0
    assert all(checks[(i, "no-persistence")]["severity"] == "warn" for i in range(5))
    assert not any(c == "clock-rate" for _, c in checks)
    assert {n["server"] for n in doc["nodes"]} == {"redis", "valkey"}
    assert len({n["run_id"] for n in doc["nodes"]}) == 5
    # it cleaned up after itself
    assert all(cluster5.keys(i, "*redlock-doctor*") == [] for i in range(5))


def test_doctor_eviction_policy_is_severe(runner):
    with nodes.Cluster(count=3, kind="mixed", conf={"maxmemory-policy": "allkeys-lru"}) as c:
        c.cmd(2, "CONFIG", "SET", "maxmemory-policy", "noeviction")
        r, doc, checks = doctor(runner, c.urls)
        assert r.returncode == 1
        assert checks[(0, "eviction")]["severity"] == "severe"
        assert "allkeys-lru" in checks[(0, "eviction")]["message"]
        assert (1, "eviction") in checks and (2, "eviction") not in checks


def test_doctor_replicas_are_severe(runner):
    with nodes.Cluster(count=3, kind="redis") as c:
        c.cmd(2, "REPLICAOF", "127.0.0.1", c.port(0))
        wait_for(lambda: "connected_slaves:1" in c.cmd(0, "INFO", "replication"), what="replica link")
        r, doc, checks = doctor(runner, c.urls)
        assert r.returncode == 1
        assert checks[(2, "replica")]["severity"] == "severe"
        assert str(c.port(0)) in checks[(2, "replica")]["message"]
        assert checks[(0, "has-replicas")]["severity"] == "warn"
        assert (1, "replica") not in checks


def test_doctor_same_server_twice_is_severe(runner):
    with nodes.Cluster(count=3, kind="redis") as c:
        dup = f"redis://localhost:{c.port(1)}"
        r, doc, checks = doctor(runner, [*c.urls, dup])
        assert r.returncode == 1, r.stdout
        assert checks[(3, "duplicate")]["severity"] == "severe"
        assert "node 1" in checks[(3, "duplicate")]["message"]
        assert (None, "even-nodes") in checks


def test_doctor_acl_without_set_is_severe(runner):
    with nodes.Cluster(count=3, kind="mixed") as c:
        for i in range(3):
            c.cmd(i, "ACL", "SETUSER", "noset", "on", ">pw-noset", "~*", "&*", "+@all", "-set")
        urls = list(c.urls)
        urls[0] = urls[0].replace("redis://", "redis://noset:pw-noset@")
        r, doc, checks = doctor(runner, urls)
        assert r.returncode == 1
        assert checks[(0, "acl-set")]["severity"] == "severe"
        assert "ACL SETUSER" in checks[(0, "acl-set")]["fix"]
        assert "pw-noset" not in r.stdout + r.stderr
        assert doc["nodes"][0]["url"].startswith("redis://noset:***@")


def test_doctor_scripts_denied_is_severe(runner):
    # Lua cannot be switched off in these servers; an ACL that denies EVAL and EVALSHA is what a
    # lock client sees in the same way ("scripts unavailable").
    with nodes.Cluster(count=3, kind="mixed") as c:
        for i in range(3):
            c.cmd(i, "ACL", "SETUSER", "noeval", "on", ">pw", "~*", "&*", "+@all", "-eval", "-evalsha")
        urls = [u.replace("redis://", "redis://noeval:pw@") for u in c.urls]
        r, doc, checks = doctor(runner, urls)
        assert r.returncode == 1
        for i in (0, 1, 2):
            assert checks[(i, "acl-eval")]["severity"] == "severe"
            assert checks[(i, "acl-evalsha")]["severity"] == "severe"
        # and the ACL that denies only the commands inside the scripts
        for i in range(3):
            c.cmd(i, "ACL", "SETUSER", "nodel", "on", ">pw", "~*", "&*", "+@all", "-del")
        urls = [u.replace("redis://", "redis://nodel:pw@") for u in c.urls]
        r, doc, checks = doctor(runner, urls)
        assert r.returncode == 1
        assert checks[(0, "acl-release")]["severity"] == "severe"
        assert (0, "acl-eval") not in checks


def test_doctor_unreachable_node_and_few_nodes(runner):
    with nodes.Cluster(count=2, kind="redis") as c:
        c.kill(1)
        r, doc, checks = doctor(runner, c.urls)
        assert r.returncode == 1
        assert checks[(1, "unreachable")]["severity"] == "severe"
        assert checks[(None, "few-nodes")]["severity"] == "warn"
        assert checks[(None, "no-quorum")]["severity"] == "severe"
        assert doc["nodes"][1]["reachable"] is False


@pytest.fixture(scope="module")
def clockrate_shim(tmp_path_factory):
    """tests/cli/clockrate.c built as an LD_PRELOAD library that speeds up a server's clocks."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build the clock-rate shim")
    out = tmp_path_factory.mktemp("shim") / "clockrate.so"
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clockrate.c")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), src], check=True)
    return out


@pytest.mark.parametrize("rate,severity", [("1.03", "warn"), ("1.15", "severe")])
def test_doctor_clock_rate(runner, tmp_path, monkeypatch, clockrate_shim, rate, severity):
    real = shutil.which("redis-server")
    wrapper = tmp_path / "fast-redis-server"
    # The server's clock runs `rate` times faster than ours: its keys expire early.
    wrapper.write_text(f'#!/bin/sh\nCLOCKRATE={rate} LD_PRELOAD={clockrate_shim} exec {real} "$@"\n')
    wrapper.chmod(0o755)
    with nodes.Cluster(count=1, kind="redis") as normal:
        monkeypatch.setenv("REDIS_SERVER", str(wrapper))
        with nodes.Cluster(count=1, kind="redis") as fast:
            monkeypatch.delenv("REDIS_SERVER")
            r = runner.run("doctor", "--json", "--clock-probe", "1s", "--nodes",
                           f"{normal.url(0)},{fast.url(0)}")
            doc = json.loads(r.stdout)
            checks = {(f["node"], f["check"]): f for f in doc["findings"]}
            assert checks[(0, "clock-rate")]["severity"] == "info"
            assert checks[(1, "clock-rate")]["severity"] == severity, checks[(1, "clock-rate")]
            assert r.returncode == (1 if severity == "severe" else 0)
