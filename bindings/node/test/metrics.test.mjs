// SPDX-License-Identifier: BSD-3-Clause
// The metrics hook: C's events of a Redlock's locks reach its 'metrics' listeners on the JS
// thread (acquire attempts, the acquire's end, extensions, releases, a failing node), and stop
// when the last listener goes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redlock from '../lib/index.mjs';
import { nodeUrls, uniq, sleep, ctl } from './helpers.mjs';

const urls = nodeUrls();
const redlock = new Redlock(urls, { nodeTimeout: 500, fencing: true });
after(() => redlock.quit());

async function until(events, pred, ms = 2000) {
  const t0 = Date.now();
  while (!events.some(pred) && Date.now() - t0 < ms) await sleep(10);
  return events.find(pred);
}

test('acquire, extend and release are told to the listener, with each figure', async () => {
  const events = [];
  const fn = (e) => events.push(e);
  redlock.on('metrics', fn);
  const r = uniq('metrics');
  const lock = await redlock.acquire(r, 5000);
  await lock.extend(6000);
  await lock.release();
  const acquired = await until(events, (e) => e.type === 'acquired' && e.resource === r);
  assert.ok(acquired, `events: ${events.map((e) => e.type).join(' ')}`);
  assert.equal(acquired.attempt, 1);
  assert.equal(acquired.quorum, 3);
  assert.equal(acquired.nodeCount, 5);
  assert.ok(acquired.nodesOk >= 3);
  assert.ok(acquired.validityMs > 4000 && acquired.validityMs <= 5000, `${acquired.validityMs}`);
  assert.equal(acquired.fencingToken, lock.fencingToken);
  assert.ok(acquired.elapsedUs > 0);
  assert.equal(acquired.code, null);
  assert.equal(acquired.nodeRttsUs.length, 5);
  const done = await until(events, (e) => e.type === 'acquire-done' && e.resource === r);
  assert.ok(done && done.attempt === 1 && done.errno === 0);
  const ext = await until(events, (e) => e.type === 'extended' && e.resource === r);
  assert.ok(ext && ext.automatic === false && ext.validityMs > 5000);
  const rel = await until(events, (e) => e.type === 'released' && e.resource === r);
  assert.ok(rel && rel.heldUs > 0, 'released, with how long it was held');
  // contention: a failed attempt, with its code
  const held = await redlock.acquire(r, 5000);
  await redlock.acquire(r, 1000, { retryCount: 0 }).catch(() => {});
  const failed = await until(events, (e) => e.type === 'acquire-failed' && e.resource === r);
  assert.ok(failed, 'acquire-failed');
  assert.equal(failed.code, 'REDLOCK_ENOTACQUIRED');
  assert.equal(failed.errno, -3);
  await held.release();
  // no listener: nothing more is told
  redlock.off('metrics', fn);
  const n = events.length;
  const l2 = await redlock.acquire(uniq('quiet'), 1000);
  await l2.release();
  await sleep(100);
  assert.equal(events.length, n, 'nothing after the last listener went');
});

test('a node that fails in a round is told as a node-error naming it', async () => {
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  const events = [];
  rl.on('metrics', (e) => events.push(e));
  await ctl('KILL', 4);
  try {
    const lock = await rl.acquire(uniq('metricsnode'), 5000);
    await lock.release();
    const e = await until(events, (x) => x.type === 'node-error' && x.node === urls[4]);
    assert.ok(e, `events: ${events.map((x) => `${x.type}:${x.node}`).join(' ')}`);
    assert.ok(['error', 'down', 'timeout'].includes(e.nodeOutcome), e.nodeOutcome);
    assert.ok(e.message.length > 0);
  } finally {
    await ctl('START', 4);
    await rl.quit();
  }
});

test('the semaphore, the read-write lock and elections are told too', async () => {
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  const events = [];
  rl.on('metrics', (e) => events.push(e));
  try {
    const [s, w, e] = [uniq('msem'), uniq('mrw'), uniq('mel')];
    await (await rl.semaphore(s, 2).acquire(2000)).release();
    await (await rl.rwlock(w).acquireWrite(2000)).release();
    await (await rl.election(e).campaign('x')).resign();
    for (const r of [s, w, e]) {
      assert.ok(await until(events, (x) => x.type === 'acquired' && x.resource === r), `acquired ${r}`);
      assert.ok(await until(events, (x) => x.type === 'released' && x.resource === r), `released ${r}`);
    }
  } finally {
    await rl.quit();
  }
});
