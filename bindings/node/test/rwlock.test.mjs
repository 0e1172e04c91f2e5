// SPDX-License-Identifier: BSD-3-Clause
// The read-write lock on real nodes: readers share, a writer is alone (no reader, no other
// writer, no mutex of the name), never a writer with readers under contention from two
// clients, downgrade, usingRead/usingWrite, aborts mid-wait on either side, and bad input.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redlock, {
  RWLock, ReadLock, WriteLock, Lock, ResourceLockedError, AbortError, InvalidArgumentError, StateError,
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

test('readers share; a writer waits for them; a writer excludes readers, writers and the mutex', async () => {
  const name = uniq('rw');
  const rw = redlock.rwlock(name);
  const rw2 = other.rwlock(name);
  assert.ok(rw instanceof RWLock);
  const r1 = await rw.acquireRead(5000);
  const r2 = await rw2.acquireRead(5000);
  assert.ok(r1 instanceof ReadLock && r1 instanceof Lock);
  assert.equal(r1.mode, 'read');
  assert.deepEqual(r1.resources, [name]);
  assert.ok(r1.isHeld && r2.isHeld);
  assert.ok(await rw2.acquireWrite(1000).then(() => false, (e) => e instanceof ResourceLockedError), 'no writer with readers');
  await Promise.all([r1.release(), r2.release()]);

  const w = await rw.acquireWrite(5000);
  assert.ok(w instanceof WriteLock);
  assert.equal(w.mode, 'write');
  assert.ok(await rw2.acquireRead(1000).then(() => false, (e) => e instanceof ResourceLockedError), 'no reader with a writer');
  assert.ok(await rw2.acquireWrite(1000).then(() => false, (e) => e instanceof ResourceLockedError), 'no second writer');
  assert.ok(await other.acquire(name, 1000).then(() => false, (e) => e instanceof ResourceLockedError), 'no mutex with a writer');
  await w.extend(8000);
  assert.ok(w.validityMs > 7000);
  await w.release();
  const m = await other.acquire(name, 1000);
  assert.ok(await rw2.acquireWrite(1000).then(() => false, (e) => e instanceof ResourceLockedError), 'no writer with the mutex');
  await m.release();
});

test('under contention from two clients, never a writer with readers or another writer', async () => {
  const name = uniq('rwc');
  const rls = [redlock, new Redlock(urls, { nodeTimeout: 500 })];
  let readers = 0;
  let writers = 0;
  let mostReaders = 0;
  let writes = 0;
  const wait = { retryCount: -1, retryDelay: 20, retryJitter: 10 };
  const reader = async (rl, i) => {
    const rw = rl.rwlock(name, wait);
    for (let k = 0; k < 6; k++) {
      const l = await rw.acquireRead(5000);
      readers++;
      mostReaders = Math.max(mostReaders, readers);
      assert.equal(writers, 0, 'a reader while a writer holds the lock');
      await sleep(5 + ((i + k) % 10));
      readers--;
      await l.release();
    }
  };
  const writer = async (rl, i) => {
    const rw = rl.rwlock(name, wait);
    for (let k = 0; k < 4; k++) {
      const l = await rw.acquireWrite(5000);
      writers++;
      assert.equal(writers, 1, 'two writers at once');
      assert.equal(readers, 0, 'a writer while readers hold the lock');
      await sleep(5 + ((i + k) % 5));
      writers--;
      writes++;
      await l.release();
    }
  };
  try {
    await Promise.all([
      ...[...Array(6).keys()].map((i) => reader(rls[i % 2], i)),
      ...[...Array(2).keys()].map((i) => writer(rls[i % 2], i)),
    ]);
  } finally {
    await rls[1].quit();
  }
  assert.equal(writes, 8);
  assert.ok(mostReaders >= 2, `readers held the lock together (at most ${mostReaders})`);
});

test('downgrade: the writer becomes a reader, with no writer in between', async () => {
  const name = uniq('rwd');
  const w = await redlock.rwlock(name).acquireWrite(5000);
  const same = await w.downgrade();
  assert.equal(same, w);
  assert.equal(w.mode, 'read');
  assert.ok(w.isHeld);
  const r = await other.rwlock(name).acquireRead(1000);
  assert.ok(await other.rwlock(name).acquireWrite(1000).then(() => false, (e) => e instanceof ResourceLockedError));
  await rejects(w.downgrade(), StateError, 'REDLOCK_ESTATE', /already downgraded/);
  await Promise.all([w.release(), r.release()]);
  const r2 = await redlock.rwlock(name).acquireRead(1000);
  assert.equal(typeof r2.downgrade, 'undefined', 'a read lock is never upgraded or downgraded');
  await r2.release();
});

test('an AbortSignal ends a waiting reader or writer within 200 ms', async () => {
  const name = uniq('rwabort');
  const waiter = new Redlock(urls, { nodeTimeout: 500 });
  try {
    for (const [holdWrite, waitWrite] of [[true, false], [false, true], [true, true]]) {
      const rw = redlock.rwlock(name);
      const held = holdWrite ? await rw.acquireWrite(10000) : await rw.acquireRead(10000);
      const ac = new AbortController();
      const wrw = waiter.rwlock(name, { retryCount: -1 });
      const p = (waitWrite ? wrw.acquireWrite(5000, { signal: ac.signal }) : wrw.acquireRead(5000, { signal: ac.signal }))
        .then(() => null, (e) => e);
      await sleep(300);
      const t0 = Date.now();
      ac.abort();
      const err = await p;
      const took = Date.now() - t0;
      const what = `${waitWrite ? 'writer' : 'reader'} waiting on a ${holdWrite ? 'writer' : 'reader'}`;
      assert.ok(err instanceof AbortError, `${what}: ${err}`);
      assert.ok(took < 200, `${what}: ended ${took} ms after the abort`);
      await held.release();
    }
  } finally {
    await waiter.quit();
  }
});

test('a waiting writer gets the lock when the last reader leaves', async () => {
  const name = uniq('rwhand');
  const rw = redlock.rwlock(name);
  const [r1, r2] = [await rw.acquireRead(10000), await rw.acquireRead(10000)];
  const p = other.rwlock(name).acquireWrite(5000, { retryCount: -1, retryDelay: 50, retryJitter: 20 });
  await sleep(200);
  await r1.release();
  await sleep(200);
  let done = false;
  p.then(() => { done = true; }, () => {});
  await sleep(50);
  assert.equal(done, false, 'not while a reader holds it');
  const t0 = Date.now();
  await r2.release();
  const w = await p;
  assert.ok(Date.now() - t0 < 500, 'soon after the last reader');
  await w.release();
});

test('usingRead and usingWrite extend and release', async () => {
  const name = uniq('rwusing');
  const rw = redlock.rwlock(name);
  const out = await rw.usingWrite(1000, { automaticExtensionThreshold: 300 }, async (signal) => {
    await sleep(1500);
    assert.equal(signal.aborted, false);
    assert.ok(await other.rwlock(name).acquireRead(1000).then(() => false, (e) => e instanceof ResourceLockedError));
    return 'w';
  });
  assert.equal(out, 'w');
  const both = await Promise.all([
    rw.usingRead(2000, async () => { await sleep(200); return 1; }),
    other.rwlock(name).usingRead(2000, async () => { await sleep(200); return 2; }),
  ]);
  assert.deepEqual(both, [1, 2]);
  const w = await other.rwlock(name).acquireWrite(1000);
  await w.release();
  await rejects(rw.usingRead(1000), InvalidArgumentError, 'REDLOCK_EINVAL', /usingRead\(\) needs a routine/);
});

test('bad input gets a clear error', async () => {
  for (const name of ['', 'a\0b', 5, undefined]) {
    let err = null;
    try { redlock.rwlock(name); } catch (e) { err = e; }
    assert.ok(err instanceof InvalidArgumentError, `${name}: ${err}`);
    assert.match(err.message, /read-write lock name/);
  }
  const rw = redlock.rwlock(uniq('bad'));
  for (const d of [0, NaN, 1.5, '1000', 86400001]) {
    await rejects(rw.acquireRead(d), InvalidArgumentError, 'REDLOCK_EINVAL', /duration must be an integer/);
    await rejects(rw.acquireWrite(d), InvalidArgumentError, 'REDLOCK_EINVAL', /duration must be an integer/);
  }
  await rejects(rw.acquireWrite(1000, { retryDelay: -1 }), InvalidArgumentError, 'REDLOCK_EINVAL', /retryDelay/);
  await rejects(redlock.rwlock('x'.repeat(5000)).acquireRead(1000), InvalidArgumentError, 'REDLOCK_EINVAL', /4096/);
  const rl = new Redlock(urls);
  await rl.quit();
  await rejects(rl.rwlock(uniq('q')).acquireWrite(1000), StateError, 'REDLOCK_ESTATE', /quit/);
});
