# SPDX-License-Identifier: BSD-3-Clause
"""A tiny fake node on 127.0.0.1 for the CLI tests of hostile or lying nodes: behaviour no real
redis-server or valkey-server can be made to show (nested replies 300,000 deep, +OK to every
command). It parses RESP commands as hiredis sends them and answers each with the same bytes.
Tests of ordinary behaviour use real nodes from tests/harness/nodes.py, never this."""
from __future__ import annotations

import socket
import threading

# "*1\r\n" 300,000 times then ":1\r\n": one reply nested 300,000 deep. hiredis's own reader
# builds and frees it recursively and overflows the stack of whoever reads it.
NESTED = b"*1\r\n" * 300_000 + b":1\r\n"
OK = b"+OK\r\n"


class FakeNode:
    """Answers every command with `reply` (bytes). Use as a context manager; `url` is
    redis://127.0.0.1:PORT. `commands` records the commands received (lists of bytes)."""

    def __init__(self, reply: bytes):
        self.reply = reply
        self.commands: list[list[bytes]] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self.url = "redis://127.0.0.1:%d" % self.port
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        try:
            self._sock.close()
        except OSError:
            pass

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        buf = b""
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while True:
                    cmd, buf = _parse(buf)
                    if cmd is None:
                        break
                    self.commands.append(cmd)
                    try:
                        conn.sendall(self.reply)
                    except OSError:
                        return


def _parse(buf: bytes):
    """One RESP command (an array of bulk strings, or an inline line) off buf, or None."""
    if not buf:
        return None, buf
    if buf[:1] != b"*":
        end = buf.find(b"\r\n")
        return (None, buf) if end < 0 else (buf[:end].split(), buf[end + 2:])
    end = buf.find(b"\r\n")
    if end < 0:
        return None, buf
    n = int(buf[1:end])
    pos = end + 2
    args = []
    for _ in range(n):
        end = buf.find(b"\r\n", pos)
        if end < 0:
            return None, buf
        length = int(buf[pos + 1:end])
        start = end + 2
        if len(buf) < start + length + 2:
            return None, buf
        args.append(buf[start:start + length])
        pos = start + length + 2
    return args, buf[pos:]
