# SPDX-License-Identifier: BSD-3-Clause
"""redlock run -nN / --limit N (a permit of a semaphore, as consul lock -n) and what
redlock status shows of a semaphore: the limit, the permits held and the waiters."""
import json
import time

from clitest import key_count, nodes_arg, wait_for  # noqa: F401

EXIT_CONFLICT = 75
EXIT_USAGE = 2


def test_run_n_admits_n_commands_at_once(runner, cluster5, resource):
    nodes = nodes_arg(cluster5)
    holders = [runner.popen("run", "--nodes", nodes, form, resource, "sleep", "30")
               for form in ("-n2", "--limit=2")]
    try:
        wait_for(lambda: json.loads(runner.run("status", "--nodes", nodes, "--json", resource).stdout)
                 .get("semaphore", {}).get("permits_held") == 2, what="two permits held")
        # a third command is refused at once with -n, waits with a deadline otherwise
        r = runner.run("run", "--nodes", nodes, "-n=2", "-n", resource, "touch", "/nonexistent/never-run")
        assert r.returncode == EXIT_CONFLICT, r.stderr
        assert "all 2 permits" in r.stderr
        t0 = time.monotonic()
        r = runner.run("run", "--nodes", nodes, "-n2", "--wait", "300ms", resource, "true")
        assert r.returncode == EXIT_CONFLICT and "gave up waiting" in r.stderr
        assert time.monotonic() - t0 < 30
        # another limit on the same name: a usage error naming both
        r = runner.run("run", "--nodes", nodes, "-n3", resource, "true")
        assert r.returncode == EXIT_USAGE
        assert "limit of 2" in r.stderr and "not 3" in r.stderr
        # status: the limit, two permits held, as a table and as JSON
        r = runner.run("status", "--nodes", nodes, resource)
        assert r.returncode == 0, r.stderr
        assert "limit 2" in r.stdout and "2 of 2 permits held on a quorum" in r.stdout
        # a waiter shows in status (one that waits with --wake is registered on the nodes), and
        # gets a permit once one is released
        waiter = runner.popen("run", "--nodes", nodes, "-n2", "--wake", resource, "echo", "got-a-permit")
        wait_for(lambda: json.loads(runner.run("status", "--nodes", nodes, "--json", resource).stdout)
                 ["semaphore"]["waiters"] >= 1, what="the waiter registered")
        holders[0].terminate()
        out, err = waiter.communicate(timeout=30)
        assert waiter.returncode == 0, err
        assert "got-a-permit" in out
    finally:
        for p in holders:
            p.terminate()
            p.wait(30)
    s = json.loads(runner.run("status", "--nodes", nodes, "--json", resource).stdout)
    assert s["state"] == "free" and s["semaphore"]["permits_held"] == 0


def test_run_n_bad_limits_and_flock_forms(runner, cluster5, resource):
    nodes = nodes_arg(cluster5)
    for bad in ("-n0", "-n=1001", "--limit=x", "-n=-1"):
        r = runner.run("run", "--nodes", nodes, bad, resource, "true")
        assert r.returncode == EXIT_USAGE, (bad, r.stderr)
        assert "number of permits" in r.stderr
    # flock's -n and -nx still mean a non-blocking mutex
    r = runner.run("run", "--nodes", nodes, "-nx", resource, "-c", "echo ran")
    assert r.returncode == 0 and "ran" in r.stdout, r.stderr
    r = runner.run("run", "--nodes", nodes, "-nw", "1", resource, "true")
    assert r.returncode == EXIT_USAGE and "apart from -n" in r.stderr


def test_run_n_space_number_is_a_semaphore(runner, cluster5, resource, tmp_path):
    """`-n 3 RESOURCE CMD` is consul's semaphore of 3 (`consul lock -n 3`, the issue's `redlock run
    -n N`), wherever the -n is and whatever flag it ends: two commands run at once under
    `-n 2`, a third is refused, and the limit is kept on the nodes. flock's one attempt at a
    lock named by digits is `--nonblock 3`."""
    nodes = nodes_arg(cluster5)
    marker = tmp_path / "ran"
    holders = [runner.popen("run", "--nodes", nodes, "-n", "2", resource, "--", "sleep", "30"),
               runner.popen("run", "--nodes", nodes, resource, "-xn", "2", "sleep", "30")]
    try:
        wait_for(lambda: json.loads(runner.run("status", "--json", "--nodes", nodes, resource).stdout)
                 .get("semaphore", {}).get("permits_held") == 2, what="two permits of 2")
        st = json.loads(runner.run("status", "--json", "--nodes", nodes, resource).stdout)
        assert st["semaphore"]["limit"] == 2, st
        r = runner.run("run", "--nodes", nodes, "-n", "2", "--wait", "0", resource, "touch", str(marker))
        assert r.returncode == EXIT_CONFLICT and "all 2 permits" in r.stderr, r.stderr
        r = runner.run("run", "--nodes", nodes, "-n", "0", resource, "true")
        assert r.returncode == EXIT_USAGE and "'0' is not a number of permits" in r.stderr, r.stderr
    finally:
        for p in holders:
            p.terminate()
            p.wait(30)
    assert not marker.exists()
    assert key_count(cluster5, "2") == 0

    # the other spellings of a limit, and flock's reading of a number after -n
    holder = runner.popen("run", "--nodes", nodes, "--limit", "3", resource, "--", "sleep", "30")
    try:
        wait_for(lambda: json.loads(runner.run("status", "--json", "--nodes", nodes, resource).stdout)
                 .get("semaphore", {}).get("permits_held") == 1, what="a permit of 3")
        st = json.loads(runner.run("status", "--json", "--nodes", nodes, resource).stdout)
        assert st["semaphore"]["limit"] == 3, st
    finally:
        holder.terminate()
        holder.wait()
    name = "3-" + resource    # an all-digits name would be shared by every run of the test
    r = runner.run("run", "--nodes", nodes, "--nonblock", name, "-c", "echo one attempt")
    assert r.returncode == 0 and r.stdout.strip() == "one attempt", r.stderr
    # and a name of digits through --nonblock, here held by another: one attempt, refused
    digits = str(int(time.time() * 1e6))
    x = runner.popen("run", "--nodes", nodes, "--nonblock", digits, "--", "sleep", "30")
    try:
        wait_for(lambda: key_count(cluster5, digits) >= 3, what="the lock named by digits")
        r = runner.run("run", "--nodes", nodes, "--nb", digits, "true")
        assert r.returncode == EXIT_CONFLICT, r.stderr
    finally:
        x.terminate()
        x.wait()
