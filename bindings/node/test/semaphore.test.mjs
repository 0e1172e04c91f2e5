// SPDX-License-Identifier: BSD-3-Clause
// The semaphore on real nodes: permits up to the limit, never more than the limit held at once
// under contention from two clients, several permits at once, using(), an abort mid-wait, and
// bad input.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redlock, {
  Semaphore, Permit, Lock, ResourceLockedError, AbortError, InvalidArgumentError, StateError,
} from '../lib/index.mjs';
import { nodeUrls, uniq, sleep } from './helpers.mjs';

const urls = nodeUrls();
const redlock = new Redlock(urls, { nodeTimeout: 500 });
const other = new Redlock(urls, { nodeTimeout: 500, retryCount: 0 });
after(async () => { await redlock.quit(); await other.quit(); });

async function rejects(p, Cls, code, re) {
  const err = await p.then(() => null, (e) => e);
  assert.ok(err instanceof Cls, `expected ${Cls.name}, got ${err && err.stack}`);
  assert.equal(err.code, code);
  if (re) assert.match(err.message, re);
  return err;
}

function throwsSync(fn, Cls, code, re) {
  let err = null;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err instanceof Cls, `expected ${Cls.name}, got ${err && err.stack}`);
  assert.equal(err.code, code);
  if (re) assert.match(err.message, re);
}

test('permits up to the limit, then contention; a release frees one', async () => {
  const name = uniq('sem');
  const sem = redlock.semaphore(name, 2);
  assert.ok(sem instanceof Semaphore);
  assert.equal(sem.limit, 2);
  const a = await sem.acquire(5000);
  const b = await sem.acquire(5000);
  assert.ok(a instanceof Permit && a instanceof Lock);
  assert.equal(a.permits, 1);
  assert.equal(a.limit, 2);
  assert.deepEqual(a.resources, [name]);
  assert.ok(a.isHeld && b.isHeld);
  assert.ok(a.report.votesFor.size >= 3);
  const full = await other.semaphore(name, 2).acquire(1000).then(() => null, (e) => e);
  assert.ok(full instanceof ResourceLockedError, `a third permit: ${full}`);
  await a.extend(8000);
  assert.ok(a.validityMs > 7000);
  await a.release();
  assert.equal(a.isHeld, false);
  const c = await other.semaphore(name, 2).acquire(1000);
  await Promise.all([b.release(), c.release()]);
});

test('several permits at once, all or none', async () => {
  const name = uniq('semn');
  const sem = redlock.semaphore(name, 3);
  const two = await sem.acquire(5000, { permits: 2 });
  assert.equal(two.permits, 2);
  const e = await other.semaphore(name, 3).acquire(1000, { permits: 2 }).then(() => null, (x) => x);
  assert.ok(e instanceof ResourceLockedError, `2 more of 3 with 2 held: ${e}`);
  const one = await other.semaphore(name, 3).acquire(1000);
  await Promise.all([two.release(), one.release()]);
});

test('under contention from two clients, never more than the limit at once', async () => {
  const name = uniq('semc');
  const LIMIT = 3;
  const rls = [redlock, new Redlock(urls, { nodeTimeout: 500 })];
  let inside = 0;
  let most = 0;
  let cycles = 0;
  const worker = async (rl, i) => {
    const sem = rl.semaphore(name, LIMIT, { retryCount: -1, retryDelay: 20, retryJitter: 10 });
    for (let k = 0; k < 6; k++) {
      const p = await sem.acquire(5000);
      inside++;
      most = Math.max(most, inside);
      assert.ok(inside <= LIMIT, `${inside} holders of a semaphore of ${LIMIT}`);
      await sleep(5 + ((i * 7 + k * 3) % 15));
      inside--;
      cycles++;
      await p.release();
    }
  };
  try {
    await Promise.all([...Array(10).keys()].map((i) => worker(rls[i % 2], i)));
  } finally {
    await rls[1].quit();
  }
  assert.equal(cycles, 60);
  assert.equal(most, LIMIT, `the permits were all in use at some point (most ${most})`);
});

test('an AbortSignal ends a waiting acquire within 200 ms', async () => {
  const name = uniq('semabort');
  const held = await redlock.semaphore(name, 1).acquire(10000);
  const waiter = new Redlock(urls, { nodeTimeout: 500 });
  try {
    const ac = new AbortController();
    const p = waiter.semaphore(name, 1).acquire(5000, { retryCount: -1, signal: ac.signal }).then(() => null, (e) => e);
    await sleep(300);
    const t0 = Date.now();
    ac.abort();
    const err = await p;
    const took = Date.now() - t0;
    assert.ok(err instanceof AbortError, `got ${err}`);
    assert.equal(err.code, 'REDLOCK_ECANCELED');
    assert.ok(took < 200, `ended ${took} ms after the abort`);
    const pre = await waiter.semaphore(name, 1).acquire(5000, { signal: ac.signal }).then(() => null, (e) => e);
    assert.ok(pre instanceof AbortError, 'an aborted signal is refused before any round');
  } finally {
    await waiter.quit();
    await held.release();
  }
});

test('a waiting acquire gets the permit when one is released', async () => {
  const name = uniq('semwait');
  const sem = redlock.semaphore(name, 1);
  const held = await sem.acquire(10000);
  const t0 = Date.now();
  const p = other.semaphore(name, 1).acquire(5000, { retryCount: -1, retryDelay: 50, retryJitter: 20 });
  await sleep(300);
  await held.release();
  const got = await p;
  assert.ok(Date.now() - t0 < 300 + 500, 'acquired soon after the release');
  await got.release();
});

test('using() extends the permit past its duration and releases it', async () => {
  const name = uniq('semusing');
  const sem = redlock.semaphore(name, 1);
  const out = await sem.using(1000, { automaticExtensionThreshold: 300 }, async (signal) => {
    await sleep(1600);
    assert.equal(signal.aborted, false);
    const e = await other.semaphore(name, 1).acquire(1000).then(() => null, (x) => x);
    assert.ok(e instanceof ResourceLockedError, `still held: ${e}`);
    return 7;
  });
  assert.equal(out, 7);
  const p = await other.semaphore(name, 1).acquire(1000);
  await p.release();
  await rejects(sem.using(1000, {}), InvalidArgumentError, 'REDLOCK_EINVAL', /routine/);
});

test('fencing tokens of a semaphore increase', async () => {
  const rl = new Redlock(urls, { nodeTimeout: 500, fencing: true });
  try {
    const sem = rl.semaphore(uniq('semfence'), 2);
    const a = await sem.acquire(5000);
    const b = await sem.acquire(5000);
    assert.equal(typeof a.fencingToken, 'bigint');
    assert.ok(a.fencingToken > 0n && b.fencingToken > a.fencingToken, `${a.fencingToken} ${b.fencingToken}`);
    await Promise.all([a.release(), b.release()]);
  } finally {
    await rl.quit();
  }
});

test('bad input gets a clear error', async () => {
  for (const limit of [0, -1, 1.5, 1001, NaN, '3', undefined]) {
    throwsSync(() => redlock.semaphore(uniq('bad'), limit), InvalidArgumentError, 'REDLOCK_EINVAL', /limit must be an integer from 1 to 1000/);
  }
  for (const name of ['', 'a\0b', 5, null]) {
    throwsSync(() => redlock.semaphore(name, 2), InvalidArgumentError, 'REDLOCK_EINVAL', /semaphore name/);
  }
  throwsSync(() => redlock.semaphore(uniq('bad'), 2, { retryCount: 'x' }), InvalidArgumentError, 'REDLOCK_EINVAL', /retryCount/);
  const sem = redlock.semaphore(uniq('bad'), 2);
  for (const permits of [0, 3, 1.5, '1']) {
    await rejects(sem.acquire(1000, { permits }), InvalidArgumentError, 'REDLOCK_EINVAL', /permits must be an integer from 1 to the limit, 2/);
  }
  for (const d of [0, -1, NaN, 1.5, 86400001, '1000']) {
    await rejects(sem.acquire(d), InvalidArgumentError, 'REDLOCK_EINVAL', /duration must be an integer/);
  }
  await rejects(sem.acquire(1000, { signal: 'no' }), InvalidArgumentError, 'REDLOCK_EINVAL', /AbortSignal/);
  await rejects(redlock.semaphore('x'.repeat(5000), 2).acquire(1000), InvalidArgumentError, 'REDLOCK_EINVAL', /4096/);
  // another limit on a semaphore in use: refused, naming both
  const name = uniq('limits');
  const held = await redlock.semaphore(name, 3).acquire(5000);
  const err = await rejects(other.semaphore(name, 2).acquire(1000), InvalidArgumentError, 'REDLOCK_EINVAL');
  assert.match(err.message, /3/);
  assert.match(err.message, /2/);
  await held.release();
  // after quit()
  const rl = new Redlock(urls);
  await rl.quit();
  await rejects(rl.semaphore(uniq('q'), 2).acquire(1000), StateError, 'REDLOCK_ESTATE', /quit/);
});
