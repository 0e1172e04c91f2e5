# SPDX-License-Identifier: BSD-3-Clause
"""redlock run RESOURCE --also NAME: several resources held together, all or none (a
multi-resource lock), on real nodes: any order excludes, a plain run on one of the names waits
for the set, the environment names the set, opposite orders in a loop never stall, bad input;
and why the names are not positional (docs/cli.md): the words after RESOURCE are COMMAND's,
"--" included, and a comma belongs to one name."""
import threading

from clitest import nodes_arg, wait_for  # noqa: F401

EXIT_CONFLICT = 75
EXIT_USAGE = 2


def test_also_holds_the_set_in_any_order(runner, cluster5, resource):
    nodes = nodes_arg(cluster5)
    a, b = resource + ":a", resource + ":b"
    holder = runner.popen("run", "--nodes", nodes, a, "--also", b, "--", "sh", "-c",
                          'echo "$REDLOCK_RESOURCE"; sleep 30')
    try:
        line = holder.stdout.readline().strip()
        assert line == ",".join(sorted([a, b]))
        # the same set in the other order, and a plain lock on either name: refused at once
        for args in ((b, "--also", a), (b,), (a,)):
            r = runner.run("run", "--nodes", nodes, "-n", *args, "--", "touch", "/nonexistent/never")
            assert r.returncode == EXIT_CONFLICT, (args, r.stderr)
        # a waiter for {b, a} gets the set once the holder ends (woken by the release)
        waiter = runner.popen("run", "--nodes", nodes, "--wait", "30s", b, "--also", a, "--", "echo", "got-both")
        holder.terminate()
        out, _ = waiter.communicate(timeout=60)
        assert waiter.returncode == 0 and "got-both" in out
    finally:
        holder.kill()
        holder.wait(30)


def test_opposite_orders_in_a_loop_never_stall(runner, cluster5, resource):
    nodes = nodes_arg(cluster5)
    a, b = resource + ":a", resource + ":b"
    rounds = 8
    results = {}

    def loop(first, second):
        codes = []
        for _ in range(rounds):
            r = runner.run("run", "--nodes", nodes, "--wait", "60s", first, "--also", second, "--", "true",
                           timeout=120)
            codes.append(r.returncode)
        results[(first, second)] = codes

    ts = [threading.Thread(target=loop, args=o) for o in ((a, b), (b, a))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == {(a, b): [0] * rounds, (b, a): [0] * rounds}


def test_also_bad_input(runner, cluster5, resource):
    nodes = nodes_arg(cluster5)
    for args, say in (((resource, "--also", resource), "twice"),
                      ((resource, "--also", ""), "empty"),
                      (("-s", resource, "--also", "x"), "--also and -s/--shared"),
                      (("--limit", "2", resource, "--also", "x"), "--also and --limit"),
                      (("--fair", resource, "--also", "x"), "--also and --fair")):
        r = runner.run("run", "--nodes", nodes, *args, "--", "true")
        assert r.returncode == EXIT_USAGE, (args, r.stderr)
        assert say in r.stderr, (args, r.stderr)
    many = []
    for i in range(64):
        many += ["--also", "%s:%d" % (resource, i)]
    r = runner.run("run", "--nodes", nodes, resource, *many, "--", "true")
    assert r.returncode == EXIT_USAGE and "at most 64" in r.stderr, r.stderr
    r = runner.run("run", "--nodes", nodes, resource, "--also")
    assert r.returncode == EXIT_USAGE and "needs a value" in r.stderr, r.stderr
    r = runner.run("run", "--nodes", nodes, resource, *many[:126], "--", "true")
    assert r.returncode == 0, r.stderr


def test_words_after_resource_are_the_command(runner, cluster5, resource):
    """As flock FILE COMMAND: the first word after RESOURCE starts COMMAND, and a "--" after it is
    COMMAND's own. "redlock run a b -- cmd" therefore runs "b -- cmd" holding a: several
    positional names could not be told from a command, hence --also."""
    nodes = nodes_arg(cluster5)
    r = runner.run("run", "--nodes", nodes, resource, "echo", "--", "x")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "-- x"
    r = runner.run("run", "--nodes", nodes, resource, "sh", "-c", 'echo "$REDLOCK_RESOURCE"')
    assert r.returncode == 0 and r.stdout.strip() == resource, (r.stdout, r.stderr)


def test_a_comma_is_part_of_one_name(runner, cluster5, resource):
    """"a,b" is one resource, not a set (a name may hold commas; a set's REDLOCK_RESOURCE joins
    its names with them): holding it leaves a and b free, and "a,b" itself is refused."""
    nodes = nodes_arg(cluster5)
    a, b = resource + ":a", resource + ":b"
    holder = runner.popen("run", "--nodes", nodes, a + "," + b, "--", "sh", "-c",
                          'echo "$REDLOCK_RESOURCE"; sleep 30')
    try:
        assert holder.stdout.readline().strip() == a + "," + b
        for free in (a, b):
            r = runner.run("run", "--nodes", nodes, "-n", free, "--", "true")
            assert r.returncode == 0, (free, r.stderr)
        r = runner.run("run", "--nodes", nodes, "-n", a + "," + b, "--", "true")
        assert r.returncode == EXIT_CONFLICT, r.stderr
    finally:
        holder.kill()
        holder.wait(30)
