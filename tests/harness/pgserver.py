# SPDX-License-Identifier: BSD-3-Clause
"""A throwaway PostgreSQL server on loopback for the tests that fence SQL rows (docs/fencing.md,
"Protecting your store"): initdb into a temporary directory, postgres on a free 127.0.0.1 port
with its socket in that directory, trust authentication for one user, fsync off; stopped and
removed on exit. Debian's postgresql package provides the binaries (tools/install-deps installs
it). PostgreSQL refuses to run as root: as root, the directory is given to the `postgres` user
and the server runs as that user (runuser).

    with PostgresServer() as pg:
        psycopg.connect(pg.dsn)

From the command line, for tests in other languages: runs PROGRAM with REDLOCK_TEST_PG_DSN set to
the server's URL (postgres://redlock@127.0.0.1:PORT/postgres?sslmode=disable) and exits with its
status, the server stopped and removed:

    python3 tests/harness/pgserver.py exec -- PROGRAM [ARGS...]
"""
from __future__ import annotations

import glob
import os
import shutil
import sys
import signal
import socket
import subprocess
import tempfile
import time

READY_TIMEOUT = 30.0
USER = "redlock"


class PostgresError(RuntimeError):
    """The server could not be found or started."""


def bindir() -> str:
    """The newest installed PostgreSQL's bin directory (Debian keeps them versioned)."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    for d in reversed(dirs):
        if os.access(os.path.join(d, "postgres"), os.X_OK):
            return d
    raise PostgresError("no PostgreSQL server found (/usr/lib/postgresql/*/bin/postgres): "
                        "tools/install-deps installs Debian's postgresql")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self) -> None:
        self.bin = bindir()
        self.dir = tempfile.mkdtemp(prefix="redlock-pg-")
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._as = []
        if os.geteuid() == 0:
            import pwd
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            os.chmod(self.dir, 0o700)
            self._as = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        """The server as a URL, for drivers that take one (Go's pgx, node-postgres)."""
        return "postgres://%s@127.0.0.1:%d/postgres?sslmode=disable" % (USER, self.port)

    @property
    def dsn(self) -> str:
        return "host=127.0.0.1 port=%d user=%s dbname=postgres connect_timeout=5" % (self.port, USER)

    def __enter__(self) -> "PostgresServer":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        data = os.path.join(self.dir, "data")
        r = subprocess.run(self._as + [os.path.join(self.bin, "initdb"), "-D", data, "-U", USER, "-A", "trust",
                                       "-E", "UTF8", "--no-sync"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise PostgresError("initdb failed: " + r.stdout[-2000:])
        for attempt in range(5):
            self.port = _free_port()
            log = open(os.path.join(self.dir, "postgres.log"), "ab")
            self.proc = subprocess.Popen(
                self._as + [os.path.join(self.bin, "postgres"), "-D", data, "-p", str(self.port),
                            "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + self.dir,
                            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            log.close()
            deadline = time.monotonic() + READY_TIMEOUT
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                        pass
                    if self._ready():
                        return
                except OSError:
                    pass
                time.sleep(0.05)
            self._stop()
        raise PostgresError("postgres did not start: " + self.log()[-2000:])

    def _ready(self) -> bool:
        r = subprocess.run([os.path.join(self.bin, "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port),
                            "-U", USER, "-d", "postgres", "-t", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return r.returncode == 0

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "postgres.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _stop(self) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGINT)   # fast shutdown
            p.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()

    def close(self) -> None:
        self._stop()
        shutil.rmtree(self.dir, ignore_errors=True)


ENV_DSN = "REDLOCK_TEST_PG_DSN"


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "exec" or argv[1] != "--":
        print("usage: pgserver.py exec -- PROGRAM [ARGS...]  (runs PROGRAM with $%s set)" % ENV_DSN,
              file=sys.stderr)
        return 2
    try:
        with PostgresServer() as pg:
            env = dict(os.environ, **{ENV_DSN: pg.url})
            proc = subprocess.Popen(argv[2:], env=env)
            try:
                return proc.wait()
            except KeyboardInterrupt:
                proc.send_signal(signal.SIGINT)
                return proc.wait()
    except (PostgresError, OSError) as e:
        print("pgserver.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
