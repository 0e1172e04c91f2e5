// SPDX-License-Identifier: BSD-3-Clause
// The semaphore's, read-write lock's and election's waits off the event loop: the loop ticks
// while many of them wait; a process exits by itself once nothing waits (no quit()), and a
// waiting permit or observer keeps it alive until it ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import Redlock from '../lib/index.mjs';
import { nodeUrls, uniq, sleep } from './helpers.mjs';

const urls = nodeUrls();
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

test('the loop ticks while semaphore, read-write and election waits are under way', async () => {
  const holder = new Redlock(urls, { nodeTimeout: 500 });
  const waiters = new Redlock(urls, { nodeTimeout: 500, retryCount: -1, retryDelay: 100, retryJitter: 50 });
  const K = 20;
  try {
    const sems = [...Array(K).keys()].map((i) => uniq(`sem${i}`));
    const rws = [...Array(K).keys()].map((i) => uniq(`rw${i}`));
    const els = [...Array(K).keys()].map((i) => uniq(`el${i}`));
    const held = await Promise.all([
      ...sems.map((n) => holder.semaphore(n, 1).acquire(30000)),
      ...rws.map((n) => holder.rwlock(n).acquireWrite(30000)),
    ]);
    const leaders = await Promise.all(els.map((n) => holder.election(n).campaign('holder')));
    const ac = new AbortController();
    setMaxListeners(200, ac.signal);   // one signal for 100 waits: not a leak
    const lags = [];
    let last = performance.now();
    const iv = setInterval(() => {
      const now = performance.now();
      lags.push(now - last - 5);
      last = now;
    }, 5);
    const waits = [
      ...sems.map((n) => waiters.semaphore(n, 1).acquire(5000, { signal: ac.signal })),
      ...rws.map((n, i) => (i % 2 ? waiters.rwlock(n).acquireRead(5000, { signal: ac.signal })
        : waiters.rwlock(n).acquireWrite(5000, { signal: ac.signal }))),
      ...els.map((n) => waiters.election(n).campaign('waiter', { signal: ac.signal })),
    ].map((p) => p.then(() => 'held', (e) => e.name));
    const observed = els.map(async (n) => {
      let k = 0;
      for await (const x of waiters.election(n).observe({ signal: ac.signal })) { void x; k++; }
      return k;
    });
    await sleep(1000);
    const t0 = Date.now();
    ac.abort();
    const outcomes = await Promise.all(waits);
    const seen = await Promise.all(observed);
    const took = Date.now() - t0;
    clearInterval(iv);
    lags.sort((a, b) => a - b);
    const p99 = lags[Math.floor(lags.length * 0.99)];
    // Margins for a loaded 2-core machine: a wait on the JS thread would block it for whole
    // rounds and retry delays (50 to 150 ms here), 80 times over.
    assert.ok(lags.length > 100, `only ${lags.length} ticks in over a second`);
    assert.ok(p99 < 50, `loop lag p99 ${p99.toFixed(1)} ms`);
    assert.deepEqual(outcomes, Array(3 * K).fill('AbortError'));
    assert.deepEqual(seen, Array(K).fill(1), 'each observer saw the state, then ended on the abort');
    assert.ok(took < 1000, `${4 * K} waits ended ${took} ms after one abort`);
    await Promise.all([...held.map((l) => l.release()), ...leaders.map((l) => l.resign())]);
  } finally {
    await holder.quit();
    await waiters.quit();
  }
});

test('the process exits by itself once nothing waits, without quit()', async () => {
  const [s, r, e] = [uniq('xsem'), uniq('xrw'), uniq('xel')];
  const code = `
    const Redlock = require(${lib});
    const rl = new Redlock(${JSON.stringify(urls)});
    (async () => {
      const p = await rl.semaphore(${JSON.stringify(s)}, 2).acquire(5000);
      await p.release();
      const rw = rl.rwlock(${JSON.stringify(r)});
      await (await rw.acquireRead(5000)).release();
      await (await rw.acquireWrite(5000)).release();
      await rw.usingRead(2000, async () => {});
      const el = rl.election(${JSON.stringify(e)});
      const l = await el.campaign('me');
      for await (const x of el.observe()) { if (x.present) break; }
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 100);
      for await (const x of el.observe({ current: false, signal: ac.signal })) void x;
      await l.resign();
      const again = await el.campaign('me again');   // left leading: not a wait
      void again;
      console.log('done');
    })();`;
  const res = await run(code, 10000);
  assert.equal(res.signal, null, `killed after ${res.ms} ms: the process did not exit by itself`);
  assert.equal(res.status, 0);
  assert.equal(res.out.trim(), 'done');
});

test('a waiting permit, and a waiting observer, keep the process alive until they end', async () => {
  const [s, e] = [uniq('asem'), uniq('ael')];
  const holder = new Redlock(urls, { nodeTimeout: 500 });
  try {
    await holder.semaphore(s, 1).acquire(1500);   // left to expire after 1.5 s
    const leadership = await holder.election(e).campaign('holder');
    setTimeout(() => leadership.resign(), 2500);
    const code = `
      const Redlock = require(${lib});
      const rl = new Redlock(${JSON.stringify(urls)}, { retryCount: -1, retryDelay: 50, retryJitter: 10 });
      rl.semaphore(${JSON.stringify(s)}, 1).acquire(1000).then(() => console.log('permit'));
      (async () => {
        for await (const x of rl.election(${JSON.stringify(e)}).observe({ current: false })) {
          console.log(x.present ? 'leader' : 'none');
          break;
        }
      })();`;
    const res = await run(code, 10000);
    assert.equal(res.signal, null, 'exited by itself');
    assert.deepEqual(res.out.trim().split('\n'), ['permit', 'none']);
    assert.ok(res.ms > 2000, `it waited (${res.ms} ms)`);
  } finally {
    await holder.quit();
  }
});
