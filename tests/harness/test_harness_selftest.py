# SPDX-License-Identifier: BSD-3-Clause
# Self-test of the node harness (nodes.py): Python API, exec/ctl CLI, and that no server outlives it.
# Run: python3 -m pytest -q tests/harness
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nodes  # noqa: E402

NODES_PY = os.path.join(HERE, "nodes.py")


def alive(pid):
    """True if pid exists and is not a zombie (a container's PID 1 may never reap orphans)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pids, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if alive(p)]


def ipv6_available():
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def mixed():
    with nodes.Cluster(3, kind="mixed") as c:
        yield c


def test_mixed_ping_and_kinds(mixed):
    assert mixed.kinds == ["redis", "valkey", "redis"]
    assert len(mixed.urls) == 3 and len(set(mixed.urls)) == 3
    for i in range(3):
        assert mixed.url(i) == "redis://127.0.0.1:%d" % mixed.port(i)
        assert mixed.cmd(i, "PING") == "PONG"
        info = mixed.cmd(i, "INFO", "server")
        assert ("valkey_version:" in info) == (mixed.kind(i) == "valkey")
        assert "process_id:%d" % mixed.pid(i) in info


def test_reply_types(mixed):
    c = mixed
    c.cmd(0, "FLUSHALL")
    assert c.cmd(0, "SET", "k", "v") == "OK"
    assert c.cmd(0, "GET", "k") == "v"
    assert c.cmd(0, "GET", "missing") is None
    assert c.cmd(0, "INCR", "n") == 1
    assert c.cmd(0, "RPUSH", "l", "a", "b") == 2
    assert c.cmd(0, "LRANGE", "l", 0, -1) == ["a", "b"]
    assert c.dbsize(0) == 3
    assert sorted(c.keys(0)) == ["k", "l", "n"]
    assert c.keys(0, "l*") == ["l"]
    assert c.cmd(0, "CONFIG", "GET", "maxmemory-policy") == ["maxmemory-policy", "noeviction"]
    assert c.cmd(0, "CONFIG", "GET", "appendonly") == ["appendonly", "no"]
    assert c.cmd(0, "DEBUG", "SLEEP", "0") == "OK"          # --enable-debug-command local
    with pytest.raises(nodes.ReplyError, match="unknown command"):
        c.cmd(0, "NO-SUCH-COMMAND")
    with pytest.raises(nodes.ReplyError, match="WRONGTYPE"):
        c.cmd(0, "GET", "l")
    binary = "\udcff\x00é"                                   # surrogateescape round trip
    c.cmd(0, "SET", "b", binary.encode("utf-8", "surrogateescape"))
    assert c.cmd(0, "GET", "b") == binary


def test_kill_and_restart_same_port(mixed):
    c = mixed
    port, pid = c.port(1), c.pid(1)
    c.cmd(1, "SET", "gone", "1")
    c.kill(1)
    assert not c.is_running(1) and c.pid(1) is None
    assert not alive(pid)
    with pytest.raises(ConnectionRefusedError):
        c.cmd(1, "PING")
    t = time.monotonic()
    c.restart(1, delay=0.2)
    assert time.monotonic() - t >= 0.2
    assert c.is_running(1) and c.pid(1) != pid and c.port(1) == port
    assert c.cmd(1, "PING") == "PONG"
    assert c.cmd(1, "GET", "gone") is None                   # no persistence: data lost
    c.restart(1)                                             # restart of a running node kills it first
    assert c.cmd(1, "PING") == "PONG"


def test_pause_resume(mixed):
    c = mixed
    c.pause(2)
    assert c.is_running(2) and c.is_paused(2)
    t = time.monotonic()
    with pytest.raises(TimeoutError):
        c.cmd(2, "PING", timeout=0.3)
    assert time.monotonic() - t < 2
    c.resume(2)
    assert not c.is_paused(2)
    assert c.cmd(2, "PING") == "PONG"
    c.pause(2)
    c.restart(2)                                             # restart works on a paused node
    assert c.cmd(2, "PING") == "PONG"


def test_stop_node_start_node(mixed):
    c = mixed
    c.stop_node(0)
    assert not c.is_running(0)
    c.start_node(0)
    assert c.cmd(0, "PING") == "PONG"


def test_restart_from_thread_survives_thread_exit(mixed):
    import threading
    t = threading.Thread(target=mixed.restart, args=(0,))
    t.start()
    t.join()
    pid = mixed.pid(0)
    time.sleep(0.2)                  # PR_SET_PDEATHSIG would have fired when the thread exited
    assert alive(pid) and mixed.cmd(0, "PING") == "PONG"


def test_unix_sockets():
    with nodes.Cluster(2, kind="mixed", unix=True) as c:
        for i in range(2):
            assert c.url(i).startswith("unix:///") and c.url(i).endswith(".sock")
            assert os.path.exists(c.url(i)[len("unix://"):])
            assert c.port(i) == 0
            assert c.cmd(i, "PING") == "PONG"
        c.kill(0)
        with pytest.raises(OSError):
            c.cmd(0, "PING")
        c.restart(0)
        assert c.cmd(0, "PING") == "PONG"


@pytest.mark.skipif(not ipv6_available(), reason="no IPv6 loopback")
def test_ipv6():
    with nodes.Cluster(1, ipv6=True) as c:
        assert c.url(0) == "redis://[::1]:%d" % c.port(0)
        assert c.cmd(0, "PING") == "PONG"


def test_aof_always_survives_kill_and_conf():
    with nodes.Cluster(2, kind="mixed", persistence="aof-always",
                       conf={"maxmemory-policy": "allkeys-lru"}) as c:
        for i in range(2):
            assert c.cmd(i, "CONFIG", "GET", "appendfsync") == ["appendfsync", "always"]
            assert c.cmd(i, "CONFIG", "GET", "maxmemory-policy") == ["maxmemory-policy", "allkeys-lru"]
            c.cmd(i, "SET", "durable", "yes")
            c.kill(i)
            c.restart(i)
            assert c.cmd(i, "GET", "durable") == "yes"


def test_cleanup_on_exception_and_fast_start():
    t = time.monotonic()
    with pytest.raises(ZeroDivisionError):
        with nodes.Cluster(9, kind="mixed") as c:
            elapsed = time.monotonic() - t
            pids = [c.pid(i) for i in range(9)]
            base = c.base_dir
            c.pause(4)
            1 / 0
    assert elapsed < 5, "starting 9 nodes took %.2fs" % elapsed
    assert wait_dead(pids, 1) == []
    assert not os.path.exists(base)


def test_port_race_retries(monkeypatch):
    """A port taken between choosing it and the server binding it: the node moves elsewhere."""
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(1)
    busy = squatter.getsockname()[1]
    real = nodes._alloc_port
    calls = []

    def fake(hosts):
        calls.append(1)
        return busy if len(calls) == 1 else real(hosts)
    monkeypatch.setattr(nodes, "_alloc_port", fake)
    try:
        with nodes.Cluster(1) as c:
            assert c.port(0) != busy and c.cmd(0, "PING") == "PONG"
    finally:
        squatter.close()


def test_start_failure_reports_log():
    with pytest.raises(nodes.HarnessError, match="(?s)exited with status.*bogus-directive"):
        with nodes.Cluster(1, conf={"bogus-directive": "1"}):
            pass


def test_servers_die_with_sigkilled_owner():
    code = ("import sys, time; sys.path.insert(0, %r); import nodes\n"
            "c = nodes.Cluster(2, kind='mixed').start(); c.pause(1)\n"
            "print(c.pid(0), c.pid(1), c.base_dir, flush=True); time.sleep(60)\n" % HERE)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    *pids, base = p.stdout.readline().split()
    pids = [int(x) for x in pids]
    assert len(pids) == 2 and all(alive(x) for x in pids)
    p.kill()
    p.wait()
    try:
        assert wait_dead(pids) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)   # nobody is left to clean up after SIGKILL


def test_sigterm_cleans_up():
    code = ("import sys, time; sys.path.insert(0, %r); import nodes\n"
            "c = nodes.Cluster(1).start()\n"
            "print(c.pid(0), c.base_dir, flush=True); time.sleep(60)\n" % HERE)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid, base = p.stdout.readline().split()
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == -signal.SIGTERM
    assert wait_dead([int(pid)], 1) == []
    assert not os.path.exists(base)


# -- CLI ---------------------------------------------------------------------------------------

CTL_SCRIPT = r'''
import os, subprocess, sys
py, harness = os.environ["REDLOCK_HARNESS_PYTHON"], os.environ["REDLOCK_HARNESS_PY"]
def ctl(*a):
    r = subprocess.run([py, "-S", harness, "ctl"] + [str(x) for x in a], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr
urls = os.environ["REDLOCK_TEST_NODES"].split(",")
assert len(urls) == 2, urls
assert os.environ["REDLOCK_TEST_NODE_KINDS"] == "redis,valkey"
assert ctl("url", 1) == (0, urls[1] + "\n", "")
assert ctl("urls")[1].split() == urls
assert ctl("cmd", 0, "SET", "k", "hello world") == (0, "OK\n", "")
assert ctl("cmd", 0, "GET", "k")[1] == "hello world\n"
assert ctl("cmd", 0, "GET", "nope")[1] == "(nil)\n"
assert ctl("cmd", 0, "INCR", "n")[1] == "1\n"
assert ctl("cmd", 0, "RPUSH", "l", "a", "b")[1] == "2\n"
assert ctl("cmd", 0, "LRANGE", "l", 0, -1)[1] == "a\nb\n"
rc, out, err = ctl("cmd", 0, "NOPE")
assert rc == 1 and "unknown command" in err, (rc, out, err)
pid0 = int(ctl("pid", 0)[1])
assert ctl("running", 0)[1] == "1\n"
assert ctl("kill", 0)[0] == 0
assert ctl("running", 0)[1] == "0\n"
assert ctl("pid", 0)[0] == 1
assert ctl("restart", 0, "--delay", "0.1")[0] == 0
assert ctl("running", 0)[1] == "1\n" and int(ctl("pid", 0)[1]) != pid0
assert ctl("cmd", 0, "PING")[1] == "PONG\n"
assert ctl("pause", 1)[0] == 0
rc, out, err = ctl("cmd", "--timeout", "0.3", 1, "PING")
assert rc == 1 and "TIMEOUT" in err, (rc, out, err)
assert ctl("resume", 1)[0] == 0
assert ctl("cmd", 1, "PING")[1] == "PONG\n"
assert ctl("kill", 5)[0] == 1
assert ctl("kill")[0] == 2
assert ctl("frobnicate", 0)[0] == 2
r = subprocess.run(os.environ["REDLOCK_HARNESS_CTL"] + " cmd 1 ECHO 'a b'", shell=True,
                   capture_output=True, text=True)
assert (r.returncode, r.stdout) == (0, "a b\n"), r
# the control socket speaks RESP, and inline commands too
sys.path.insert(0, os.path.dirname(harness))
import nodes, socket
assert nodes.Control().urls() == urls
assert nodes.Control().cmd(1, "ECHO", "x") == "x"
s = socket.socket(socket.AF_UNIX); s.connect(os.environ["REDLOCK_HARNESS"])
s.sendall(b"running 1\r\n"); assert s.recv(100) == b":1\r\n"
print(pid0, int(ctl("pid", 0)[1]), int(ctl("pid", 1)[1]))
sys.exit(3)
'''


def run_exec(*args, **kw):
    return subprocess.run([sys.executable, NODES_PY, "exec"] + list(args), capture_output=True,
                          text=True, timeout=60, **kw)


def test_exec_and_ctl_end_to_end():
    r = run_exec("--count", "2", "--kind", "mixed", "--", sys.executable, "-c", CTL_SCRIPT)
    assert r.returncode == 3, r.stderr
    pids = [int(x) for x in r.stdout.split()]
    assert wait_dead(pids, 1) == []          # exec stopped every node before returning


def test_exec_exit_status_and_options():
    r = run_exec("--count", "1", "--unix", "--conf", "maxmemory-policy=allkeys-lru", "--",
                 sys.executable, "-c",
                 "import os, subprocess; u = os.environ['REDLOCK_TEST_NODES']; assert u.startswith('unix://');"
                 "print(subprocess.check_output([os.environ['REDLOCK_HARNESS_PYTHON'],"
                 " os.environ['REDLOCK_HARNESS_PY'], 'ctl', 'cmd', '0', 'CONFIG', 'GET', 'maxmemory-policy'],"
                 " text=True), end='')")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "maxmemory-policy\nallkeys-lru\n"
    r = run_exec("--count", "1", "--", "sh", "-c", "kill -KILL $$")
    assert r.returncode == 128 + signal.SIGKILL
    r = run_exec("--count", "1", "--", "definitely-not-a-program-xyz")
    assert r.returncode == 127
    r = run_exec("--count", "1", "--no-such-option", "--", "true")
    assert r.returncode == 2
    r = run_exec("--count", "1", "--conf", "bogus-directive=1", "--", "true")
    assert r.returncode == 1 and "bogus-directive" in r.stderr


def test_ctl_without_harness():
    env = dict(os.environ)
    env.pop("REDLOCK_HARNESS", None)
    r = subprocess.run([sys.executable, NODES_PY, "ctl", "kill", "0"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 1 and "REDLOCK_HARNESS" in r.stderr
