#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fault-injecting TCP proxy for the safety tests: sits between the lock clients and one node, on
loopback only, and forwards, delays, swallows, resets, truncates or slices the node's replies.

In-process use (tests):
    with Proxy(node_port) as p:          # listens on 127.0.0.1:p.port
        urls.append(p.url)
        p.set_mode("latency", ms=30, jitter_ms=10)
CLI (manual experiments): proxy.py --upstream 127.0.0.1:PORT [--listen PORT] [--mode MODE]
    then type modes on stdin ("blackhole", "latency 30 10", "pass", ...).

Modes (applied to every connection at its next chunk of data, new ones included):
  pass       forward both ways
  latency    hold each reply chunk for ms +- jitter_ms (order preserved) before forwarding it
  blackhole  accept and read, never forward, never answer, never close. A connection that was
             blackholed stays blackholed after the mode changes: its stream has lost bytes, as
             with a real partition the client must drop it
  reset      forward the request, then answer the first reply chunk with a TCP RST to the client
             (the command ran on the node, the client never learns the outcome)
  truncate   forward the request, then pass only the first half of the reply chunk and close
  slice      forward replies one byte at a time, delay_ms apart (default 1 ms)
"""
from __future__ import annotations

import asyncio
import ipaddress
import random
import socket
import struct
import sys
import threading
import time

MODES = ("pass", "latency", "blackhole", "reset", "truncate", "slice")


def _loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class Proxy:
    def __init__(self, upstream_port, upstream_host="127.0.0.1", listen_port=0):
        if not _loopback(upstream_host):
            raise ValueError("proxy forwards to loopback only, not %r" % upstream_host)
        self.upstream = (upstream_host, int(upstream_port))
        self.listen_port = listen_port
        self.port = None
        self.mode = "pass"
        self.params = {}
        self.connections = 0
        self.replies_forwarded = 0
        self._conns = set()
        self._loop = None
        self._thread = None
        self._server = None
        self._ready = threading.Event()
        self._err = None

    # -- control ---------------------------------------------------------------------------------
    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def set_mode(self, mode, **params):
        """mode: one of MODES. latency: ms, jitter_ms. slice: delay_ms."""
        if mode not in MODES:
            raise ValueError("unknown proxy mode %r" % mode)
        # One tuple assignment: the pumps read (mode, params) together.
        self.params = dict(params)
        self.mode = mode

    def start(self):
        self._thread = threading.Thread(target=self._run, name="proxy-%d" % self.upstream[1], daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._err is not None:
            raise self._err
        if self.port is None:
            raise RuntimeError("proxy did not start")
        return self

    def close(self):
        if self._loop is not None and self._loop.is_running():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            try:
                fut.result(5)
            except Exception:
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False

    # -- event loop --------------------------------------------------------------------------------
    def _run(self):
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", self.listen_port, reuse_address=True))
            self.port = self._server.sockets[0].getsockname()[1]
        except Exception as e:           # handed to start()
            self._err = e
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _shutdown(self):
        self._server.close()
        for c in list(self._conns):
            c.abort(rst=False)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, creader, cwriter):
        self.connections += 1
        conn = _Conn(self, cwriter)
        self._conns.add(conn)
        try:
            try:
                ureader, uwriter = await asyncio.open_connection(*self.upstream)
            except OSError:
                # Node down: the client sees the connection closed, as a dead node behind a
                # real load balancer looks.
                return
            conn.uwriter = uwriter
            _nodelay(cwriter)
            _nodelay(uwriter)
            await asyncio.gather(_quiet(conn, self._pump_requests(conn, creader)),
                                 _quiet(conn, self._pump_replies(conn, ureader)),
                                 _quiet(conn, conn.deliver_loop()))
        except asyncio.CancelledError:
            pass  # the proxy is closing
        finally:
            conn.abort(rst=False)
            self._conns.discard(conn)

    async def _pump_requests(self, conn, creader):
        while not conn.closed:
            data = await creader.read(65536)
            if not data:
                break
            if conn.blackholed or self.mode == "blackhole":
                conn.blackholed = True
                continue           # swallowed
            if conn.uwriter.transport.is_closing():
                break
            conn.uwriter.write(data)
        # Client went away: drop the node side. A blackholed connection ends here too.
        conn.abort(rst=False)

    async def _pump_replies(self, conn, ureader):
        while not conn.closed:
            data = await ureader.read(65536)
            if not data:
                break
            mode, params = self.mode, self.params
            if conn.blackholed or mode == "blackhole":
                conn.blackholed = True
                continue
            if mode == "reset":
                conn.abort(rst=True)
                return
            if mode == "truncate":
                if not conn.cwriter.transport.is_closing():
                    conn.cwriter.write(data[: len(data) // 2])
                await _drain(conn.cwriter)
                conn.abort(rst=False)
                return
            if mode == "slice":
                delay = params.get("delay_ms", 1) / 1000.0
                for i in range(len(data)):
                    if conn.closed or conn.cwriter.transport.is_closing():
                        return
                    conn.cwriter.write(data[i:i + 1])
                    await _drain(conn.cwriter)
                    await asyncio.sleep(delay)
                self.replies_forwarded += 1
                continue
            if mode == "latency":
                ms = params.get("ms", 20)
                jit = params.get("jitter_ms", 0)
                d = max(0.0, (ms + random.uniform(-jit, jit)) / 1000.0)
                conn.enqueue(time.monotonic() + d, data)
                continue
            conn.enqueue(0.0, data)
        conn.abort(rst=False)


class _Conn:
    def __init__(self, proxy, cwriter):
        self.proxy = proxy
        self.cwriter = cwriter
        self.uwriter = None
        self.blackholed = False
        self.closed = False
        self.queue = asyncio.Queue()
        self.last_due = 0.0

    def enqueue(self, due, data):
        # Delivery times never go backwards: latency reorders nothing.
        due = max(due, self.last_due)
        self.last_due = due
        self.queue.put_nowait((due, data))

    async def deliver_loop(self):
        while not self.closed:
            due, data = await self.queue.get()
            if due is None:
                return
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if self.closed or self.blackholed or self.cwriter.transport.is_closing():
                continue
            self.cwriter.write(data)
            self.proxy.replies_forwarded += 1
            await _drain(self.cwriter)

    def abort(self, rst):
        if self.closed:
            return
        self.closed = True
        self.queue.put_nowait((None, None))
        if rst:
            sock = self.cwriter.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            self.cwriter.transport.abort()
        else:
            self.cwriter.close()
        if self.uwriter is not None:
            self.uwriter.close()


async def _quiet(conn, coro):
    """A peer that resets or vanishes ends the pump, and the connection with it."""
    try:
        await coro
    except (ConnectionError, OSError):
        pass
    finally:
        conn.abort(rst=False)


def _nodelay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


async def _drain(writer):
    try:
        await writer.drain()
    except (ConnectionError, OSError):
        pass


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True, help="HOST:PORT of the node (loopback)")
    ap.add_argument("--listen", type=int, default=0)
    ap.add_argument("--mode", default="pass", choices=MODES)
    a = ap.parse_args(argv)
    host, _, port = a.upstream.rpartition(":")
    p = Proxy(int(port), host or "127.0.0.1", a.listen).start()
    p.set_mode(a.mode)
    print("listening on %s -> %s" % (p.url, a.upstream), flush=True)
    try:
        for line in sys.stdin:
            w = line.split()
            if not w:
                continue
            try:
                if w[0] == "latency":
                    p.set_mode("latency", ms=float(w[1]) if len(w) > 1 else 20,
                               jitter_ms=float(w[2]) if len(w) > 2 else 0)
                elif w[0] == "slice":
                    p.set_mode("slice", delay_ms=float(w[1]) if len(w) > 1 else 1)
                else:
                    p.set_mode(w[0])
                print("mode %s" % p.mode, flush=True)
            except (ValueError, IndexError) as e:
                print("error: %s" % e, flush=True)
    except KeyboardInterrupt:
        pass
    p.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
