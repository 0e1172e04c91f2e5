// SPDX-License-Identifier: BSD-3-Clause
// The event loop keeps turning while many acquisitions wait, and the process exits when
// nothing is held or waiting, without quit().
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import Redlock from '../lib/index.mjs';
import { nodeUrls, uniq, sleep } from './helpers.mjs';

const urls = nodeUrls();
const lib = JSON.stringify(fileURLToPath(new URL('../lib/index.cjs', import.meta.url)));

// The numbers (docs/node.md, "The event loop"): while 200 acquisitions wait on locks
// that another process holds, a 5 ms interval's lag stays under 20 ms at p99, each
// fs.promises.readFile (libuv's pool, which the waits must not hold) completes within 50 ms,
// and all 200 have their locks within 1 s of the other process's release. The waiters poll
// with node-redlock's default interval (retryDelay 200 ± 100 ms), retrying forever.
const WAITERS = 200;

// A child node process that holds the locks: prints "held" once it has them all, and on a
// line on stdin stamps the time, releases them all and prints "released <stamp> <ms taken>".
function holderProcess(names) {
  const code = `
    const Redlock = require(${lib});
    const rl = new Redlock(${JSON.stringify(urls)}, { nodeTimeout: 500 });
    const names = ${JSON.stringify(names)};
    Promise.all(names.map((n) => rl.acquire(n, 30000))).then((held) => {
      console.log('held');
      process.stdin.once('data', async () => {
        const at = Date.now();
        await Promise.all(held.map((l) => l.release()));
        console.log('released', at, Date.now() - at);
        await rl.quit();
        process.exit(0);
      });
    }, (e) => { console.error(e); process.exit(1); });`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  let buf = '';
  const waiters = [];
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
      waiters.splice(0).forEach((w) => w());
    }
  });
  const exited = new Promise((resolve) => child.on('exit', (status) => {
    waiters.splice(0).forEach((w) => w());
    resolve(status);
  }));
  async function line(prefix, ms) {
    const deadline = Date.now() + ms;
    for (;;) {
      const l = lines.find((x) => x.startsWith(prefix));
      if (l) return l;
      if (child.exitCode !== null) throw new Error(`the holder exited (${child.exitCode}) before "${prefix}"`);
      if (Date.now() > deadline) throw new Error(`no "${prefix}" from the holder in ${ms} ms`);
      await new Promise((r) => { waiters.push(r); setTimeout(r, 100); });
    }
  }
  return { child, line, exited };
}

// Ticks of a 5 ms interval into `into.lags`, and a readFile every 100 ms for about a second.
async function readsFor(into) {
  for (let i = 0; i < 10; i++) {
    await sleep(100);
    const t0 = performance.now();
    const text = await readFile(fileURLToPath(import.meta.url), 'utf8');
    into.reads.push(performance.now() - t0);
    assert.ok(text.length > 0);
  }
}
const p99 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)];

// One measurement: the holder process takes the locks; a second of ticks and reads with nothing
// waiting (the machine's own lag, the control), a second with the 200 acquisitions waiting, then
// the release. Returns the figures and, when a number is out, why.
async function measure(t) {
  const names = [...Array(WAITERS).keys()].map((i) => uniq(`loop${i}`));
  const holder = holderProcess(names);
  const waiters = new Redlock(urls, { nodeTimeout: 500, retryCount: -1, retryDelay: 200, retryJitter: 100 });
  let iv;
  try {
    await holder.line('held', 20000);
    const idle = { lags: [], reads: [] };
    const busy = { lags: [], reads: [] };
    let into = idle;
    let last = performance.now();
    iv = setInterval(() => {
      const now = performance.now();
      into.lags.push(now - last - 5);
      last = now;
    }, 5);
    let cpu = process.cpuUsage();
    await readsFor(idle);
    idle.cpu = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    into = busy;
    let early = 0;
    const got = names.map((n) => waiters.acquire(n, 10000).then((l) => {
      early += 1;
      return { l, at: Date.now() };
    }));
    await readsFor(busy);
    busy.cpu = process.cpuUsage(cpu);
    assert.equal(early, 0, `${early} acquisitions succeeded while the other process held the locks`);
    holder.child.stdin.write('release\n');
    const [, at, took] = (await holder.line('released', 10000)).split(' ').map(Number);
    const locks = await Promise.all(got);
    clearInterval(iv);
    await Promise.all(locks.map((x) => x.l.release()));
    assert.equal(await holder.exited, 0);
    const lag = p99(busy.lags);
    const max = Math.max(...busy.lags);
    const late = Math.max(...locks.map((x) => x.at)) - at;
    const readMax = Math.max(...busy.reads);
    const idleLag = p99(idle.lags);
    const idleRead = Math.max(...idle.reads);
    const ms = (c) => ((c.user + c.system) / 1000).toFixed(0);
    t.diagnostic(`${WAITERS} waiters: loop lag p99 ${lag.toFixed(1)} ms, max ${max.toFixed(1)} ms ` +
      `(${busy.lags.length} ticks); readFile max ${readMax.toFixed(1)} ms; the other process released ` +
      `in ${took} ms, the last waiter had its lock ${late} ms after the release began; nothing ` +
      `waiting: lag p99 ${idleLag.toFixed(1)} ms, readFile max ${idleRead.toFixed(1)} ms; this ` +
      `process's CPU: ${ms(busy.cpu)} ms in the second of waiting, ${ms(idle.cpu)} ms in the idle one`);
    if (late >= 1000) return `the last waiter had its lock ${late} ms after the release began`;
    if (lag < 20 && readMax < 50 && busy.lags.length > 150) return null;   // the numbers
    // A machine whose loop lags this much with nothing waiting (other processes on every core)
    // cannot show the absolute numbers; what the waits add to its own lag must still
    // stay within them. Said, never passed silently.
    const out = `loop lag p99 ${lag.toFixed(1)} ms (max ${max.toFixed(1)}, ${busy.lags.length} ticks), ` +
      `readFile up to ${readMax.toFixed(1)} ms`;
    if (idleLag < 10) return `${out}, on a machine whose lag p99 is ${idleLag.toFixed(1)} ms with nothing waiting`;
    t.diagnostic(`the machine lags ${idleLag.toFixed(1)} ms at p99 with nothing waiting: checking what the ` +
      'waits add to that, not the absolute 20 ms and 50 ms');
    if (lag < idleLag + 20 && readMax < idleRead + 50 && busy.lags.length > idle.lags.length / 2) return null;
    return `${out}; with nothing waiting ${idleLag.toFixed(1)} ms and ${idleRead.toFixed(1)} ms (${idle.lags.length} ticks)`;
  } finally {
    clearInterval(iv);
    holder.child.kill('SIGKILL');
    await waiters.quit();
  }
}

// Timing on a shared 2-core machine is noisy: up to 3 measurements, each reported; the test
// fails when none meets the numbers. A binding that blocks the loop fails every one.
test(`the loop turns while ${WAITERS} acquisitions wait on locks another process holds`, async (t) => {
  let why;
  for (let i = 1; i <= 3; i++) {
    why = await measure(t);
    if (!why) return;
    t.diagnostic(`measurement ${i} of 3 out: ${why}`);
  }
  assert.fail(why);
});

function run(code, timeoutMs) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, out, ms: Date.now() - t0 });
    });
  });
}

test('the process exits once nothing is held or waiting, quit() or not', async () => {
  const r = uniq('exit');
  const code = `
    const Redlock = require(${lib});
    const rl = new Redlock(${JSON.stringify(urls)});
    rl.acquire(${JSON.stringify(r)}, 5000).then(async (l) => {
      await l.release();
      console.log('released');
    });`;
  const res = await run(code, 10000);
  assert.equal(res.signal, null, `killed after ${res.ms} ms: the process did not exit by itself`);
  assert.equal(res.status, 0);
  assert.equal(res.out.trim(), 'released');
});

test('a waiting acquire keeps the process alive until it has its lock', async () => {
  const r = uniq('alive');
  const holder = new Redlock(urls, { nodeTimeout: 500 });
  try {
    await holder.acquire(r, 1500);   // left to expire: the child gets it after about 1.5 s
    const code = `
      const Redlock = require(${lib});
      const rl = new Redlock(${JSON.stringify(urls)}, { retryCount: -1, retryDelay: 50, retryJitter: 10 });
      rl.acquire(${JSON.stringify(r)}, 1000).then(() => console.log('got it'));`;
    const res = await run(code, 10000);
    assert.equal(res.signal, null, 'exited by itself');
    assert.equal(res.out.trim(), 'got it');
    assert.ok(res.ms > 1000, `it waited (${res.ms} ms)`);
  } finally {
    await holder.quit();
  }
});

after(() => sleep(0));
