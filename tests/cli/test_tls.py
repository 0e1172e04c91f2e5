# SPDX-License-Identifier: BSD-3-Clause
# Tests of the redlock tool over TLS (rediss://): the --tls-* options and config keys of run,
# status and doctor, against local nodes that listen on TLS ports only. The certificates are made
# at run time by tests/c/make-test-certs.sh (a CA, a server certificate for localhost, 127.0.0.1
# and ::1, a client certificate, and a CA that signed none of them).
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))
import nodes  # noqa: E402
from clitest import key_count, nodes_arg, wait_for  # noqa: E402

EXIT_USAGE = 2
EXIT_UNAVAIL = 69
VERIFY_FAILED = "certificate verify failed"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("the openssl command is needed to make the test certificates")
    d = tmp_path_factory.mktemp("certs")
    subprocess.run(["sh", os.path.join(ROOT, "tests", "c", "make-test-certs.sh"), str(d)], check=True)
    return d


@pytest.fixture(scope="module")
def tls3(certs):
    """Three mixed nodes on TLS ports only; clients need not present a certificate."""
    tls = {"cert": str(certs / "server.crt"), "key": str(certs / "server.key"), "ca": str(certs / "ca.crt")}
    with nodes.Cluster(count=3, kind="mixed", tls=tls) as cluster:
        assert all(u.startswith("rediss://127.0.0.1:") for u in cluster.urls)
        yield cluster


# The library stops waiting once a quorum has answered, and a node whose TLS handshake is still
# under way then may not get the key at all: a quorum (2 of 3) is what a held lock guarantees.
QUORUM = 2


def doctor_json(runner, cluster, *extra):
    r = runner.run("doctor", "--json", "--clock-probe", "0", "--nodes", nodes_arg(cluster), *extra)
    doc = json.loads(r.stdout)
    return r, doc, {(f["node"], f["check"]): f for f in doc["findings"]}


# ---------------------------------------------------------------------------------------------
# run

def test_run_over_tls_with_the_ca(runner, tls3, certs, resource):
    script = 'echo "$REDLOCK_RESOURCE $REDLOCK_VALIDITY_MS"; sleep 0.3'
    p = runner.popen("run", "--nodes", nodes_arg(tls3), "--tls-ca-file", str(certs / "ca.crt"), "--ttl", "10s",
                     resource, "sh", "-c", script)
    wait_for(lambda: key_count(tls3, resource) >= QUORUM or p.poll() is not None,
             what="the lock keys on the TLS nodes")
    assert p.poll() is None, p.communicate()
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    name, validity = out.split()
    assert name == resource and 0 < int(validity) <= 10000
    assert key_count(tls3, resource) == 0  # released over TLS too


def test_run_over_tls_with_a_ca_directory(runner, tls3, certs, resource):
    r = runner.run("run", "--nodes", nodes_arg(tls3), "--tls-ca-dir", str(certs / "cadir"), "-n", resource,
                   "sh", "-c", "echo ran")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ran\n"


def test_run_without_the_ca_fails_with_a_certificate_error(runner, tls3, certs, resource, tmp_path):
    marker = tmp_path / "ran"
    # No CA: the system's CAs did not sign the test CA.
    r = runner.run("run", "--nodes", nodes_arg(tls3), "-n", resource, "touch", str(marker))
    assert r.returncode == EXIT_UNAVAIL, r.stderr
    assert "REDLOCK_ETLS" in r.stderr and VERIFY_FAILED in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # A CA that signed none of the certificates: the same. A certificate does not fix itself, so
    # the failure is not retried while waiting: 69 at once, not the conflict code after --wait.
    r = runner.run("run", "--nodes", nodes_arg(tls3), "--tls-ca-file", str(certs / "other-ca.crt"), "--wait", "60s",
                   resource, "touch", str(marker), timeout=50)
    assert r.returncode == EXIT_UNAVAIL, r.stderr
    assert VERIFY_FAILED in r.stderr
    assert not marker.exists()
    assert key_count(tls3, resource) == 0


def test_run_with_a_wrong_server_name(runner, tls3, certs, resource):
    ca = str(certs / "ca.crt")
    r = runner.run("run", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca, "--tls-server-name", "wrong.example",
                   "-n", resource, "true")
    assert r.returncode == EXIT_UNAVAIL, r.stderr
    assert "hostname mismatch (expected wrong.example)" in r.stderr
    # The certificate carries localhost too: naming it instead of the URL's 127.0.0.1 works.
    r = runner.run("run", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca, "--tls-server-name", "localhost",
                   "-n", resource, "true")
    assert r.returncode == 0, r.stderr


def test_run_insecure_connects_without_a_ca(runner, tls3, resource):
    r = runner.run("run", "--nodes", nodes_arg(tls3), "--tls-insecure", "-n", resource, "sh", "-c", "echo ran")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ran\n"


# ---------------------------------------------------------------------------------------------
# status

def test_status_shows_a_lock_held_over_tls(runner, tls3, certs, resource):
    ca = str(certs / "ca.crt")
    r = runner.run("status", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca, resource)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "free: no node that answered has the key (3 of 3 answered)" in r.stdout
    holder = runner.popen("run", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca, "--ttl", "20s", resource,
                          "sleep", "30")
    try:
        wait_for(lambda: key_count(tls3, resource) >= QUORUM or holder.poll() is not None, what="holder")
        assert holder.poll() is None, holder.communicate()
        held = [i for i in range(3) if tls3.cmd(i, "EXISTS", resource)]
        value = tls3.cmd(held[0], "GET", resource)
        r = runner.run("status", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca, resource)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.count(value) == len(held) + 1  # its rows and the summary
        assert f"held: value {value} is on {len(held)} of 3 nodes" in r.stdout
        assert r.stdout.count("rediss://127.0.0.1:") == 3
        r = runner.run("status", "--json", "--nodes", nodes_arg(tls3), "--tls-ca-dir", str(certs / "cadir"),
                       resource)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["state"] == "held" and doc["holder"] == value and doc["holder_nodes"] == len(held)
        assert doc["answered"] == 3
        for i in held:
            n = doc["nodes"][i]
            assert n["state"] == "held" and n["value"] == value and 0 < n["ttl_ms"] <= 20000

        # Without the CA, every node is an error naming the certificate failure.
        r = runner.run("status", "--json", "--nodes", nodes_arg(tls3), resource)
        assert r.returncode == EXIT_UNAVAIL, r.stderr
        doc = json.loads(r.stdout)
        assert doc["state"] == "unknown"
        for n in doc["nodes"]:
            assert n["state"] == "error"
            assert n["error"].startswith("TLS handshake: " + VERIFY_FAILED), n["error"]
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.communicate(timeout=30)
    assert holder.returncode == 128 + signal.SIGTERM or holder.returncode == -signal.SIGTERM


def test_status_names_the_mismatch(runner, tls3, certs, resource):
    ca = str(certs / "ca.crt")
    r = runner.run("status", "--json", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca,
                   "--tls-server-name", "wrong.example", resource)
    assert r.returncode == EXIT_UNAVAIL, r.stderr
    for n in json.loads(r.stdout)["nodes"]:
        assert n["error"] == "TLS handshake: certificate verify failed: hostname mismatch (expected wrong.example)"
    # An IP address is checked against the certificate's IP addresses.
    r = runner.run("status", "--json", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca,
                   "--tls-server-name", "10.9.8.7", resource)
    assert r.returncode == EXIT_UNAVAIL, r.stderr
    for n in json.loads(r.stdout)["nodes"]:
        assert n["error"] == "TLS handshake: certificate verify failed: IP address mismatch (expected 10.9.8.7)"
    r = runner.run("status", "--nodes", nodes_arg(tls3), "--tls-ca-file", ca, "--tls-server-name", "localhost",
                   resource)
    assert r.returncode == 1, r.stdout + r.stderr  # reached every node: free


def test_status_insecure_and_a_password_over_tls(runner, tls3, resource):
    for i in range(3):
        tls3.cmd(i, "ACL", "SETUSER", "tlsuser", "on", ">pw-over-tls", "~*", "&*", "+@all")
    try:
        tls3.cmd(1, "SET", resource, "someone", "PX", 60000)
        tls3.cmd(2, "SET", resource, "someone", "PX", 60000)
        urls = [u.replace("rediss://", "rediss://tlsuser:pw-over-tls@") for u in tls3.urls]
        r = runner.run("status", "--nodes", ",".join(urls), "--tls-insecure", resource)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "held: value someone is on 2 of 3 nodes" in r.stdout
        assert "pw-over-tls" not in r.stdout + r.stderr
        assert r.stdout.count("rediss://tlsuser:***@127.0.0.1:") == 3
        # A wrong password is an authentication failure, reported after the handshake.
        bad = [u.replace("rediss://", "rediss://tlsuser:nope@") for u in tls3.urls]
        r = runner.run("status", "--json", "--nodes", ",".join(bad), "--tls-insecure", resource)
        assert r.returncode == EXIT_UNAVAIL
        assert all(n["error"].startswith("authentication failed") for n in json.loads(r.stdout)["nodes"])
    finally:
        for i in range(3):
            tls3.cmd(i, "DEL", resource)
            tls3.cmd(i, "ACL", "DELUSER", "tlsuser")


def test_status_rediss_to_a_plain_port(runner, resource):
    with nodes.Cluster(count=1, kind="redis") as plain:
        url = plain.url(0).replace("redis://", "rediss://")
        r = runner.run("status", "--json", "--timeout", "500ms", "--tls-insecure", "--nodes", url, resource)
        assert r.returncode == EXIT_UNAVAIL, r.stderr
        err = json.loads(r.stdout)["nodes"][0]["error"]
        assert err.startswith("TLS handshake: ") and "speak TLS" in err, err


# ---------------------------------------------------------------------------------------------
# doctor

def test_doctor_over_tls(runner, tls3, certs):
    r, doc, checks = doctor_json(runner, tls3, "--tls-ca-file", str(certs / "ca.crt"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert doc["severe"] == 0
    assert all(n["reachable"] and n["url"].startswith("rediss://") for n in doc["nodes"])
    assert {n["server"] for n in doc["nodes"]} == {"redis", "valkey"}
    assert len({n["run_id"] for n in doc["nodes"]}) == 3
    assert all(checks[(i, "no-persistence")]["severity"] == "warn" for i in range(3))
    assert not any(c.startswith("tls") for _, c in checks)
    assert all(tls3.keys(i, "*redlock-doctor*") == [] for i in range(3))

    # The connections stay usable across the clock probe's sleep (its verdict is not tested here).
    r = runner.run("doctor", "--nodes", nodes_arg(tls3), "--tls-ca-file", str(certs / "ca.crt"), "--clock-probe",
                   "200ms")
    assert r.stdout.count("[clock-rate]") == 3, r.stdout + r.stderr
    assert "[tls" not in r.stdout and "unreachable" not in r.stdout


def test_doctor_over_tls_reports_certificate_failures(runner, tls3, certs):
    r, doc, checks = doctor_json(runner, tls3)
    assert r.returncode == 1
    for i in range(3):
        f = checks[(i, "tls")]
        assert f["severity"] == "severe" and VERIFY_FAILED in f["message"]
        assert "--tls-ca-file" in f["fix"]
    assert checks[(None, "no-quorum")]["severity"] == "severe"

    r, doc, checks = doctor_json(runner, tls3, "--tls-ca-file", str(certs / "ca.crt"), "--tls-server-name",
                                 "wrong.example")
    assert r.returncode == 1
    for i in range(3):
        f = checks[(i, "tls")]
        assert "hostname mismatch (expected wrong.example)" in f["message"]
        assert "--tls-server-name" in f["fix"]


def test_doctor_insecure_warns(runner, tls3):
    r, doc, checks = doctor_json(runner, tls3, "--tls-insecure")
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(n["reachable"] for n in doc["nodes"])
    assert checks[(None, "tls-insecure")]["severity"] == "warn"


# ---------------------------------------------------------------------------------------------
# config file, usage errors

def test_tls_settings_from_the_config_file(runner, tls3, certs, resource, tmp_path):
    conf = tmp_path / "redlock.conf"
    conf.write_text(f"nodes = {nodes_arg(tls3)}\n"
                    f"tls_ca_file = {certs / 'ca.crt'}\n"
                    "tls_server_name = localhost\n")
    r = runner.run("run", "--config", str(conf), "-n", resource, "sh", "-c", "echo ran")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ran\n"
    r = runner.run("status", resource, env=runner.env(REDLOCK_CONFIG=conf))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "3 of 3 answered" in r.stdout
    # The command line wins over the file.
    r = runner.run("status", "--config", str(conf), "--tls-server-name", "wrong.example", resource)
    assert r.returncode == EXIT_UNAVAIL
    assert r.stdout.count("hostname mismatch (expected wrong.example)") == 3
    r, doc, _ = doctor_json(runner, tls3, "--config", str(conf))
    assert r.returncode == 0 and doc["severe"] == 0, r.stdout

    insecure = tmp_path / "insecure.conf"
    insecure.write_text(f"nodes = {nodes_arg(tls3)}\ntls_insecure = yes\n")
    r = runner.run("status", "--config", str(insecure), resource)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "3 of 3 answered" in r.stdout

    bad = tmp_path / "bad.conf"
    bad.write_text(f"nodes = {nodes_arg(tls3)}\ntls_insecure = perhaps\n")
    r = runner.run("status", "--config", str(bad), resource)
    assert r.returncode == EXIT_USAGE
    assert f"{bad}:2: tls_insecure" in r.stderr

    missing = tmp_path / "missing.conf"
    missing.write_text(f"nodes = {nodes_arg(tls3)}\n\ntls_ca_file = {tmp_path / 'nope.pem'}\n")
    for sub in ("run", "status", "doctor"):
        args = [sub, "--config", str(missing)] + ([resource, "true"] if sub == "run" else [resource] if
                                                    sub == "status" else [])
        r = runner.run(*args)
        assert r.returncode == EXIT_USAGE, (sub, r.stderr)
        assert f"{missing}:3: tls_ca_file" in r.stderr and "No such file or directory" in r.stderr


@pytest.mark.parametrize("sub", ["run", "status", "doctor"])
def test_tls_usage_errors(runner, certs, tmp_path, sub):
    tail = {"run": ["res", "true"], "status": ["res"], "doctor": []}[sub]
    tls_node = "rediss://127.0.0.1:1"

    def usage(*args):
        r = runner.run(sub, *args, *tail)
        assert r.returncode == EXIT_USAGE, (args, r.stderr)
        assert r.stdout == ""
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"redlock {sub}: "), r.stderr
        return lines[0]

    msg = usage("--nodes", tls_node, "--tls-ca-file", str(tmp_path / "nope.pem"))
    assert "--tls-ca-file" in msg and "No such file or directory" in msg
    msg = usage("--nodes", tls_node, "--tls-ca-dir", str(certs / "ca.crt"))
    assert "--tls-ca-dir" in msg and "Not a directory" in msg
    msg = usage("--nodes", tls_node, "--tls-cert", str(certs / "client.crt"))
    assert "--tls-cert and --tls-key" in msg
    msg = usage("--nodes", tls_node, "--tls-server-name", "")
    assert "--tls-server-name" in msg
    # A file that is not a CA certificate.
    msg = usage("--nodes", tls_node, "--tls-ca-file", str(certs / "ca.key"))
    assert "no certificate" in msg
    # TLS settings next to a plain TCP node: most likely a typo in its scheme.
    msg = usage("--nodes", f"{tls_node},redis://127.0.0.1:2", "--tls-ca-file", str(certs / "ca.crt"))
    assert "plain TCP" in msg and "use rediss://" in msg


# ---------------------------------------------------------------------------------------------
# mutual TLS

def test_client_certificates(runner, certs, resource):
    tls = {"cert": str(certs / "server.crt"), "key": str(certs / "server.key"), "ca": str(certs / "ca.crt"),
           "auth_clients": True,
           "client_cert": str(certs / "client.crt"), "client_key": str(certs / "client.key")}
    ca = str(certs / "ca.crt")
    client = ["--tls-cert", str(certs / "client.crt"), "--tls-key", str(certs / "client.key")]
    with nodes.Cluster(count=3, kind="mixed", tls=tls) as c:
        r = runner.run("run", "--nodes", nodes_arg(c), "--tls-ca-file", ca, *client, "-n", resource,
                       "sh", "-c", "echo ran")
        assert r.returncode == 0, r.stderr
        assert r.stdout == "ran\n"
        r = runner.run("status", "--nodes", nodes_arg(c), "--tls-ca-file", ca, *client, resource)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "3 of 3 answered" in r.stdout
        r, doc, checks = doctor_json(runner, c, "--tls-ca-file", ca, *client)
        assert r.returncode == 0 and doc["severe"] == 0, r.stdout

        # Without a client certificate the servers refuse the connection.
        r = runner.run("status", "--json", "--nodes", nodes_arg(c), "--tls-ca-file", ca, resource)
        assert r.returncode == EXIT_UNAVAIL
        for n in json.loads(r.stdout)["nodes"]:
            assert n["error"].startswith("TLS") and "client certificate" in n["error"], n["error"]
        r, doc, checks = doctor_json(runner, c, "--tls-ca-file", ca)
        assert r.returncode == 1
        assert all("--tls-cert" in checks[(i, "tls")]["fix"] for i in range(3))
