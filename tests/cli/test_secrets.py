# SPDX-License-Identifier: BSD-3-Clause
# Passwords never shown, and never handed to COMMAND: malformed URLs in errors, commas inside
# passwords in --nodes, and the environment `redlock run` gives COMMAND. On real nodes that
# require a password (an ACL user, and requirepass).
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness"))
import nodes  # noqa: E402

SECRET = "hunter2-S3cret"
COMMA_PW = "pa,ss-W0rd"   # a comma nobody percent-encoded
PIECES = (SECRET, "hunter2", "S3cret", "pa,ss", "ss-W0rd", "W0rd")


def assert_clean(text, what=""):
    for p in PIECES:
        assert p not in text, "%s shows %r: %s" % (what, p, text)


def with_userinfo(url, userinfo):
    scheme, rest = url.split("://", 1)
    return "%s://%s@%s" % (scheme, userinfo, rest)


@pytest.fixture(scope="module")
def acl3():
    """Three nodes with an ACL user 'app' whose password holds a comma."""
    with nodes.Cluster(count=3, kind="mixed") as c:
        for i in range(3):
            c.cmd(i, "ACL", "SETUSER", "app", "on", ">" + COMMA_PW, ">" + SECRET, "~*", "+@all")
            c.cmd(i, "ACL", "SETUSER", "default", "on", "nopass", "~*", "+@all")
        yield c


@pytest.mark.parametrize("bad", [
    "redis://:" + SECRET,
    "redis://app:" + SECRET,
    "redis://:" + SECRET + "@",
    SECRET + "@127.0.0.1:6379",
    "redis://:" + SECRET + "@127.0.0.1:nope",
    "unix://:" + SECRET,
    "redis://127.0.0.1:1," + SECRET,          # a list item without a scheme continues the one before
    "redis://127.0.0.1:1,:" + SECRET + "@127.0.0.1:2/x",
])
@pytest.mark.parametrize("sub", ["run", "status", "doctor"])
def test_malformed_urls_never_show_the_password(runner, sub, bad):
    args = {"run": ["run", "--nodes", bad, "res", "true"], "status": ["status", "--nodes", bad, "res"],
            "doctor": ["doctor", "--nodes", bad]}[sub]
    r = runner.run(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip(), "no error message"
    assert_clean(r.stdout + r.stderr, sub)
    # the same through the environment
    r = runner.run(*[a for a in args if a not in ("--nodes", bad)], env=runner.env(REDLOCK_NODES=bad))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert_clean(r.stdout + r.stderr, sub + " with REDLOCK_NODES")


def test_a_comma_in_a_password_is_not_split(runner, acl3, resource):
    nodes_list = ",".join(with_userinfo(u, "app:" + COMMA_PW) for u in acl3.urls)
    r = runner.run("run", "--nodes", nodes_list, resource, "true")
    assert r.returncode == 0, r.stderr
    assert_clean(r.stdout + r.stderr, "run")
    r = runner.run("status", "--nodes", nodes_list, resource)
    assert r.returncode == 1, r.stdout + r.stderr          # answered, free
    assert "app:***@" in r.stdout
    assert_clean(r.stdout + r.stderr, "status")
    # A wrong password with a comma: refused by the nodes, and still not shown.
    wrong = ",".join(with_userinfo(u, "app:" + COMMA_PW + "x") for u in acl3.urls)
    for args in (["run", "-n", "--nodes", wrong, resource, "true"], ["status", "--nodes", wrong, resource],
                 ["doctor", "--clock-probe", "0", "--nodes", wrong]):
        r = runner.run(*args)
        assert r.returncode not in (0, 2), (args, r.returncode, r.stderr)
        assert_clean(r.stdout + r.stderr, args[0])


def test_run_hands_command_no_node_url_or_password(runner, acl3, resource, tmp_path):
    nodes_list = ",".join(with_userinfo(u, "app:" + SECRET) for u in acl3.urls)
    conf = tmp_path / "redlock.conf"
    conf.write_text("ttl = 10s\n")
    env = runner.env(REDLOCK_NODES=nodes_list, REDLOCK_CONFIG=str(conf), MY_NODES=nodes_list,
                     REDIS_PASSWORD=SECRET, HARMLESS="kept")
    r = runner.run("run", "--fencing", resource, "--", "env", env=env)
    assert r.returncode == 0, r.stderr
    seen = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert_clean(r.stdout, "COMMAND's environment")
    for gone in ("REDLOCK_NODES", "REDLOCK_CONFIG", "MY_NODES", "REDIS_PASSWORD"):
        assert gone not in seen, gone
    assert seen["REDLOCK_RESOURCE"] == resource
    assert int(seen["REDLOCK_VALIDITY_MS"]) > 0
    assert int(seen["REDLOCK_FENCING_TOKEN"]) >= 1
    assert seen["HARMLESS"] == "kept" and "PATH" in seen


def test_run_with_requirepass_hides_the_password_from_command_and_output(runner, resource):
    with nodes.Cluster(count=3, kind="mixed") as c:
        urls = c.urls
        for i in range(3):
            c.cmd(i, "CONFIG", "SET", "requirepass", SECRET)
        good = ",".join(with_userinfo(u, ":" + SECRET) for u in urls)
        r = runner.run("run", "-v", resource, "--", "sh", "-c", 'env; echo "ran $REDLOCK_RESOURCE"',
                       env=runner.env(REDLOCK_NODES=good))
        assert r.returncode == 0, r.stderr
        assert "ran " + resource in r.stdout
        assert_clean(r.stdout + r.stderr, "run -v")
        r = runner.run("status", resource, env=runner.env(REDLOCK_NODES=good))
        assert r.returncode == 1, r.stdout + r.stderr
        assert ":***@" in r.stdout
        assert_clean(r.stdout + r.stderr, "status")
        # Without the password the nodes refuse, and say so.
        r = runner.run("run", "-n", "--nodes", ",".join(urls), resource, "true")
        assert r.returncode == 69, (r.returncode, r.stderr)
