# SPDX-License-Identifier: BSD-3-Clause
# The playground (make nodes / make nodes-stop, tests/harness/nodes.py up / down / env) and the
# port range (REDLOCK_PORTS), on real nodes. The "Try it" sections of README.md and of the
# language docs run as written: their ```sh block through bash from the checkout's root, with the
# build's paths put in for build/... and the language's file written to a temporary directory;
# the replacements name the text they replace, so a section that changes fails here until this
# file follows. After `make nodes-stop` no process the playground started may be left, and its
# ports must be free.
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

import nodes  # the shared harness (conftest.py puts tests/harness on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "tests", "harness", "nodes.py")
EXPORT = re.compile(r"^export REDLOCK_NODES=(\S+)$", re.M)


# ---- helpers ------------------------------------------------------------------------------------

def port_range(width=40):
    """A range of `width` ports, below the default ephemeral range, none of them bound now."""
    for _ in range(50):
        lo = random.randrange(17000, 19900 - width)
        if all(nodes._bindable(p, ["127.0.0.1"]) for p in range(lo, lo + width)):
            return lo, lo + width - 1
    pytest.fail("no free range of %d ports in 17000-19900" % width)


def clean_env(tmp_path, lo, hi, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("REDLOCK_") and k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PLAYGROUND")}
    env.update(PLAYGROUND=str(tmp_path / "pg"), REDLOCK_PORTS="%d-%d" % (lo, hi))
    env.update(extra)
    return env


def harness(*args, env, timeout=120):
    return subprocess.run([sys.executable, HARNESS, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


def pids_mentioning(text):
    """PIDs of the processes whose command line contains `text` (a state dir, a port)."""
    out = []
    needle = text.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if needle in cmd and nodes._pid_alive(int(d)):
            out.append(int(d))
    return out


def ports_of(line):
    urls = line.split(",")
    assert all(u.startswith("redis://127.0.0.1:") for u in urls), urls
    return [int(u.rsplit(":", 1)[1]) for u in urls]


def port_closed(p):
    s = socket.socket()
    s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", p))
        return False
    except OSError:
        return True
    finally:
        s.close()


def assert_gone(state_dir, st, deadline_s=10.0):
    """Nothing of playground `state_dir` (state `st`) runs any more and its ports are free."""
    pids = [st["pid"]] + st["pids"] + st.get("cluster_pids", [])
    ports = st["ports"] + st.get("cluster_ports", [])
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and (any(nodes._pid_alive(p) for p in pids)
                                           or pids_mentioning(str(state_dir))):
        time.sleep(0.05)
    assert not [p for p in pids if nodes._pid_alive(p)], "still running: %s" % pids
    assert pids_mentioning(str(state_dir)) == []
    for p in ports:
        assert port_closed(p), "port %d still answers" % p
        assert nodes._bindable(p, ["127.0.0.1"]), "port %d still bound" % p
    assert not os.path.exists(os.path.join(state_dir, "state.json"))


def assert_up(st, n):
    assert len(st["urls"]) == n and len(st["pids"]) == n
    for p, port in zip(st["pids"], st["ports"]):
        assert nodes._pid_alive(p)
        assert nodes.resp_call(("tcp", "127.0.0.1", port), ["PING"]) == "PONG"


def read_state(state_dir):
    with open(os.path.join(state_dir, "state.json")) as f:
        return json.load(f)


# ---- the "Try it" sections, as written -----------------------------------------------------------

def try_it_blocks(rel):
    """{fence language: [code, ...]} of the "Try it" section of docs file `rel`: in README.md the
    first block after the **Try it** paragraph, elsewhere every block under '## Try it'."""
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = next((i for i, l in enumerate(lines) if l == "## Try it" or l.startswith("**Try it**")), None)
    assert start is not None, "%s has no Try it section" % rel
    out, i = {}, start + 1
    while i < len(lines) and not lines[i].startswith("## "):
        m = re.match(r"^```(\w+)$", lines[i])
        if m:
            j = lines.index("```", i + 1)
            out.setdefault(m.group(1), []).append("\n".join(lines[i + 1:j]) + "\n")
            if rel == "README.md":
                break
            i = j
        i += 1
    return out


def replace(text, old, new):
    assert old in text, "the Try it section no longer says %r" % old
    return text.replace(old, new)


def run_try_it(tmp_path, sh, env, want):
    """Runs the block up to its `make nodes-stop` line, checks the nodes, runs that line, checks
    that everything is gone."""
    lines = sh.rstrip("\n").split("\n")
    assert lines[-1].startswith("make nodes-stop"), "the block must end with make nodes-stop"
    assert lines[0].startswith("make nodes ") and lines[1].startswith('eval "$(make -s nodes)"')
    state_dir = env["PLAYGROUND"]
    try:
        up = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", "\n".join(lines[:-1])],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
        assert up.returncode == 0, up.stdout + up.stderr
        exports = EXPORT.findall(up.stdout)
        assert len(exports) == 1, up.stdout      # printed by make nodes; eval takes the second
        lo, hi = (int(x) for x in env["REDLOCK_PORTS"].split("-"))
        ports = ports_of(exports[0])
        assert len(ports) == 5 and all(lo <= p <= hi for p in ports), (ports, lo, hi)
        assert "already running" in up.stderr     # the eval line's make nodes started nothing
        assert want in up.stdout, up.stdout + up.stderr
        st = read_state(state_dir)
        assert st["ports"] == ports
        assert_up(st, 5)
    finally:
        st = read_state(state_dir) if os.path.exists(os.path.join(state_dir, "state.json")) else None
        down = subprocess.run(["bash", "-e", "-c", lines[-1]], capture_output=True, text=True,
                              env=env, cwd=ROOT, timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    assert "stopped 5 nodes" in down.stderr
    assert_gone(state_dir, st)


@pytest.fixture
def build_dir(cli):
    return os.path.dirname(os.path.dirname(os.path.dirname(cli)))


def test_readme_try_it(tmp_path, cli):
    sh = try_it_blocks("README.md")["sh"][0]
    sh = replace(sh, "build/c/cli/redlock", cli)
    lo, hi = port_range()
    run_try_it(tmp_path, sh, clean_env(tmp_path, lo, hi), "holding try-it on a majority of the nodes")


def test_cli_md_try_it(tmp_path, cli):
    sh = try_it_blocks("docs/cli.md")["sh"][0]
    sh = replace(sh, "build/c/cli/redlock", cli)
    lo, hi = port_range()
    env = clean_env(tmp_path, lo, hi)
    run_try_it(tmp_path, sh, env, "exit 75: try-it is held")


def test_python_md_try_it(tmp_path):
    if subprocess.run([sys.executable, "-c", "import redlock"], capture_output=True).returncode:
        pytest.skip("the redlock Python package is not installed in %s (make test-python installs it)"
                    % sys.executable)
    sh = try_it_blocks("docs/python.md")["sh"][0]
    sh = replace(sh, "python3 - <<'EOF'", "'%s' - <<'EOF'" % sys.executable)
    lo, hi = port_range()
    run_try_it(tmp_path, sh, clean_env(tmp_path, lo, hi), "holding try-it for ")


def test_c_api_md_try_it(tmp_path, build_dir):
    if not os.path.exists(os.path.join(build_dir, "libredlock.so")) or not shutil.which("cc"):
        pytest.skip("no %s/libredlock.so or no cc" % build_dir)
    blocks = try_it_blocks("docs/c-api.md")
    (tmp_path / "try-it.c").write_text(blocks["c"][0])
    sh = blocks["sh"][0]
    sh = replace(sh, "cc -o try-it try-it.c", "cc -o '%s' '%s'" % (tmp_path / "try-it", tmp_path / "try-it.c"))
    sh = replace(sh, '-Lbuild -lredlock -Wl,-rpath,"$PWD/build"', "-L'%s' -lredlock -Wl,-rpath,'%s'" % (build_dir, build_dir))
    sh = replace(sh, "./try-it ", "'%s' " % (tmp_path / "try-it"))
    lo, hi = port_range()
    run_try_it(tmp_path, sh, clean_env(tmp_path, lo, hi), "holding try-it for ")


def test_bindings_md_try_it(tmp_path, build_dir):
    jar = os.path.join(build_dir, "bindings", "swig", "redlock-java.jar")
    if not os.path.exists(jar) or not shutil.which("java"):
        pytest.skip("no %s (make build with the static hiredis and OpenSSL) or no java" % jar)
    blocks = try_it_blocks("docs/bindings.md")
    (tmp_path / "TryIt.java").write_text(blocks["java"][0])
    sh = blocks["sh"][0]
    sh = replace(sh, "java -cp build/bindings/swig/redlock-java.jar TryIt.java",
                 "java -cp '%s' '%s'" % (jar, tmp_path / "TryIt.java"))
    lo, hi = port_range()
    run_try_it(tmp_path, sh, clean_env(tmp_path, lo, hi), "holding try-it for ")


def test_go_md_try_it(tmp_path):
    if not shutil.which("go"):
        pytest.skip("no go toolchain")
    blocks = try_it_blocks("docs/go.md")
    # As the docs say, try-it/main.go at the module's root, but through an -overlay (as
    # bindings/go/docs_examples_test.go does), so that nothing is written into the tree.
    (tmp_path / "main.go").write_text(blocks["go"][0])
    virtual = os.path.join(ROOT, "try-it", "main.go")
    assert not os.path.exists(virtual), "a try-it/main.go of someone's is in the checkout"
    (tmp_path / "overlay.json").write_text(json.dumps({"Replace": {virtual: str(tmp_path / "main.go")}}))
    sh = blocks["sh"][0]
    sh = replace(sh, "mkdir -p try-it && $EDITOR try-it/main.go && go run ./try-it",
                 "go run -overlay='%s' ./try-it" % (tmp_path / "overlay.json"))
    lo, hi = port_range()
    run_try_it(tmp_path, sh, clean_env(tmp_path, lo, hi), "holding try-it until ")


# ---- nodes.py up / env / down --------------------------------------------------------------------

def test_up_twice_starts_one_set_and_down_twice_is_fine(tmp_path):
    lo, hi = port_range()
    env = clean_env(tmp_path, lo, hi)
    sd = env["PLAYGROUND"]
    first = harness("up", "--state-dir", sd, "--count", "3", "--kind", "valkey", env=env)
    try:
        assert first.returncode == 0, first.stderr
        # stdout is the export line and nothing else, so that eval "$(...)" works
        assert first.stdout.count("\n") == 1 and EXPORT.match(first.stdout), first.stdout
        st = read_state(sd)
        assert_up(st, 3)
        assert all(lo <= p <= hi for p in st["ports"])
        assert [nodes.resp_call(("tcp", "127.0.0.1", p), ["INFO", "server"]).count("valkey_version")
                for p in st["ports"]] == [1, 1, 1]
        again = harness("up", "--state-dir", sd, env=env)
        assert again.returncode == 0 and again.stdout == first.stdout
        assert "already running (pid %d)" % st["pid"] in again.stderr
        assert read_state(sd) == st
        assert harness("env", "--state-dir", sd, env=env).stdout == first.stdout
        # the control socket of exec works on the playground
        ctl = subprocess.run([sys.executable, HARNESS, "ctl", "kind", "1"], capture_output=True,
                             text=True, env=dict(env, REDLOCK_HARNESS=st["ctl"]), timeout=30)
        assert ctl.stdout.strip() == "valkey", ctl.stderr
    finally:
        down = harness("down", "--state-dir", sd, env=env)
    assert down.returncode == 0 and "stopped 3 nodes" in down.stderr, down.stderr
    assert_gone(sd, st)
    down2 = harness("down", "--state-dir", sd, env=env)
    assert down2.returncode == 0 and "no playground nodes running" in down2.stderr
    e = harness("env", "--state-dir", sd, env=env)
    assert e.returncode == 1 and e.stdout == "" and "no playground nodes running" in e.stderr
    down3 = harness("down", "--state-dir", str(tmp_path / "never-made"), env=env)
    assert down3.returncode == 0 and "no playground nodes running" in down3.stderr


def test_up_that_fails_leaves_no_node(tmp_path):
    lo, hi = port_range()
    fake = tmp_path / "fake-redis-server"
    fake.write_text("#!/bin/sh\necho 'fake redis-server: refusing to start' >&2\nexit 3\n")
    fake.chmod(0o755)
    env = clean_env(tmp_path, lo, hi, REDIS_SERVER=str(fake))
    sd = env["PLAYGROUND"]
    r = harness("up", "--state-dir", sd, env=env)        # mixed: the valkey nodes do start
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    assert "could not start the nodes" in r.stderr and "refusing to start" in r.stderr, r.stderr
    assert pids_mentioning(sd) == []
    assert not os.path.exists(os.path.join(sd, "state.json"))
    assert all(nodes._bindable(p, ["127.0.0.1"]) for p in range(lo, hi + 1))
    assert harness("env", "--state-dir", sd, env=env).returncode == 1


def test_nodes_die_with_a_killed_owner_and_the_state_is_cleared(tmp_path):
    lo, hi = port_range()
    env = clean_env(tmp_path, lo, hi)
    sd = env["PLAYGROUND"]
    r = harness("up", "--state-dir", sd, "--count", "2", env=env)
    assert r.returncode == 0, r.stderr
    st = read_state(sd)
    assert_up(st, 2)
    os.kill(st["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(nodes._pid_alive(p) for p in st["pids"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    e = harness("env", "--state-dir", sd, env=env)
    assert e.returncode == 1
    assert_gone(sd, st)
    d = harness("down", "--state-dir", sd, env=env)
    assert d.returncode == 0 and "no playground nodes running" in d.stderr


def test_up_with_clusters(tmp_path):
    lo, hi = port_range()
    env = clean_env(tmp_path, lo, hi)
    sd = env["PLAYGROUND"]
    r = harness("up", "--state-dir", sd, "--count", "3", "--cluster", "1", env=env)
    try:
        assert r.returncode == 0, r.stderr
        m = re.search(r"^export REDLOCK_CLUSTER_NODES='(redis-cluster://\S+)'$", r.stdout, re.M)
        assert m, r.stdout
        st = read_state(sd)
        assert len(st["cluster_ports"]) == 3 and all(lo <= p <= hi for p in st["cluster_ports"])
        info = nodes.resp_call(("tcp", "127.0.0.1", st["cluster_ports"][0]), ["CLUSTER", "INFO"])
        assert "cluster_state:ok" in info
    finally:
        d = harness("down", "--state-dir", sd, env=env)
    assert d.returncode == 0 and "stopped 3 nodes and 1 cluster" in d.stderr, d.stderr
    assert_gone(sd, st)


# ---- REDLOCK_PORTS -------------------------------------------------------------------------------

@pytest.mark.parametrize("bad,why", [
    ("abc", "expected LOW-HIGH"),
    ("17000", "expected LOW-HIGH"),
    ("17000-", "expected LOW-HIGH"),
    ("9000-8000", "LOW is above HIGH"),
    ("0-100", "ports go from 1 to 65535"),
    ("60000-70000", "ports go from 1 to 65535"),
])
def test_bad_port_ranges_are_refused_before_anything_starts(tmp_path, bad, why):
    env = clean_env(tmp_path, 1, 1, REDLOCK_PORTS=bad)
    for args in (["ports"], ["up", "--state-dir", env["PLAYGROUND"]], ["exec", "--", "true"]):
        r = harness(*args, env=env)
        assert r.returncode == 2, (args, r.stderr)
        assert "REDLOCK_PORTS=%r" % bad in r.stderr and why in r.stderr, r.stderr
    r = harness("up", "--state-dir", env["PLAYGROUND"], "--ports", bad, env=dict(env, REDLOCK_PORTS=""))
    assert r.returncode == 2 and "--ports=%r" % bad in r.stderr and why in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(env["PLAYGROUND"], "state.json"))


def test_a_range_smaller_than_the_set_is_refused(tmp_path):
    env = clean_env(tmp_path, 17000, 17001)
    r = harness("up", "--state-dir", env["PLAYGROUND"], env=env)
    assert r.returncode == 2 and "holds 2 ports; 5 servers need 5" in r.stderr, r.stderr
    r = harness("exec", "--count", "3", "--", "true", env=env)
    assert r.returncode == 2 and "holds 2 ports; 3 servers need 3" in r.stderr, r.stderr


def test_exec_uses_every_port_of_a_tight_range(tmp_path):
    lo, hi = port_range(width=5)
    env = clean_env(tmp_path, lo, hi)
    r = harness("exec", "--count", "5", "--", "sh", "-c", 'echo "$REDLOCK_TEST_NODES"', env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(ports_of(r.stdout.strip())) == list(range(lo, hi + 1))
    # --ports does the same as the variable
    lo2, hi2 = port_range(width=3)
    r = harness("exec", "--ports", "%d-%d" % (lo2, hi2), "--count", "3", "--", "sh", "-c",
                'echo "$REDLOCK_TEST_NODES"', env=dict(env, REDLOCK_PORTS=""))
    assert r.returncode == 0, r.stderr
    assert sorted(ports_of(r.stdout.strip())) == list(range(lo2, hi2 + 1))


def test_a_full_range_says_so(tmp_path):
    lo, hi = port_range(width=3)
    held = []
    try:
        for p in range(lo, hi + 1):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            s.listen()
            held.append(s)
        r = harness("exec", "--count", "3", "--", "true", env=clean_env(tmp_path, lo, hi))
    finally:
        for s in held:
            s.close()
    assert r.returncode == 1
    assert "could not find a TCP port in %d-%d ($REDLOCK_PORTS)" % (lo, hi) in r.stderr, r.stderr


def test_ports_prints_the_range(tmp_path):
    r = harness("ports", env=clean_env(tmp_path, 17000, 17100))
    assert r.returncode == 0 and r.stdout.strip() == "17000-17100"
    r = harness("ports", env=clean_env(tmp_path, 1, 1, REDLOCK_PORTS=""))
    assert r.returncode == 0 and "(default: $REDLOCK_PORTS is not set)" in r.stdout


def test_make_demo_refuses_a_bad_range_before_building(tmp_path):
    build = tmp_path / "build"
    r = subprocess.run(["make", "-s", "demo", "REDLOCK_PORTS=17000-16000", "BUILD=%s" % build],
                       capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env=clean_env(tmp_path, 1, 1, REDLOCK_PORTS=""))
    assert r.returncode != 0
    assert "REDLOCK_PORTS='17000-16000': LOW is above HIGH" in r.stderr, r.stderr
    assert not build.exists()          # failed before the build began


def test_demo_cli_honours_the_range(tmp_path, cli):
    lo, hi = port_range()
    r = subprocess.run([os.path.join(ROOT, "tools", "demo-cli"), cli], capture_output=True, text=True,
                       env=clean_env(tmp_path, lo, hi), cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    ports = [int(p) for p in re.findall(r"node \d: redis://127\.0\.0\.1:(\d+)", r.stdout)]
    assert len(ports) == 5 and all(lo <= p <= hi for p in ports), r.stdout
    assert "OK: 6 jobs ran one at a time" in r.stdout
