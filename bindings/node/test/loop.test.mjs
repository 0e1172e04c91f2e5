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
const WAITERS = 60;

test(`the loop ticks with small lag while ${WAITERS} acquisitions wait on locks held elsewhere`, async () => {
  const holder = new Redlock(urls, { nodeTimeout: 500 });
  const waiters = new Redlock(urls, { nodeTimeout: 500, retryCount: -1, retryDelay: 100, retryJitter: 50 });
  try {
    const names = [...Array(WAITERS).keys()].map((i) => uniq(`loop${i}`));
    const held = await Promise.all(names.map((n) => holder.acquire(n, 30000)));
    const lags = [];
    let last = performance.now();
    const iv = setInterval(() => {
      const now = performance.now();
      lags.push(now - last - 5);
      last = now;
    }, 5);
    const got = names.map((n) => waiters.acquire(n, 5000).then((l) => ({ l, at: Date.now() })));
    await sleep(1000);
    const t0 = performance.now();
    const text = await readFile(fileURLToPath(import.meta.url), 'utf8');
    const readMs = performance.now() - t0;
    const releasedAt = Date.now();
    await Promise.all(held.map((l) => l.release()));
    const locks = await Promise.all(got);
    clearInterval(iv);
    lags.sort((a, b) => a - b);
    const p99 = lags[Math.floor(lags.length * 0.99)];
    const max = lags[lags.length - 1];
    const late = Math.max(...locks.map((x) => x.at)) - releasedAt;
    assert.ok(text.length > 0);
    assert.ok(lags.length > 150, `only ${lags.length} ticks in over a second`);
    assert.ok(p99 < 30, `loop lag p99 ${p99.toFixed(1)} ms (max ${max.toFixed(1)})`);
    assert.ok(readMs < 100, `fs.promises.readFile took ${readMs.toFixed(1)} ms`);
    assert.ok(late < 1000, `the last waiter had its lock ${late} ms after the release`);
    await Promise.all(locks.map((x) => x.l.release()));
  } finally {
    await holder.quit();
    await waiters.quit();
  }
});

const lib = JSON.stringify(fileURLToPath(new URL('../lib/index.cjs', import.meta.url)));

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
