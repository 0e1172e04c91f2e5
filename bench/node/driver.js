// SPDX-License-Identifier: BSD-3-Clause
// Peer-benchmark driver for node-redlock (v5, over ioredis) and for this
// project's Node.js package (--impl libredlock, the same API over the C core,
// bindings/node): runs one case (cycle or contend) and prints one JSON line,
// with the same flags and fields as bench/drivers/common.py. Workers are
// concurrent async loops; the code below is the same for both, as a user
// switching the import would have it.
"use strict";
const path = require("path");

const NODE_TIMEOUT_MS = 50; // the C core's default per-node reply timeout
const TTL_MS = 10000;

function parseArgs() {
  const a = { impl: "node-redlock", case: "cycle", workers: 1, iterations: 2000, seconds: 3, warmup: 20, prefix: "bench" };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    const k = v[i].replace(/^--/, "");
    a[k] = ["workers", "iterations", "seconds", "warmup"].includes(k) ? Number(v[i + 1]) : v[i + 1];
  }
  a.urls = a.urls.split(",");
  return a;
}

const now = () => Number(process.hrtime.bigint()) / 1000; // microseconds
// The process's CPU (every thread: the event loop's and a library's own) from the timed part's
// start: cpu_us_per_op in the output.
let cpu0 = null;

async function main() {
  const a = parseArgs();
  let clients, redlock;
  if (a.impl === "libredlock") {
    const Redlock = require(path.join(__dirname, "..", "..", "bindings", "node", "lib", "index.cjs"));
    clients = [];
    redlock = new Redlock(a.urls, { retryCount: a.case === "contend" ? -1 : 0 });
  } else {
    const Redlock = require("redlock").default;
    const Redis = require("ioredis");
    clients = a.urls.map((u) => new Redis(u, { commandTimeout: NODE_TIMEOUT_MS, connectTimeout: 200, maxRetriesPerRequest: 1 }));
    // Cycle: one attempt. Contend: retry forever with the library's default delays.
    redlock = new Redlock(clients, { retryCount: a.case === "contend" ? -1 : 0 });
  }
  redlock.on("error", () => {}); // failures are counted from the rejected promises
  let errors = 0, firstError = null;
  const noteErr = (e) => { errors++; if (firstError === null) firstError = String(e && e.message || e); };
  let lat = [], perWorker = null;
  const t0 = now();
  if (a.case === "cycle") {
    for (let w = 0; w < a.workers; w++)
      for (let i = 0; i < a.warmup; i++)
        try { await (await redlock.acquire([`${a.prefix}:warm:${w}:${i}`], TTL_MS)).release(); } catch (e) {}
    errors = 0; firstError = null;
    const per = Math.max(1, Math.floor(a.iterations / a.workers));
    cpu0 = process.cpuUsage();
    const start = now(), stopAt = start + a.seconds * 1e6;
    await Promise.all(Array.from({ length: a.workers }, async (_, w) => {
      for (let i = 0; i < per; i++) {
        const s = now();
        try { await (await redlock.acquire([`${a.prefix}:${w}:${i}`], TTL_MS)).release(); } catch (e) { noteErr(e); }
        const e = now();
        lat.push(e - s);
        if (e >= stopAt) break;
      }
    }));
    finish(a, lat, errors, (now() - start) / 1e6, firstError, null, clients);
  } else {
    perWorker = new Array(a.workers).fill(0);
    let lastRelease = null;
    cpu0 = process.cpuUsage();
    const start = now(), end = start + a.seconds * 1e6;
    await Promise.all(Array.from({ length: a.workers }, async (_, w) => {
      while (now() < end) {
        let lock;
        try { lock = await redlock.acquire([`${a.prefix}:contend`], TTL_MS); } catch (e) { noteErr(e); continue; }
        const t = now();
        if (lastRelease !== null) lat.push(t - lastRelease);
        perWorker[w]++;
        lastRelease = now();
        try { await lock.release(); } catch (e) { noteErr(e); }
      }
    }));
    finish(a, lat, errors, (now() - start) / 1e6, firstError, perWorker, clients);
  }
}

function finish(a, lat, errors, seconds, firstError, perWorker, clients) {
  lat.sort((x, y) => x - y);
  const pct = (q) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(q * lat.length))] : null);
  const ops = perWorker ? perWorker.reduce((x, y) => x + y, 0) : lat.length;
  const cpu = process.cpuUsage(cpu0);
  console.log(JSON.stringify({
    impl: a.impl, case: a.case, nodes: a.urls.length, workers: a.workers, ops, errors, seconds,
    ops_per_s: ops / seconds, p50_us: pct(0.5), p99_us: pct(0.99), first_error: firstError, per_worker: perWorker,
    cpu_us_per_op: ops ? (cpu.user + cpu.system) / ops : null,
  }));
  clients.forEach((c) => c.disconnect());
  process.exit(0);
}

main().catch((e) => { console.error("node driver:", e); process.exit(2); });
