#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Test harness: start, stop, kill, pause and restart N local redis-server/valkey-server nodes.

Used as a Python module by pytest (`Cluster`) and as a CLI (`exec` / `ctl`) by the C, Go and Java tests.
See README.md next to this file.
"""
from __future__ import annotations

# Only light modules at import time: `ctl` is run from test loops, so its startup time matters.
# subprocess, signal, tempfile, ... are imported inside the functions that need them.
import os
import socket
import sys
import threading
import time

__all__ = ["Cluster", "Control", "ReplyError", "HarnessError"]

READY_TIMEOUT = 10.0      # seconds a node gets to answer PING after spawn
STOP_GRACE = 5.0          # seconds between SIGTERM and SIGKILL in stop()
PORT_ATTEMPTS = 5         # spawns per node when the chosen port turns out to be taken
ENV_NODES = "REDLOCK_TEST_NODES"
ENV_KINDS = "REDLOCK_TEST_NODE_KINDS"
ENV_CTL = "REDLOCK_HARNESS"
ENV_PY = "REDLOCK_HARNESS_PY"
ENV_PYTHON = "REDLOCK_HARNESS_PYTHON"
ENV_CTL_CMD = "REDLOCK_HARNESS_CTL"
ENV_KEEP = "REDLOCK_HARNESS_KEEP"
ENV_PORTS = "REDLOCK_PORTS"              # LOW-HIGH: the range node ports are drawn from


class ReplyError(Exception):
    """An error reply (-ERR ...) from a server, or from the harness control socket."""


class HarnessError(RuntimeError):
    """The harness itself failed (node did not start, bad index, ...)."""


# ---------------------------------------------------------------------------------------------
# Minimal RESP client (RESP2 plus the RESP3 types, in case a test switches with HELLO 3).

def _arg_bytes(a) -> bytes:
    if isinstance(a, bytes):
        return a
    if isinstance(a, (bytearray, memoryview)):
        return bytes(a)
    return str(a).encode("utf-8", "surrogateescape")


def encode_command(args) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = _arg_bytes(a)
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


def _dec(b: bytes) -> str:
    # surrogateescape keeps binary values round-trippable through str.
    return b.decode("utf-8", "surrogateescape")


def read_reply(f):
    """Parse one reply from a buffered binary file. Error replies are *returned* as ReplyError
    instances so that errors nested in arrays (EXEC) survive; callers raise top-level ones."""
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed by peer")
    if not line.endswith(b"\r\n"):
        raise ConnectionError("truncated reply line: %r" % line)
    t, rest = line[:1], line[1:-2]
    if t == b"+":
        return _dec(rest)
    if t == b"-":
        return ReplyError(_dec(rest))
    if t == b":" or t == b"(":
        return int(rest)
    if t in (b"$", b"=", b"!"):
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        if len(data) != n + 2:
            raise ConnectionError("connection closed in the middle of a reply")
        data = data[:-2]
        if t == b"=":
            data = data[4:]          # verbatim string: drop the "txt:" format prefix
        return ReplyError(_dec(data)) if t == b"!" else _dec(data)
    if t in (b"*", b"~", b">"):
        n = int(rest)
        if n < 0:
            return None
        return [read_reply(f) for _ in range(n)]
    if t == b"%" or t == b"|":
        n = int(rest)
        d = {}
        for _ in range(n):
            k = read_reply(f)
            d[tuple(k) if isinstance(k, list) else k] = read_reply(f)
        if t == b"|":                # attribute: metadata in front of the real reply
            return read_reply(f)
        return d
    if t == b"_":
        return None
    if t == b"#":
        return rest == b"t"
    if t == b",":
        return float(rest)
    raise ConnectionError("unknown RESP type byte %r" % t)


def _connect(addr, timeout):
    """addr: ("tcp", host, port), ("unix", path) or ("tls", host, port, ssl_context, server_name)."""
    if addr[0] == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target = addr[1]
    else:
        fam = socket.AF_INET6 if ":" in addr[1] else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        target = (addr[1], addr[2])
    s.settimeout(timeout)
    try:
        s.connect(target)
        if addr[0] == "tls":
            s = addr[3].wrap_socket(s, server_hostname=addr[4])
    except BaseException:
        s.close()
        raise
    return s


def resp_call(addr, args, timeout=2.0):
    """One command on a fresh connection. A fresh connection per call is deliberate: after a
    timeout (paused node) a reused connection would hold a stale reply."""
    s = _connect(addr, timeout)
    try:
        s.sendall(encode_command(args))
        with s.makefile("rb") as f:
            r = read_reply(f)
    except socket.timeout:
        raise TimeoutError("no reply within %.3gs from %s" % (timeout, _addr_str(addr))) from None
    finally:
        s.close()
    if isinstance(r, ReplyError):
        raise r
    return r


def _addr_str(addr):
    if addr[0] == "unix":
        return "unix://" + addr[1]
    h = addr[1]
    return "%s://%s:%d" % ("rediss" if addr[0] == "tls" else "redis", "[%s]" % h if ":" in h else h, addr[2])


# ---------------------------------------------------------------------------------------------
# Process spawning. PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the
# process, so servers are always forked from the main thread or from one long-lived spawner thread.

_PR_SET_PDEATHSIG = 1
_prctl = None
_prctl_loaded = False
_spawner = None


def _load_prctl():
    global _prctl, _prctl_loaded
    if not _prctl_loaded:
        _prctl_loaded = True
        if sys.platform.startswith("linux"):
            try:
                import ctypes
                _prctl = ctypes.CDLL(None, use_errno=True).prctl
            except (OSError, AttributeError):
                _prctl = None
    return _prctl


def _make_preexec(deathsig, new_group):
    prctl = _load_prctl()
    parent = os.getpid()

    def preexec():
        if new_group:
            os.setpgid(0, 0)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, deathsig, 0, 0, 0)
            if os.getppid() != parent:  # parent died before prctl took effect
                os._exit(1)
    return preexec


def _popen(argv, deathsig, new_group, **kw):
    import subprocess
    kw["preexec_fn"] = _make_preexec(deathsig, new_group)
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(argv, **kw)
    return _get_spawner().run(lambda: subprocess.Popen(argv, **kw))


class _Spawner:
    def __init__(self):
        import queue
        self.q = queue.SimpleQueue()
        self.t = threading.Thread(target=self._loop, name="nodes-spawner", daemon=True)
        self.t.start()

    def _loop(self):
        while True:
            fn, box, ev = self.q.get()
            try:
                box.append((True, fn()))
            except BaseException as e:  # handed back to the caller's thread
                box.append((False, e))
            ev.set()

    def run(self, fn):
        box, ev = [], threading.Event()
        self.q.put((fn, box, ev))
        ev.wait()
        ok, v = box[0]
        if not ok:
            raise v
        return v


def _get_spawner():
    global _spawner
    with _glock:
        if _spawner is None:
            _spawner = _Spawner()
    return _spawner


_glock = threading.RLock()


# ---------------------------------------------------------------------------------------------
# Port allocation. Ports are drawn below the kernel's ephemeral range so outgoing client sockets
# can never occupy a node's port while it is down between kill() and restart(). Concurrent
# harness processes (ctest -j) coordinate through byte-range locks on one shared file; the kernel
# drops a process's locks when it dies, so nothing goes stale.

_port_fd = None
_ports_held = set()


def parse_port_range(text, name=None):
    """"LOW-HIGH" -> (LOW, HIGH), both in 1..65535 with LOW <= HIGH; ValueError saying what is
    wrong otherwise. name: how the value is introduced in the message (default $REDLOCK_PORTS)."""
    name = name or ENV_PORTS
    lo, sep, hi = str(text).strip().partition("-")
    lo, hi = lo.strip(), hi.strip()
    if not sep or not lo.isdigit() or not hi.isdigit() or len(lo) > 5 or len(hi) > 5:
        raise ValueError("%s=%r: expected LOW-HIGH, two port numbers such as 17000-17100"
                         % (name, str(text)))
    lo, hi = int(lo), int(hi)
    if not (1 <= lo <= 65535 and 1 <= hi <= 65535):
        raise ValueError("%s=%r: ports go from 1 to 65535" % (name, str(text)))
    if lo > hi:
        raise ValueError("%s=%r: LOW is above HIGH" % (name, str(text)))
    return lo, hi


def _port_range():
    """$REDLOCK_PORTS (LOW-HIGH) if set; else the larger stretch of ports outside the kernel's
    ephemeral range."""
    env = os.environ.get(ENV_PORTS, "").strip()
    if env:
        try:
            return parse_port_range(env)
        except ValueError as e:
            raise HarnessError(str(e)) from None
    lo, hi = 32768, 60999
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        pass
    below = (10000, lo - 1)
    above = (hi + 1, 65535)
    best = max(below, above, key=lambda r: r[1] - r[0])
    return best if best[1] - best[0] >= 1000 else (20000, 65000)


def _port_lock_fd():
    global _port_fd
    if _port_fd is None:
        import tempfile
        d = os.path.join(tempfile.gettempdir(), "redlock-harness-%d" % os.getuid())
        os.makedirs(d, mode=0o700, exist_ok=True)
        _port_fd = os.open(os.path.join(d, "ports.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    return _port_fd


def _bindable(port, hosts):
    for h in hosts:
        s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET, socket.SOCK_STREAM)
        try:
            # Same options the servers use, so TIME_WAIT leftovers do not count as taken.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((h, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def _alloc_port(hosts):
    import fcntl
    import random
    lo, hi = _port_range()
    fd = _port_lock_fd()
    # A small range (REDLOCK_PORTS) is tried port by port, so that its last free port is found.
    tries = random.sample(range(lo, hi + 1), hi - lo + 1) if hi - lo < 500 else \
        (random.randint(lo, hi) for _ in range(500))
    with _glock:
        for p in tries:
            if p in _ports_held:
                continue
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, p)
            except OSError:
                continue
            if _bindable(p, hosts):
                _ports_held.add(p)
                return p
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, p)
    raise HarnessError("could not find a TCP port in %d-%d%s free on %s" % (
        lo, hi, " ($%s)" % ENV_PORTS if os.environ.get(ENV_PORTS, "").strip() else "", " and ".join(hosts)))


def _free_port(p):
    import fcntl
    with _glock:
        if p in _ports_held:
            _ports_held.discard(p)
            fcntl.lockf(_port_lock_fd(), fcntl.LOCK_UN, 1, p)


# ---------------------------------------------------------------------------------------------
# Cleanup of every live Cluster at interpreter exit and on SIGTERM.

_live = set()
_hooks_installed = False


def _cleanup_all():
    for c in list(_live):
        try:
            c.close()
        except Exception:
            pass


def _on_sigterm(signum, frame):
    import signal
    _cleanup_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)     # die of the same signal so the parent sees it


def _install_hooks():
    global _hooks_installed
    with _glock:
        if _hooks_installed:
            return
        _hooks_installed = True
    import atexit
    import signal
    atexit.register(_cleanup_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            # Never override a handler the test program set up itself.
            if signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, _on_sigterm)


def _find_binary(kind):
    import shutil
    env = "REDIS_SERVER" if kind == "redis" else "VALKEY_SERVER"
    path = os.environ.get(env) or shutil.which(kind + "-server")
    if not path:
        raise HarnessError("%s-server not found in PATH (or set $%s)" % (kind, env))
    return path


def _tail(path, start=0, lines=20):
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
    except OSError:
        return ""
    return "\n".join(_dec(data).splitlines()[-lines:])


def _conf_value(v):
    if v is True:
        return ["yes"]
    if v is False:
        return ["no"]
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v]
    return [str(v)]


# ---------------------------------------------------------------------------------------------

class _Node:

    def __init__(self, index, kind, binary, dirpath):
        self.index = index
        self.kind = kind
        self.binary = binary
        self.dir = dirpath
        self.port = 0
        self.sock_path = None
        self.proc = None
        self.paused = False
        self.log = os.path.join(dirpath, "server.log")
        self.out = os.path.join(dirpath, "stdout.log")
        self.lock = threading.RLock()
        # log offsets at the latest spawn, so error messages show only this run's lines
        self.log_mark = 0
        self.out_mark = 0


class Cluster:
    """N local redis/valkey nodes. Use as a context manager: nodes are started on entry and always
    killed and cleaned up on exit (also at interpreter exit and on SIGTERM)."""

    def __init__(self, count=3, kind="redis", unix=False, persistence=None, conf=None,
                 base_dir=None, ipv6=False, tls=None, env=None, clockshift=None):
        """tls: None, or a dict that makes every node listen only on a TLS port (--port 0
        --tls-port P) with urls rediss://HOST:P. Keys: "cert", "key", "ca" (PEM paths, required),
        "auth_clients" (False, True or "optional"; default False), "client_cert" and "client_key"
        (what the harness's own connections present, needed once clients must authenticate),
        "host" (in the URLs and sent as SNI; default 127.0.0.1).
        env: variables added to the servers' environment: one dict for every node, or a list
        of one dict (or None) per node. None (the default): the servers inherit ours unchanged.
        clockshift: None, or the path of the clock-step shim (tests/safety/clockshift.c,
        libclockshift.so): every node then runs under it (LD_PRELOAD) with its own offset file,
        starting at 0, and step_clock(i, ms) / set_clock_offset(i, ms) move that node's wall
        clock (CLOCK_REALTIME, gettimeofday, time; never CLOCK_MONOTONIC). The offset is the
        node's, not its process's: it survives restart(i), as a machine's clock would."""
        import tempfile
        if count < 1:
            raise ValueError("count must be >= 1")
        if kind not in ("redis", "valkey", "mixed"):
            raise ValueError("kind must be 'redis', 'valkey' or 'mixed'")
        if persistence not in (None, "aof-always"):
            raise ValueError("persistence must be None or 'aof-always'")
        if unix and ipv6:
            raise ValueError("unix and ipv6 are mutually exclusive")
        if tls is not None:
            if unix:
                raise ValueError("tls and unix are mutually exclusive")
            missing = [k for k in ("cert", "key", "ca") if not tls.get(k)]
            if missing:
                raise ValueError("tls needs %s" % ", ".join(repr(k) for k in missing))
            if tls.get("auth_clients", False) not in (False, True, "optional"):
                raise ValueError("tls auth_clients must be False, True or 'optional'")
            tls = dict(tls)
        self.tls = tls
        self._ssl_ctx = None
        self.count = count
        self.unix = unix
        self.ipv6 = ipv6
        self.persistence = persistence
        self.conf = dict(conf or {})
        if env is None or isinstance(env, dict):
            self._env = [dict(env or {}) for _ in range(count)]
        else:
            env = list(env)
            if len(env) != count:
                raise ValueError("env: one dict (or None) per node, %d given for %d nodes" % (len(env), count))
            self._env = [dict(e or {}) for e in env]
        self.clockshift = os.path.abspath(clockshift) if clockshift else None
        if self.clockshift and not os.path.isfile(self.clockshift):
            raise HarnessError("clockshift: %s is not a file (build tests/safety: libclockshift.so)"
                               % self.clockshift)
        kinds = [kind if kind != "mixed" else ("redis" if i % 2 == 0 else "valkey") for i in range(count)]
        binaries = {k: _find_binary(k) for k in set(kinds)}
        self._own_dir = base_dir is None
        self.base_dir = os.path.abspath(base_dir) if base_dir else tempfile.mkdtemp(prefix="redlock-nodes-")
        self._hosts = ["127.0.0.1", "::1"] if ipv6 else ["127.0.0.1"]
        self._closed = False
        self._started = False
        self._nodes = []
        for i, k in enumerate(kinds):
            d = os.path.join(self.base_dir, "node%d" % i)
            n = _Node(i, k, binaries[k], d)
            if unix:
                n.sock_path = os.path.join(d, "redis.sock")
                if len(n.sock_path.encode()) > 100:   # sun_path is 108 bytes including NUL
                    if self._own_dir:
                        os.rmdir(self.base_dir)
                    raise HarnessError("unix socket path too long (%d bytes): %s; use a shorter base_dir"
                                       % (len(n.sock_path.encode()), n.sock_path))
            self._nodes.append(n)
        for n in self._nodes:
            os.makedirs(n.dir, exist_ok=True)
            if self.clockshift:
                self._write_offset(n, 0)

    # -- context manager -----------------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<Cluster %s>" % (", ".join("%s %s" % (n.kind, self._url(n)) for n in self._nodes))

    # -- addresses ------------------------------------------------------------------------------
    def _url(self, n):
        if n.sock_path:
            return "unix://" + n.sock_path
        if self.tls is not None:
            host = self.tls.get("host") or ("::1" if self.ipv6 else "127.0.0.1")
            return "rediss://%s:%d" % ("[%s]" % host if ":" in host else host, n.port)
        host = "[::1]" if self.ipv6 else "127.0.0.1"
        return "redis://%s:%d" % (host, n.port)

    def _addr(self, n):
        if n.sock_path:
            return ("unix", n.sock_path)
        ip = "::1" if self.ipv6 else "127.0.0.1"
        if self.tls is not None:
            return ("tls", ip, n.port, self._tls_context(), self.tls.get("host") or ip)
        return ("tcp", ip, n.port)

    def _tls_context(self):
        """The harness's own client side of TLS. It does not verify the servers: it started them
        itself, and a test may give them a bad certificate on purpose (expired, wrong name) and
        must still reach them to put the good one back. It presents the client certificate, if
        any, so that it keeps working when a test turns tls-auth-clients on."""
        if self._ssl_ctx is None:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            if self.tls.get("client_cert"):
                ctx.load_cert_chain(self.tls["client_cert"], self.tls.get("client_key"))
            self._ssl_ctx = ctx
        return self._ssl_ctx

    def _n(self, i) -> _Node:
        if not isinstance(i, int) or not 0 <= i < self.count:
            raise HarnessError("node index %r out of range 0..%d" % (i, self.count - 1))
        return self._nodes[i]

    def _need_started(self):
        if not self._started:
            raise HarnessError("cluster not started yet (ports are assigned by start())")

    @property
    def urls(self):
        self._need_started()
        return [self._url(n) for n in self._nodes]

    def url(self, i):
        self._need_started()
        return self._url(self._n(i))

    def port(self, i):
        """TCP port of node i (0 for unix-socket clusters)."""
        self._need_started()
        return self._n(i).port

    def socket_path(self, i):
        return self._n(i).sock_path

    def pid(self, i):
        """PID of node i, or None if it is not running."""
        n = self._n(i)
        with n.lock:
            return n.proc.pid if self._alive(n) else None

    def kind(self, i):
        return self._n(i).kind

    def node_dir(self, i):
        return self._n(i).dir

    def log_path(self, i):
        return self._n(i).log

    @property
    def kinds(self):
        return [n.kind for n in self._nodes]

    def __len__(self):
        return self.count

    # -- process control ------------------------------------------------------------------------
    def _argv(self, n):
        opts = {
            "port": str(n.port),
            # "-" = optional address: redis skips it instead of failing if ::1 is unavailable.
            "bind": ["127.0.0.1", "-::1"] if self.ipv6 else ["127.0.0.1"],
            "dir": n.dir,
            "save": "",
            "appendonly": "no",
            "daemonize": "no",
            "enable-debug-command": "local",
            "loglevel": "warning",
            "logfile": n.log,
            "maxmemory-policy": "noeviction",
        }
        if n.sock_path:
            opts["port"] = "0"
            opts["unixsocket"] = n.sock_path
            opts["unixsocketperm"] = "700"
        if self.tls is not None:
            auth = self.tls.get("auth_clients", False)
            opts["port"] = "0"
            opts["tls-port"] = str(n.port)
            opts["tls-cert-file"] = self.tls["cert"]
            opts["tls-key-file"] = self.tls["key"]
            opts["tls-ca-cert-file"] = self.tls["ca"]
            opts["tls-auth-clients"] = auth if auth == "optional" else ("yes" if auth else "no")
        if self.persistence == "aof-always":
            opts["appendonly"] = "yes"
            opts["appendfsync"] = "always"
        for k, v in self.conf.items():
            opts[str(k).lstrip("-")] = v
        argv = [n.binary]
        for k, v in opts.items():
            if v is None:
                continue
            argv.append("--" + k)
            argv.extend(_conf_value(v))
        return argv

    def _spawn(self, n):
        import signal
        import subprocess
        for p in (n.log, n.out):
            try:
                size = os.path.getsize(p)
            except OSError:
                size = 0
            if p == n.log:
                n.log_mark = size
            else:
                n.out_mark = size
        kw = {}
        env = self._node_env(n)
        if env is not None:
            kw["env"] = env
        with open(n.out, "ab") as out:
            # Own process group: a terminal Ctrl-C must not kill nodes behind the harness's back.
            n.proc = _popen(self._argv(n), signal.SIGKILL, True, cwd=n.dir, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=subprocess.STDOUT, close_fds=True, **kw)
        n.paused = False

    def _node_env(self, n):
        """The environment of node n's server, or None to inherit ours unchanged."""
        extra = self._env[n.index]
        if not extra and not self.clockshift:
            return None
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in extra.items()})
        if self.clockshift:
            pre = env.get("LD_PRELOAD", "").strip()
            env["LD_PRELOAD"] = self.clockshift + (" " + pre if pre else "")
            env["REDLOCK_CLOCKSHIFT_FILE"] = self._offset_path(n)
        return env

    # -- wall clock (clockshift) ----------------------------------------------------------------
    def _offset_path(self, n):
        return os.path.join(n.dir, "clockshift")

    def _write_offset(self, n, ms):
        # A new file renamed over the old one: the shim never reads half a number.
        p = self._offset_path(n)
        with open(p + ".tmp", "w") as f:
            f.write("%d\n" % int(ms))
        os.replace(p + ".tmp", p)

    def _need_clockshift(self):
        if not self.clockshift:
            raise HarnessError("the nodes do not run under the clock shim: Cluster(clockshift=PATH)")

    def clock_offset(self, i):
        """Node i's wall-clock offset in ms (0 unless stepped)."""
        self._need_clockshift()
        n = self._n(i)
        with n.lock:
            try:
                with open(self._offset_path(n)) as f:
                    return int(f.read().strip() or 0)
            except FileNotFoundError:
                return 0

    def set_clock_offset(self, i, ms):
        """Set node i's wall clock to the real one + ms; the server sees it within a few ms
        (the shim re-reads its file at most every 2 ms, on its next clock reading)."""
        self._need_clockshift()
        n = self._n(i)
        with n.lock:
            self._write_offset(n, ms)

    def step_clock(self, i, ms):
        """Step node i's wall clock by ms (forward if positive); returns its new offset."""
        self._need_clockshift()
        n = self._n(i)
        with n.lock:
            off = self.clock_offset(i) + int(ms)
            self._write_offset(n, off)
            return off

    def _alive(self, n):
        return n.proc is not None and n.proc.poll() is None

    def _probe(self, n):
        """True once node n answers PING and is really our process (not a stranger on our port)."""
        try:
            r = resp_call(self._addr(n), ["PING"], timeout=0.5)
            if r != "PONG":
                return False
            info = resp_call(self._addr(n), ["INFO", "server"], timeout=1.0)
        except (OSError, ReplyError):     # refused / LOADING / not listening yet
            return False
        for line in info.splitlines():
            if line.startswith("process_id:"):
                return int(line.split(":", 1)[1]) == n.proc.pid
        return False

    def _port_in_use(self, n):
        t = (_tail(n.log, n.log_mark, 50) + "\n" + _tail(n.out, n.out_mark, 50)).lower()
        return "in use" in t or "could not create server tcp listening socket" in t

    def _failure(self, n, why):
        msg = "%s node %d (%s, %s) %s." % (n.kind, n.index, self._url(n), n.binary, why)
        for label, path, mark in (("server log", n.log, n.log_mark), ("stdout/stderr", n.out, n.out_mark)):
            t = _tail(path, mark).strip()
            if t:
                msg += "\n--- %s (tail) ---\n%s" % (label, t)
        return msg

    def _start_nodes(self, nodes, fresh_ports):
        """Spawn `nodes` in parallel and wait until all answer. fresh_ports: the ports were chosen
        just now, so a node that loses a port race may move to another port."""
        attempts = {}
        pending = []
        for n in nodes:
            self._spawn(n)
            attempts[n.index] = 1
            pending.append(n)
        failures = []
        deadline = time.monotonic() + READY_TIMEOUT
        while pending:
            still = []
            for n in pending:
                rc = n.proc.poll()
                if rc is not None:
                    if (fresh_ports and not n.sock_path and attempts[n.index] < PORT_ATTEMPTS
                            and self._port_in_use(n)):
                        _free_port(n.port)
                        n.port = _alloc_port(self._hosts)
                        attempts[n.index] += 1
                        self._spawn(n)
                        still.append(n)
                    else:
                        failures.append(self._failure(n, "exited with status %d during startup" % rc))
                elif self._probe(n):
                    continue
                else:
                    still.append(n)
            pending = still
            if pending and time.monotonic() > deadline:
                for n in pending:
                    self._kill_proc(n)
                    failures.append(self._failure(n, "did not answer PING within %gs" % READY_TIMEOUT))
                break
            if pending:
                time.sleep(0.003)
        if failures:
            raise HarnessError("\n\n".join(failures))

    def start(self):
        """Start every node that is not running (first call assigns ports)."""
        if self._closed:
            raise HarnessError("cluster is closed")
        _install_hooks()
        _live.add(self)
        fresh = not self._started
        if fresh and not self.unix:
            for n in self._nodes:
                if not n.port:
                    n.port = _alloc_port(self._hosts)
        self._started = True
        todo = [n for n in self._nodes if not self._alive(n)]
        for n in todo:
            n.lock.acquire()
        try:
            self._start_nodes(todo, fresh)
        finally:
            for n in todo:
                n.lock.release()
        return self

    def _kill_proc(self, n):
        import signal
        if n.proc is None:
            return
        if n.proc.poll() is None:
            try:
                n.proc.send_signal(signal.SIGKILL)   # works on stopped processes too
            except ProcessLookupError:
                pass
        n.proc.wait()
        n.paused = False

    def stop(self, grace=STOP_GRACE):
        """Stop all nodes: SIGCONT + SIGTERM to all at once, SIGKILL whoever outlives `grace`."""
        import signal
        import subprocess
        live = [n for n in self._nodes if self._alive(n)]
        for n in live:
            try:
                n.proc.send_signal(signal.SIGCONT)
                n.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for n in live:
            try:
                n.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._kill_proc(n)
            n.paused = False

    def close(self):
        """Kill everything, release ports, remove the temp dir (kept if $REDLOCK_HARNESS_KEEP=1)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.stop()
        finally:
            for n in self._nodes:
                self._kill_proc(n)
                if n.port:
                    _free_port(n.port)
            _live.discard(self)
            if self._own_dir:
                if os.environ.get(ENV_KEEP, "") not in ("", "0"):
                    sys.stderr.write("nodes.py: keeping node dirs in %s\n" % self.base_dir)
                else:
                    import shutil
                    shutil.rmtree(self.base_dir, ignore_errors=True)

    def kill(self, i):
        """SIGKILL node i and reap it."""
        n = self._n(i)
        with n.lock:
            self._kill_proc(n)

    def stop_node(self, i, grace=STOP_GRACE):
        """Graceful shutdown of node i (SIGTERM; SIGKILL after grace)."""
        import signal
        import subprocess
        n = self._n(i)
        with n.lock:
            if not self._alive(n):
                return
            n.proc.send_signal(signal.SIGCONT)
            n.proc.send_signal(signal.SIGTERM)
            try:
                n.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._kill_proc(n)
            n.paused = False

    def start_node(self, i):
        """Start node i again (same port/socket/dir) if it is not running."""
        self._need_started()
        n = self._n(i)
        with n.lock:
            if not self._alive(n):
                self._start_nodes([n], False)

    def restart(self, i, delay=0.0):
        """Kill node i if running, wait `delay` seconds, start it on the same port/socket and dir."""
        self._need_started()
        n = self._n(i)
        with n.lock:
            self._kill_proc(n)
        if delay > 0:
            time.sleep(delay)     # outside the lock: others may query the node while it is down
        self.start_node(i)

    def pause(self, i):
        """SIGSTOP node i: it keeps its sockets but answers nothing (connections still succeed)."""
        import signal
        n = self._n(i)
        with n.lock:
            if not self._alive(n):
                raise HarnessError("node %d is not running" % i)
            n.proc.send_signal(signal.SIGSTOP)
            n.paused = True

    def resume(self, i):
        import signal
        n = self._n(i)
        with n.lock:
            if self._alive(n):
                n.proc.send_signal(signal.SIGCONT)
            n.paused = False

    def is_running(self, i):
        """True if node i's process is alive (paused counts as running)."""
        n = self._n(i)
        with n.lock:
            return self._alive(n)

    def is_paused(self, i):
        n = self._n(i)
        with n.lock:
            return self._alive(n) and n.paused

    # -- talking to nodes -----------------------------------------------------------------------
    def cmd(self, i, *args, timeout=2.0):
        """Send one command to node i; returns str/int/list/None, raises ReplyError on -ERR,
        TimeoutError if no reply (paused node), ConnectionRefusedError if it is down."""
        self._need_started()
        return resp_call(self._addr(self._n(i)), args, timeout=timeout)

    # The keys the library keeps on a node for as long as the node has its data: the
    # quarantine's marker and quarantine key (c/src/epoch.c).
    EPOCH_KEYS = "*{redlock:epoch}*"

    def dbsize(self, i):
        """Keys on node i, the library's marker keys (EPOCH_KEYS) aside."""
        return self.cmd(i, "DBSIZE") - len(self.cmd(i, "KEYS", self.EPOCH_KEYS))

    def keys(self, i, pattern="*"):
        return self.cmd(i, "KEYS", pattern)

    def flushall(self):
        for i in range(self.count):
            if self.is_running(i) and not self.is_paused(i):
                self.cmd(i, "FLUSHALL")


# ---------------------------------------------------------------------------------------------
# Control socket: `exec` serves RESP on a unix socket, so `ctl` (or any Redis client in the test
# program) can drive the cluster. The serving process owns the Popen objects, so it can reap and
# restart nodes itself.

def _encode_value(v) -> bytes:
    if v is None:
        return b"$-1\r\n"
    if isinstance(v, ReplyError):
        msg = " ".join(str(v).splitlines()) or "ERR"
        return b"-%s\r\n" % _arg_bytes(msg)
    if isinstance(v, bool):
        return b":%d\r\n" % int(v)
    if isinstance(v, int):
        return b":%d\r\n" % v
    if isinstance(v, dict):
        flat = []
        for k, x in v.items():
            flat.extend([list(k) if isinstance(k, tuple) else k, x])
        v = flat
    if isinstance(v, (list, tuple)):
        return b"*%d\r\n" % len(v) + b"".join(_encode_value(x) for x in v)
    b = _arg_bytes(v)
    return b"$%d\r\n%s\r\n" % (len(b), b)


_CTL_HELP = ("commands: PING | NODES | COUNT | URL i | PID i | KIND i | RUNNING i | KILL i | "
             "PAUSE i | RESUME i | STOP i | START i | RESTART i [delay] | CMD i [TIMEOUT s] arg...")


def _ctl_dispatch(cluster: Cluster, args):
    if not args:
        raise ReplyError("ERR empty command")
    op = args[0].upper()
    if op == "PING":
        return "PONG"
    if op == "NODES":
        return cluster.urls
    if op == "COUNT":
        return cluster.count
    if op == "HELP":
        return _CTL_HELP
    if len(args) < 2:
        raise ReplyError("ERR unknown command or missing node index; " + _CTL_HELP)
    try:
        i = int(args[1])
    except ValueError:
        raise ReplyError("ERR node index must be an integer, got %r" % args[1]) from None
    if not 0 <= i < cluster.count:
        raise ReplyError("ERR node index %d out of range 0..%d" % (i, cluster.count - 1))
    rest = args[2:]
    if op == "URL":
        return cluster.url(i)
    if op == "KIND":
        return cluster.kind(i)
    if op == "PID":
        pid = cluster.pid(i)
        if pid is None:
            raise ReplyError("ERR node %d is not running" % i)
        return pid
    if op == "RUNNING":
        return int(cluster.is_running(i))
    if op == "KILL":
        cluster.kill(i)
    elif op == "PAUSE":
        cluster.pause(i)
    elif op == "RESUME":
        cluster.resume(i)
    elif op == "STOP":
        cluster.stop_node(i)
    elif op == "START":
        cluster.start_node(i)
    elif op == "RESTART":
        cluster.restart(i, float(rest[0]) if rest else 0.0)
    elif op == "CMD":
        timeout = 2.0
        if len(rest) >= 2 and rest[0].upper() == "TIMEOUT":
            timeout, rest = float(rest[1]), rest[2:]
        if not rest:
            raise ReplyError("ERR CMD needs a command")
        try:
            return cluster.cmd(i, *rest, timeout=timeout)
        except ReplyError:
            raise
        except TimeoutError as e:
            raise ReplyError("TIMEOUT node %d: %s" % (i, e)) from None
        except OSError as e:
            raise ReplyError("CONNFAIL node %d: %s" % (i, e)) from None
    else:
        raise ReplyError("ERR unknown command %r; %s" % (args[0], _CTL_HELP))
    return "OK"


def _serve_control(cluster: Cluster, path):
    """Serve the control protocol on unix socket `path` from daemon threads. Returns the server."""
    import socketserver

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            while True:
                try:
                    if self.rfile.peek(1)[:1] in (b"*", b""):
                        req = read_reply(self.rfile)
                    else:       # inline command, as typed into `nc -U`
                        line = self.rfile.readline()
                        req = _dec(line).split() if line.endswith(b"\n") else None
                except (ConnectionError, ValueError):
                    return
                if not isinstance(req, list):
                    return
                args = [x if isinstance(x, str) else str(x) for x in req]
                if not args:
                    continue
                try:
                    out = _encode_value(_ctl_dispatch(cluster, args))
                except ReplyError as e:
                    out = _encode_value(e)
                except (HarnessError, ValueError, OSError) as e:
                    out = _encode_value(ReplyError("ERR " + str(e)))
                try:
                    self.wfile.write(out)
                    self.wfile.flush()
                except OSError:
                    return

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    srv = Server(path, Handler)
    os.chmod(path, 0o700)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02},
                     name="nodes-control", daemon=True).start()
    return srv


class Control:
    """Client for the control socket of a running `nodes.py exec` (path from $REDLOCK_HARNESS)."""

    def __init__(self, path=None):
        self.path = path or os.environ.get(ENV_CTL)
        if not self.path:
            raise HarnessError("$%s is not set: run under `nodes.py exec`" % ENV_CTL)

    def call(self, *args, timeout=None):
        return resp_call(("unix", self.path), args, timeout=timeout)

    def urls(self):
        return self.call("NODES")

    def url(self, i):
        return self.call("URL", i)

    def pid(self, i):
        return self.call("PID", i)

    def kind(self, i):
        return self.call("KIND", i)

    def is_running(self, i):
        return self.call("RUNNING", i) == 1

    def kill(self, i):
        self.call("KILL", i)

    def pause(self, i):
        self.call("PAUSE", i)

    def resume(self, i):
        self.call("RESUME", i)

    def stop_node(self, i):
        self.call("STOP", i)

    def start_node(self, i):
        self.call("START", i)

    def restart(self, i, delay=0.0):
        self.call("RESTART", i, delay)

    def cmd(self, i, *args, timeout=2.0):
        return self.call("CMD", i, "TIMEOUT", timeout, *args)


# ---------------------------------------------------------------------------------------------
# CLI

USAGE = """\
usage:
  nodes.py exec [--count N] [--kind redis|valkey|mixed] [--unix] [--ipv6]
                [--persistence aof-always] [--conf KEY=VALUE ...] [--base-dir DIR] [--keep] [-v]
                [--tls-dir DIR [--tls-auth-clients no|yes|optional] [--tls-host HOST]]
                [--ports LOW-HIGH] -- PROGRAM [ARGS...]
  nodes.py ctl kill I | pause I | resume I | stop I | start I | restart I [--delay S]
               | cmd [--timeout S] I ARGS... | url I | pid I | kind I | running I | urls
  nodes.py up [--count 5] [--kind mixed] [--cluster [N]] [--ports LOW-HIGH] [--state-dir DIR]
  nodes.py down [--state-dir DIR]
  nodes.py env [--state-dir DIR]
  nodes.py ports
"""


def _usage(msg=None):
    if msg:
        sys.stderr.write("nodes.py: %s\n" % msg)
    sys.stderr.write(USAGE)
    return 2


def _print_reply(r):
    if isinstance(r, list):
        for x in r:
            _print_reply(x)
    elif r is None:
        print("(nil)")
    elif isinstance(r, ReplyError):
        print("(error) %s" % r)
    else:
        print(r)


def _main_ctl(argv):
    if not argv or argv[0] in ("-h", "--help"):
        return _usage()
    op, rest = argv[0].lower(), argv[1:]
    args = None
    if op in ("kill", "pause", "resume", "stop", "start", "url", "pid", "kind", "running"):
        if len(rest) != 1:
            return _usage("ctl %s takes exactly one node index" % op)
        args = [op, rest[0]]
    elif op == "restart":
        delay = "0"
        if len(rest) == 3 and rest[1] == "--delay":
            delay = rest[2]
        elif len(rest) == 3 and rest[0] == "--delay":
            delay, rest = rest[1], rest[2:]
        elif len(rest) != 1:
            return _usage("ctl restart I [--delay S]")
        try:
            float(delay)
        except ValueError:
            return _usage("bad delay %r" % delay)
        args = ["restart", rest[0], delay]
    elif op == "cmd":
        timeout = "2"
        if rest[:1] == ["--timeout"] and len(rest) >= 2:
            timeout, rest = rest[1], rest[2:]
        if len(rest) < 2:
            return _usage("ctl cmd [--timeout S] I COMMAND [ARGS...]")
        args = ["cmd", rest[0], "TIMEOUT", timeout] + rest[1:]
    elif op in ("urls", "nodes"):
        args = ["nodes"]
    elif op == "ping":
        args = ["ping"]
    else:
        return _usage("unknown ctl command %r" % op)
    if args[1:2] and not args[1].lstrip("-").isdigit():
        return _usage("node index must be an integer, got %r" % args[1])
    try:
        ctl = Control()
        r = ctl.call(*args)
    except ReplyError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    except (HarnessError, OSError) as e:
        sys.stderr.write("nodes.py ctl: %s\n" % e)
        return 1
    _print_reply(r)
    return 0


def _main_exec(argv):
    import argparse
    import shlex
    import shutil
    import signal
    import subprocess
    import tempfile

    if "--" in argv:
        k = argv.index("--")
        opts, prog = argv[:k], argv[k + 1:]
    else:
        opts, prog = argv, []
    p = argparse.ArgumentParser(prog="nodes.py exec", usage=USAGE.split("\n", 1)[1].strip())
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--kind", choices=("redis", "valkey", "mixed"), default="redis")
    p.add_argument("--unix", action="store_true")
    p.add_argument("--ipv6", action="store_true")
    p.add_argument("--persistence", choices=("aof-always",), default=None)
    p.add_argument("--conf", action="extend", nargs="+", default=[], metavar="KEY=VALUE")
    p.add_argument("--base-dir", default=None)
    p.add_argument("--keep", action="store_true", help="keep node dirs/logs")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--tls-dir", default=None,
                   help="TLS only: DIR/server.crt, server.key, ca.crt (and client.crt/.key if present)")
    p.add_argument("--tls-auth-clients", choices=("no", "yes", "optional"), default="no")
    p.add_argument("--tls-host", default=None, help="host in the rediss:// URLs (default 127.0.0.1)")
    p.add_argument("--ports", default=None, metavar="LOW-HIGH",
                   help="draw the nodes' ports from this range (default: $REDLOCK_PORTS, if set)")
    try:
        a = p.parse_args(opts)
    except SystemExit as e:
        return 2 if e.code else 0
    if not prog:
        return _usage("exec needs -- PROGRAM [ARGS...]")
    err = _ports_option(a.ports, a.count, "exec")
    if err:
        return err
    conf = {}
    for kv in a.conf:
        if "=" not in kv:
            return _usage("--conf expects KEY=VALUE, got %r" % kv)
        k, v = kv.split("=", 1)
        conf[k] = v
    if a.keep:
        os.environ[ENV_KEEP] = "1"
    tls = None
    if a.tls_dir:
        d = os.path.abspath(a.tls_dir)
        tls = {"cert": os.path.join(d, "server.crt"), "key": os.path.join(d, "server.key"),
               "ca": os.path.join(d, "ca.crt"),
               "auth_clients": {"no": False, "yes": True}.get(a.tls_auth_clients, "optional")}
        if os.path.exists(os.path.join(d, "client.crt")):
            tls["client_cert"] = os.path.join(d, "client.crt")
            tls["client_key"] = os.path.join(d, "client.key")
        if a.tls_host:
            tls["host"] = a.tls_host
    elif a.tls_host or a.tls_auth_clients != "no":
        return _usage("--tls-host and --tls-auth-clients need --tls-dir")

    ctl_dir = tempfile.mkdtemp(prefix="redlock-ctl-")
    ctl_path = os.path.join(ctl_dir, "ctl.sock")
    cluster = srv = None
    child = None
    fwd = {}

    def forward(signum, frame):
        fwd["sig"] = signum
        if child is not None and child.poll() is None:
            try:
                child.send_signal(signum)
            except ProcessLookupError:
                pass

    def on_int(signum, frame):
        # A terminal Ctrl-C already reached PROGRAM (same foreground process group); forward only
        # when the SIGINT was aimed at the harness alone.
        try:
            if os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp():
                return
        except OSError:
            pass
        forward(signum, frame)

    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)
    signal.signal(signal.SIGINT, on_int)
    try:
        try:
            cluster = Cluster(count=a.count, kind=a.kind, unix=a.unix, persistence=a.persistence,
                              conf=conf, base_dir=a.base_dir, ipv6=a.ipv6, tls=tls)
            cluster.start()
            srv = _serve_control(cluster, ctl_path)
        except (HarnessError, ValueError, OSError) as e:
            sys.stderr.write("nodes.py exec: could not start nodes: %s\n" % e)
            return 1
        if "sig" in fwd:     # signalled while starting up
            return 128 + fwd["sig"]
        env = dict(os.environ)
        env[ENV_NODES] = ",".join(cluster.urls)
        env[ENV_KINDS] = ",".join(cluster.kinds)
        env[ENV_CTL] = ctl_path
        env[ENV_PY] = os.path.abspath(__file__)
        env[ENV_PYTHON] = sys.executable or "python3"
        # Ready-made shell prefix for system()/popen(); -S skips site-packages, which can cost more
        # than the whole ctl round trip.
        env[ENV_CTL_CMD] = " ".join(shlex.quote(x) for x in (env[ENV_PYTHON], "-S", env[ENV_PY], "ctl"))
        if a.verbose:
            sys.stderr.write("nodes.py exec: %s=%s (dirs in %s)\n" % (ENV_NODES, env[ENV_NODES],
                                                                     cluster.base_dir))
        exe = shutil.which(prog[0]) if os.sep not in prog[0] else prog[0]
        if not exe or not os.path.exists(exe):
            sys.stderr.write("nodes.py exec: %s: command not found\n" % prog[0])
            return 127
        try:
            # PROGRAM stays in our process group (so `exec -- bash` is interactive) and gets
            # SIGTERM if the harness dies.
            child = _popen(prog, signal.SIGTERM, False, env=env)
        except OSError as e:
            sys.stderr.write("nodes.py exec: cannot run %s: %s\n" % (prog[0], e))
            return 126
        rc = child.wait()
        return 128 - rc if rc < 0 else rc
    finally:
        if srv is not None:
            srv.shutdown()
            srv.server_close()
        if cluster is not None:
            cluster.close()
        shutil.rmtree(ctl_dir, ignore_errors=True)


def _ports_option(ports, count, who):
    """--ports LOW-HIGH (exported as $REDLOCK_PORTS, so the nodes' children see it too) or
    $REDLOCK_PORTS, checked before anything starts. Returns an exit status (2) on a bad range."""
    if ports is not None:
        try:
            parse_port_range(ports, "--ports")
        except ValueError as e:
            sys.stderr.write("nodes.py %s: %s\n" % (who, e))
            return 2
        os.environ[ENV_PORTS] = ports.strip()
    text = os.environ.get(ENV_PORTS, "").strip()
    if not text:
        return 0
    try:
        lo, hi = parse_port_range(text)
    except ValueError as e:
        sys.stderr.write("nodes.py %s: %s\n" % (who, e))
        return 2
    if hi - lo + 1 < count:
        sys.stderr.write("nodes.py %s: the port range %s holds %d port%s; %d servers need %d\n"
                         % (who, text, hi - lo + 1, "" if hi == lo else "s", count, count))
        return 2
    return 0


def _main_ports(argv):
    """nodes.py ports: prints the range node ports are drawn from; exit 2 if $REDLOCK_PORTS is bad."""
    if argv:
        return _usage("ports takes no arguments")
    text = os.environ.get(ENV_PORTS, "").strip()
    try:
        lo, hi = _port_range()
    except HarnessError as e:
        sys.stderr.write("nodes.py ports: %s\n" % e)
        return 2
    print("%d-%d" % (lo, hi) + ("" if text else "   (default: $%s is not set)" % ENV_PORTS))
    return 0


# ---------------------------------------------------------------------------------------------
# Playground: `up` starts nodes that stay up after it returns (`make nodes`), `down` stops them
# (`make nodes-stop`), `env` prints their export line again. A detached `_serve` process (own
# session, so no terminal signal reaches it) owns the Cluster exactly as `exec` does, so the nodes
# still die with it (PR_SET_PDEATHSIG) and are never left behind by a failed start. Its state is a
# directory: state.json (written once everything answers), serve.log, the nodes' dirs, ctl.sock.

PLAYGROUND_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              "build", "playground")
PLAYGROUND_START_TIMEOUT = 90.0     # seconds `up` waits (clusters take a few seconds each)
_PG_SERVE = "_playground-serve"


def _pg_paths(d):
    return {"state": os.path.join(d, "state.json"), "log": os.path.join(d, "serve.log"),
            "lock": os.path.join(d, "lock"), "nodes": os.path.join(d, "nodes"),
            "ctl": os.path.join(d, "ctl.sock")}


def _pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _pg_owned(pid, d):
    """pid is the serve process of playground d (not a stranger that reused the pid)."""
    args = _cmdline(pid)
    return _PG_SERVE.encode() in args and os.path.abspath(d).encode() in args


def _pg_read(d):
    import json
    try:
        with open(_pg_paths(d)["state"]) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _pg_exports(st):
    import shlex
    out = ["export REDLOCK_NODES=%s" % shlex.quote(",".join(st["urls"]))]
    if st.get("cluster_urls"):
        out.append("export REDLOCK_CLUSTER_NODES=%s" % shlex.quote(",".join(st["cluster_urls"])))
    return out


def _pg_describe(st, d):
    lines = ["nodes.py: %d local nodes, left running (state in %s):" % (len(st["urls"]), d)]
    lines += ["  node %d: %-6s %s" % (i, k, u) for i, (k, u) in enumerate(zip(st["kinds"], st["urls"]))]
    if st.get("cluster_urls"):
        n = len(st["cluster_urls"])
        lines.append("  and %d Redis/Valkey Cluster%s of 3 shards (each one Redlock node) in "
                     "$REDLOCK_CLUSTER_NODES" % (n, "" if n == 1 else "s"))
    lines.append("  kill, pause, restart node I: REDLOCK_HARNESS=%s python3 tests/harness/nodes.py "
                 "ctl kill I | pause I | resume I | restart I" % st["ctl"])
    lines.append("  stop them all: make nodes-stop (python3 tests/harness/nodes.py down)")
    return "\n".join(lines) + "\n"


def _pg_all_pids(st):
    """(pid, port) of every server the playground started."""
    out = list(zip(st.get("pids", []), st.get("ports", [])))
    out += list(zip(st.get("cluster_pids", []), st.get("cluster_ports", [])))
    return out


def _pg_reap_strays(st):
    """Kills servers of a playground whose serve process is gone, should any have survived it
    (PR_SET_PDEATHSIG normally took them along). Only a process whose command line still names
    its port is killed. Returns how many were."""
    import signal
    n = 0
    for pid, port in _pg_all_pids(st):
        if pid and _pid_alive(pid) and str(port).encode() in b" ".join(_cmdline(pid)):
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except ProcessLookupError:
                pass
    return n


def _pg_clear(d, keep_log=True):
    import shutil
    p = _pg_paths(d)
    for k in ("state", "ctl"):
        try:
            os.unlink(p[k])
        except OSError:
            pass
    shutil.rmtree(p["nodes"], ignore_errors=True)
    if not keep_log:
        try:
            os.unlink(p["log"])
        except OSError:
            pass


def _pg_lock(d):
    import fcntl
    os.makedirs(d, exist_ok=True)
    fd = os.open(_pg_paths(d)["lock"], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)     # held until the process exits: one up/down at a time
    return fd


def _pg_running(d):
    """The state of playground d if its serve process is alive, else None (stale state cleared)."""
    st = _pg_read(d)
    if st is None:
        return None
    if _pid_alive(st["pid"]) and _pg_owned(st["pid"], d):
        return st
    _pg_reap_strays(st)
    _pg_clear(d)
    return None


def _pg_stop_serve(pid, d, grace):
    """SIGTERM the serve process (it stops its nodes), SIGKILL it after `grace` seconds (its nodes
    then die of PR_SET_PDEATHSIG). Returns once it is gone."""
    import signal
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not _pid_alive(pid):
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)


def _pg_parser(cmd):
    import argparse
    p = argparse.ArgumentParser(prog="nodes.py " + cmd)
    p.add_argument("--state-dir", default=os.environ.get("REDLOCK_PLAYGROUND") or PLAYGROUND_DIR,
                   help="where the running set is recorded (default: build/playground in the checkout)")
    if cmd in ("up", _PG_SERVE):
        p.add_argument("--count", type=int, default=5)
        p.add_argument("--kind", choices=("redis", "valkey", "mixed"), default="mixed")
        p.add_argument("--cluster", type=int, nargs="?", const=3, default=0, metavar="N",
                       help="also N Redis/Valkey Clusters of 3 shards (default N: 3), "
                            "in $REDLOCK_CLUSTER_NODES")
        p.add_argument("--ports", default=None, metavar="LOW-HIGH",
                       help="draw every port from this range (default: $REDLOCK_PORTS, if set)")
    return p


def _main_up(argv):
    import subprocess
    p = _pg_parser("up")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if a.count < 1 or a.cluster < 0:
        return _usage("up: --count must be at least 1 and --cluster at least 0")
    err = _ports_option(a.ports, a.count + 3 * a.cluster, "up")
    if err:
        return err
    d = os.path.abspath(a.state_dir)
    paths = _pg_paths(d)
    _pg_lock(d)
    st = _pg_running(d)
    if st is not None:
        sys.stderr.write("nodes.py up: already running (pid %d): not starting another set\n" % st["pid"])
        if a.cluster and not st.get("cluster_urls"):
            sys.stderr.write("nodes.py up: the running set has no clusters: stop it first for --cluster\n")
        sys.stderr.write(_pg_describe(st, d))
        print("\n".join(_pg_exports(st)), flush=True)
        return 0
    _pg_clear(d, keep_log=False)
    argv = [sys.executable or "python3", "-S", os.path.abspath(__file__), _PG_SERVE, "--state-dir", d,
            "--count", str(a.count), "--kind", a.kind, "--cluster", str(a.cluster)]
    with open(paths["log"], "ab") as log:
        # Own session: no terminal signal (Ctrl-C, hang-up) reaches it, and it outlives this
        # process. Its stdout is the log, not ours, so `eval "$(nodes.py up)"` does not wait for it.
        srv = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                               close_fds=True, start_new_session=True, cwd=d)
    why = None

    def interrupted(signum, frame):
        raise SystemExit(128 + signum)
    import signal
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        deadline = time.monotonic() + PLAYGROUND_START_TIMEOUT
        while True:
            st = _pg_read(d)
            if st is not None and st.get("pid") == srv.pid:
                break
            rc = srv.poll()
            if rc is not None:
                why = "exited with status %d" % rc
                break
            if time.monotonic() > deadline:
                why = "did not start within %gs" % PLAYGROUND_START_TIMEOUT
                break
            time.sleep(0.02)
    except BaseException:        # Ctrl-C, SIGTERM turned into an exception: take the nodes down
        _pg_stop_serve(srv.pid, d, STOP_GRACE)
        srv.wait()
        _pg_clear(d)
        raise
    if why is not None:
        _pg_stop_serve(srv.pid, d, STOP_GRACE)
        srv.wait()
        _pg_clear(d)
        sys.stderr.write("nodes.py up: could not start the nodes (%s):\n%s\n" % (why, _tail(paths["log"], 0, 40)))
        return 1
    sys.stderr.write(_pg_describe(st, d))
    print("\n".join(_pg_exports(st)), flush=True)
    return 0


def _main_pg_serve(argv):
    """The detached owner of a playground's nodes: starts them, records them in state.json, serves
    the control socket, and stops everything on SIGTERM/SIGHUP/SIGINT."""
    import json
    import shutil
    import signal
    import tempfile
    a = _pg_parser(_PG_SERVE).parse_args(argv)
    d = os.path.abspath(a.state_dir)
    paths = _pg_paths(d)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)
    # rcluster does `import nodes`: give it this module, not a second copy with its own port
    # bookkeeping.
    sys.modules.setdefault("nodes", sys.modules[__name__])
    ctl_path, ctl_tmp = paths["ctl"], None
    if len(ctl_path.encode()) > 100:          # sun_path is 108 bytes
        ctl_tmp = tempfile.mkdtemp(prefix="redlock-playground-")
        ctl_path = os.path.join(ctl_tmp, "ctl.sock")
    cluster, made, srv = None, [], None
    try:
        cluster = Cluster(count=a.count, kind=a.kind, base_dir=paths["nodes"])
        cluster.start()
        if a.cluster:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import rcluster
            made = [rcluster.RedisCluster(shards=3, kind="valkey" if c % 2 else "redis")
                    for c in range(a.cluster)]
            rcluster.start_all(made)
        if stop.is_set():
            return 1
        srv = _serve_control(cluster, ctl_path)
        st = {"pid": os.getpid(), "urls": cluster.urls, "kinds": cluster.kinds,
              "ports": [cluster.port(i) for i in range(cluster.count)],
              "pids": [cluster.pid(i) for i in range(cluster.count)], "ctl": ctl_path,
              "cluster_urls": [rc.url() for rc in made],
              "cluster_ports": [rc.nodes.port(i) for rc in made for i in range(len(rc))],
              "cluster_pids": [rc.nodes.pid(i) for rc in made for i in range(len(rc))]}
        tmp = paths["state"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(st, f, indent=1)
        os.replace(tmp, paths["state"])
        print("nodes.py %s: up: %s" % (_PG_SERVE, ",".join(st["urls"] + st["cluster_urls"])), flush=True)
        while not stop.wait(1.0):
            pass
        print("nodes.py %s: stopping" % _PG_SERVE, flush=True)
        return 0
    except (HarnessError, ValueError, OSError) as e:
        print("nodes.py %s: %s" % (_PG_SERVE, e), flush=True)
        return 1
    finally:
        if srv is not None:
            srv.shutdown()
            srv.server_close()
        for rc in made:
            rc.close()
        if cluster is not None:
            cluster.close()
        for k in ("state", "ctl"):
            try:
                os.unlink(paths[k])
            except OSError:
                pass
        shutil.rmtree(paths["nodes"], ignore_errors=True)
        if ctl_tmp:
            shutil.rmtree(ctl_tmp, ignore_errors=True)


def _main_down(argv):
    p = _pg_parser("down")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    d = os.path.abspath(a.state_dir)
    if not os.path.isdir(d):
        sys.stderr.write("nodes.py down: no playground nodes running (%s)\n" % d)
        return 0
    _pg_lock(d)
    st = _pg_read(d)
    if st is None or not (_pid_alive(st["pid"]) and _pg_owned(st["pid"], d)):
        n = _pg_reap_strays(st) if st else 0
        _pg_clear(d)
        sys.stderr.write("nodes.py down: no playground nodes running (%s)%s\n"
                         % (d, "; killed %d left-over servers" % n if n else ""))
        return 0
    _pg_stop_serve(st["pid"], d, STOP_GRACE + 5.0)
    n = _pg_reap_strays(st)
    _pg_clear(d)
    n = len(st.get("cluster_urls") or [])
    sys.stderr.write("nodes.py down: stopped %d nodes%s\n" % (len(st["urls"]), (
        " and %d cluster%s" % (n, "" if n == 1 else "s")) if n else ""))
    if n:
        sys.stderr.write("nodes.py down: %d servers outlived their owner and were killed\n" % n)
    return 0


def _main_env(argv):
    p = _pg_parser("env")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    d = os.path.abspath(a.state_dir)
    st = None
    if os.path.isdir(d):
        _pg_lock(d)
        st = _pg_running(d)     # clears the state of an owner that died
    if st is None:
        sys.stderr.write("nodes.py env: no playground nodes running (%s): start them with make nodes\n" % d)
        return 1
    print("\n".join(_pg_exports(st)))
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        _usage()
        return 0 if argv else 2
    if argv[0] == "ctl":
        return _main_ctl(argv[1:])
    if argv[0] == "exec":
        return _main_exec(argv[1:])
    if argv[0] == "up":
        return _main_up(argv[1:])
    if argv[0] == "down":
        return _main_down(argv[1:])
    if argv[0] == "env":
        return _main_env(argv[1:])
    if argv[0] == "ports":
        return _main_ports(argv[1:])
    if argv[0] == _PG_SERVE:
        return _main_pg_serve(argv[1:])
    return _usage("unknown subcommand %r" % argv[0])


if __name__ == "__main__":
    sys.exit(main())
