// SPDX-License-Identifier: BSD-3-Clause
// node-redlock v5's API on real nodes: acquire, extend, release, several resources, contention
// told with the per-node report, the "error" event, cancelling with an AbortSignal, quit().
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import Redlock, {
  ExecutionError, ResourceLockedError, AbortError, LockLostError, StateError,
} from '../lib/index.mjs';
import { nodeUrls, uniq, sleep, ctl } from './helpers.mjs';

const urls = nodeUrls();
const redlock = new Redlock(urls, { nodeTimeout: 500 });
const other = new Redlock(urls, { nodeTimeout: 500, retryCount: 3, retryDelay: 40, retryJitter: 10 });
after(async () => { await redlock.quit(); await other.quit(); });

test('the package has both entry points, of the same classes', () => {
  const require = createRequire(import.meta.url);
  const cjs = require('../lib/index.cjs');
  assert.equal(cjs, Redlock);
  assert.equal(cjs.default, Redlock);
  assert.equal(cjs.ResourceLockedError, ResourceLockedError);
  assert.ok(new ResourceLockedError('x') instanceof ExecutionError);
});

test('acquire, extend, release', async () => {
  const r = uniq('basic');
  const t0 = Date.now();
  const lock = await redlock.acquire([r], 5000);
  assert.deepEqual(lock.resources, [r]);
  assert.ok(lock.isHeld);
  assert.ok(lock.expiration > t0 + 4800 && lock.expiration <= Date.now() + 5000, `expiration ${lock.expiration - t0}`);
  assert.equal(lock.attempts.length, 1);
  const a = await lock.attempts[0];
  assert.equal(a, lock.report);
  assert.equal(a.membershipSize, 5);
  assert.equal(a.quorumSize, 3);
  assert.ok(a.votesFor.size >= 3, 'a quorum voted for');
  assert.equal(a.nodes.length, 5);
  // the key is on the nodes, with the TTL asked for
  const ttls = await Promise.all(urls.map((_, i) => ctl('CMD', i, 'PTTL', r)));
  assert.ok(ttls.filter((t) => t > 4000 && t <= 5000).length >= 3, `PTTL ${ttls}`);

  const same = await lock.extend(20000);
  assert.equal(same, lock);
  assert.ok(lock.expiration > Date.now() + 19000, 'extended');
  const res = await lock.release();
  assert.equal((await res.attempts[0]).votesFor.size >= 3, true);
  assert.equal(lock.isHeld, false);
  const left = await Promise.all(urls.map((_, i) => ctl('CMD', i, 'EXISTS', r)));
  assert.deepEqual(left, [0, 0, 0, 0, 0]);
  // a released lock is free for another client at once
  const again = await other.acquire(r, 1000, { retryCount: 0 });
  await again.release();
});

test('contention: ResourceLockedError with each node\'s answer, after retryCount retries', async () => {
  const r = uniq('busy');
  const lock = await redlock.acquire(r, 10000);
  const t0 = Date.now();
  const err = await other.acquire(r, 1000).then(() => null, (e) => e);
  const took = Date.now() - t0;
  const why = `${err && err.message}`;
  assert.ok(err instanceof ResourceLockedError, `got ${err}`);
  assert.ok(err instanceof ExecutionError);
  assert.equal(err.code, 'REDLOCK_ENOTACQUIRED');
  assert.equal(err.errno, -3);
  assert.match(err.message, /lock not acquired/);
  assert.match(err.message, /after 4 attempts/);
  assert.ok(took >= 3 * 30 && took < 2000, `3 retries of 30-50 ms took ${took} ms`);
  const a = await err.attempts[0];
  assert.equal(a, err.report);
  assert.equal(a.votesFor.size, 0, why);
  assert.ok(a.votesAgainst.size >= 3, why);
  for (const e of a.votesAgainst.values()) assert.ok(e instanceof ResourceLockedError, `${e}`);
  assert.ok(a.nodes.some((n) => n.outcome === 'refused' && urls.includes(n.node) && n.rttUs > 0), why);
  // retryCount 0: one attempt
  const one = await other.acquire(r, 1000, { retryCount: 0 }).then(() => null, (e) => e);
  assert.ok(one instanceof ResourceLockedError, `${one}`);
  assert.doesNotMatch(one.message, /attempts/);
  await lock.release();
  // a second release: not ours any more
  const twice = await lock.release().then(() => null, (e) => e);
  assert.ok(twice instanceof ExecutionError, `second release: ${twice}`);
  assert.ok(twice instanceof StateError || twice instanceof LockLostError, `${twice}`);
});

test('several resources are one lock, all or none', async () => {
  const [r1, r2] = [uniq('m1'), uniq('m2')];
  const lock = await redlock.acquire([r1, r2], 5000);
  assert.deepEqual(lock.resources, [r1, r2]);
  const e1 = await other.acquire(r2, 1000, { retryCount: 0 }).then(() => null, (e) => e);
  assert.ok(e1 instanceof ResourceLockedError);
  const e2 = await other.acquire([uniq('m3'), r1], 1000, { retryCount: 0 }).then(() => null, (e) => e);
  assert.ok(e2 instanceof ResourceLockedError);
  await lock.release();
  const l2 = await other.acquire([r2, r1], 1000, { retryCount: 0 });
  await l2.release();
});

test('an AbortSignal cancels a waiting acquire at once', async () => {
  const r = uniq('abort');
  const lock = await redlock.acquire(r, 10000);
  const ac = new AbortController();
  const t0 = Date.now();
  const p = other.acquire(r, 1000, { retryCount: -1, signal: ac.signal }).then(() => null, (e) => e);
  await sleep(300);
  ac.abort();
  const err = await p;
  const took = Date.now() - t0;
  assert.ok(err instanceof AbortError, `got ${err}`);
  assert.equal(err.code, 'REDLOCK_ECANCELED');
  assert.ok(took < 300 + 250, `cancelled after ${took - 300} ms`);
  // already aborted: refused without a round
  const pre = await other.acquire(r, 1000, { signal: ac.signal }).then(() => null, (e) => e);
  assert.ok(pre instanceof AbortError);
  await lock.release();
});

test('retryCount -1 waits until the holder releases', async () => {
  const r = uniq('forever');
  const lock = await redlock.acquire(r, 30000);
  const t0 = Date.now();
  const p = other.acquire(r, 1000, { retryCount: -1 });
  await sleep(500);
  await lock.release();
  const l2 = await p;
  const took = Date.now() - t0;
  assert.ok(took >= 500 && took < 500 + 400, `acquired ${took - 500} ms after the release`);
  await l2.release();
});

test('the "error" event hears of a failing node, the lock still held by quorum', async () => {
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  const seen = [];
  rl.on('error', (e) => seen.push(e));
  await ctl('KILL', 4);
  try {
    const lock = await rl.acquire(uniq('evt'), 5000);
    assert.ok(lock.report.votesFor.size >= 3);
    const down = lock.report.nodes[4];
    assert.notEqual(down.outcome, 'ok');
    assert.ok(lock.report.votesAgainst.has(urls[4]));
    await lock.release();
  } finally {
    await ctl('START', 4);
    await rl.quit();
  }
  assert.ok(seen.length >= 1, 'an error event for the stopped node');
  assert.ok(seen.every((e) => e instanceof ExecutionError && !(e instanceof ResourceLockedError)));
  assert.ok(seen.some((e) => e.message.includes(urls[4].replace(/^redis:\/\//, ''))), seen.map(String).join('\n'));
});

test('quit() cancels waiting acquires and refuses later calls', async () => {
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  const r = uniq('quit');
  const lock = await redlock.acquire(r, 10000);
  const p = rl.acquire(r, 1000, { retryCount: -1 }).then(() => null, (e) => e);
  await sleep(100);
  const t0 = Date.now();
  await rl.quit();
  const err = await p;
  assert.ok(err instanceof AbortError, `got ${err}`);
  assert.ok(Date.now() - t0 < 500);
  const late = await rl.acquire(r, 1000).then(() => null, (e) => e);
  assert.ok(late instanceof StateError, `got ${late}`);
  await rl.quit(); // twice is fine
  await lock.release();
});
