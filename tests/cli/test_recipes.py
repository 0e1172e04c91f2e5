# SPDX-License-Identifier: BSD-3-Clause
# The recipes of docs/cli.md ("Recipes"), from tests/cli/recipes/: each must appear in the doc
# word for word, and each but the Kubernetes one is run against local nodes, with only the
# installation paths replaced (the binary, the report program, the config files).
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time

import pytest

from clitest import nodes_arg

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPES = os.path.join(HERE, "recipes")
DOC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "cli.md")


def recipe(name: str) -> str:
    with open(os.path.join(RECIPES, name)) as f:
        return f.read()


@pytest.mark.parametrize("name", sorted(os.listdir(RECIPES)))
def test_recipe_is_in_the_doc_as_tested(name):
    with open(DOC) as f:
        doc = f.read()
    assert recipe(name).strip() in doc, "docs/cli.md does not show tests/cli/recipes/%s as it is" % name


@pytest.fixture
def report(tmp_path):
    """Stands for /usr/local/bin/make-report: logs its start, end and arguments."""
    log = tmp_path / "report.log"
    prog = tmp_path / "make-report"
    prog.write_text('#!/bin/sh\necho "start $$ $* $REDLOCK_RESOURCE" >> %s\nsleep "${REPORT_SECONDS:-0.3}"\n'
                    'echo "end $$" >> %s\n' % (log, log))
    prog.chmod(0o755)
    return prog, log


def runs_did_not_overlap(log_text: str) -> int:
    """Number of complete runs; fails if one started before another ended."""
    open_runs, done = 0, 0
    for line in log_text.splitlines():
        if line.startswith("start"):
            assert open_runs == 0, "two runs overlapped:\n" + log_text
            open_runs = 1
        elif line.startswith("end"):
            open_runs, done = 0, done + 1
    return done


def substitute(text: str, mapping: dict) -> str:
    for old, new in mapping.items():
        text = text.replace(old, str(new))
    return text


def unit_values(text: str, key: str) -> list:
    return [line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith(key + "=")]


def write_units(tmp_path, cli, cluster, prog):
    env_file = tmp_path / "nodes.env"
    env_file.write_text("REDLOCK_NODES=%s\n" % nodes_arg(cluster))
    mapping = {"/usr/local/bin/redlock": cli, "/usr/local/bin/make-report": prog, "/etc/redlock/nodes.env": env_file}
    service = tmp_path / "nightly-report.service"
    timer = tmp_path / "nightly-report.timer"
    service.write_text(substitute(recipe("nightly-report.service"), mapping))
    timer.write_text(recipe("nightly-report.timer"))
    return service, timer


def test_systemd_units_verify(cli, cluster5, tmp_path, report):
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        pytest.skip("SKIPPED: systemd-analyze is not installed (Debian package systemd); "
                    "test_systemd_service_and_timer still parses the units and runs ExecStart")
    service, timer = write_units(tmp_path, cli, cluster5, report[0])
    r = subprocess.run([analyze, "verify", "--man=no", str(service), str(timer)], capture_output=True,
                       text=True, timeout=60)
    # verify only warns about unknown settings or bad values: any word about our units fails
    ours = [line for line in (r.stdout + r.stderr).splitlines() if "nightly-report" in line]
    assert r.returncode == 0 and not ours, r.stdout + r.stderr
    # ...and it does catch a bad value (so that the check above means something).
    service.write_text(service.read_text().replace("KillMode=mixed", "KillMode=mixd"))
    r = subprocess.run([analyze, "verify", "--man=no", str(service)], capture_output=True, text=True, timeout=60)
    assert "nightly-report" in r.stdout + r.stderr


def test_systemd_service_and_timer(runner, cli, cluster5, tmp_path, report):
    prog, log = report
    service, timer = write_units(tmp_path, cli, cluster5, prog)

    # Run ExecStart as systemd would: the EnvironmentFile's variables, no shell.
    text = service.read_text()
    assert unit_values(text, "Type") == ["oneshot"]
    assert unit_values(text, "KillMode") == ["mixed"]
    ok_codes = [int(c) for v in unit_values(text, "SuccessExitStatus") for c in v.split()]
    assert ok_codes == [75]
    env = runner.env()
    for path in unit_values(text, "EnvironmentFile"):
        for line in open(path):
            if "=" in line and not line.startswith("#"):
                k, v = line.strip().split("=", 1)
                env[k] = v
    (exec_start,) = unit_values(text, "ExecStart")
    argv = shlex.split(exec_start)
    assert argv[0] == cli and "--nonblock" in argv
    # The timer starts it on every host at once: one makes the report, the others exit 75 (success).
    procs = []
    for _ in range(3):
        # 0.1 s apart, as RandomizedDelaySec spreads them: three one-shot attempts started in the
        # same millisecond may split the votes so that none gets a quorum, which is not a failure
        # of the recipe (the next night's run would do the report).
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        time.sleep(0.1)
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert all(c == 0 or c in ok_codes for c in codes), codes
    assert codes.count(0) >= 1
    assert runs_did_not_overlap(log.read_text()) == codes.count(0)
    assert "--full nightly-report" in log.read_text()
    assert unit_values(timer.read_text(), "OnCalendar") == ["*-*-* 02:00:00"]


def test_cron_line(runner, cli, cluster5, tmp_path, report):
    prog, log = report
    conf = tmp_path / "redlock.conf"
    conf.write_text("nodes = %s\nttl = 30s\n" % nodes_arg(cluster5))
    out = tmp_path / "cron.log"
    mapping = {"/usr/local/bin/redlock": cli, "/usr/local/bin/make-report": prog,
               "/etc/redlock/redlock.conf": conf, "/var/log/nightly-report.log": out}
    (line,) = [l for l in recipe("nightly-report.cron").splitlines() if l and not l.startswith("#")]
    fields = line.split(None, 6)
    assert fields[:5] == ["0", "2", "*", "*", "*"] and fields[5] == "report"
    command = substitute(fields[6], mapping)
    # cron runs the command with /bin/sh -c, in a nearly empty environment; on every host at once.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SHELL": "/bin/sh", "REPORT_SECONDS": "0.5"}
    procs = []
    for _ in range(3):
        procs.append(subprocess.Popen(["/bin/sh", "-c", command], env=env))
        time.sleep(0.1)   # hosts' clocks and cron's start differ a little: see the systemd test
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes.count(0) >= 1 and set(codes) <= {0, 75}, codes
    assert runs_did_not_overlap(log.read_text()) == codes.count(0)
    # Hosts that found the lock busy said so in the log.
    assert out.read_text().count("is locked by another owner") == codes.count(75), out.read_text()


def test_ci_step(runner, cli, cluster5, tmp_path):
    text = recipe("ci-step.yml")
    (run_line,) = [l.split("run:", 1)[1].strip() for l in text.splitlines() if l.strip().startswith("run:")]
    assert "${{ secrets.REDLOCK_NODES }}" in text
    work = tmp_path / "checkout"
    work.mkdir()
    log = tmp_path / "deploy.log"
    deploy = work / "deploy.sh"
    deploy.write_text('#!/bin/sh\necho "start $1" >> %s\nsleep 0.4\necho "end" >> %s\n' % (log, log))
    deploy.chmod(0o755)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "redlock").symlink_to(cli)
    step = tmp_path / "step.sh"
    step.write_text(run_line + "\n")
    env = runner.env(REDLOCK_NODES=nodes_arg(cluster5))   # what the secret holds
    env["PATH"] = "%s:%s" % (bindir, env.get("PATH", "/usr/bin:/bin"))
    # GitHub runs a step's script with: bash --noprofile --norc -eo pipefail FILE. Two pipelines at once.
    procs = [subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(step)], cwd=work, env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [c for c, _ in results] == [0, 0], results
    assert runs_did_not_overlap(log.read_text()) == 2       # both deployed, one after the other
    assert "start production" in log.read_text()
    assert all("getting the lock took" in err for _, err in results)
