// SPDX-License-Identifier: BSD-3-Clause
// using(): auto-extension past the first duration, and a lost lock told through the signal
// within its validity once every node has forgotten it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redlock, { LockLostError, ResourceLockedError, ExecutionError } from '../lib/index.mjs';
import { nodeUrls, uniq, sleep, onAll } from './helpers.mjs';

const urls = nodeUrls();
const redlock = new Redlock(urls, { nodeTimeout: 500 });
const other = new Redlock(urls, { nodeTimeout: 500, retryCount: 0 });
after(async () => { await redlock.quit(); await other.quit(); });

test('using() keeps the lock past its first duration, and releases it after', async () => {
  const r = uniq('using');
  const result = await redlock.using([r], 1000, { automaticExtensionThreshold: 300 }, async (signal) => {
    await sleep(2600);
    assert.equal(signal.aborted, false);
    // still ours: nobody else can take it
    const e = await other.acquire(r, 1000).then(() => null, (x) => x);
    assert.ok(e instanceof ResourceLockedError, `still held after 2.6 durations: ${e}`);
    return 42;
  });
  assert.equal(result, 42);
  const l = await other.acquire(r, 1000);
  await l.release();
});

test('using() with the settings left out, and a routine that throws', async () => {
  const r = uniq('throws');
  await assert.rejects(redlock.using(r, 2000, async () => { throw new Error('boom'); }), /boom/);
  const l = await other.acquire(r, 1000);
  await l.release();
});

test('every node flushed: the signal tells the loss within the lock\'s validity', async () => {
  const r = uniq('flushed');
  const duration = 3000;
  const seen = [];
  redlock.on('error', (e) => seen.push(e));
  let flushedAt = 0;
  let abortedAt = 0;
  const out = await redlock.using(r, duration, async (signal) => {
    signal.addEventListener('abort', () => { abortedAt = Date.now(); });
    await sleep(200);
    await onAll('FLUSHALL');
    flushedAt = Date.now();
    while (!signal.aborted && Date.now() - flushedAt < duration + 2000) await sleep(20);
    return { aborted: signal.aborted, error: signal.error, reason: signal.reason };
  });
  redlock.removeAllListeners('error');
  assert.equal(out.aborted, true, 'the signal was aborted');
  assert.ok(out.error instanceof LockLostError || out.error instanceof ExecutionError, `${out.error}`);
  assert.ok(['REDLOCK_ELOST', 'REDLOCK_EATRISK', 'REDLOCK_EEXPIRED'].includes(out.error.code), out.error.code);
  assert.equal(out.reason, out.error);
  const after = abortedAt - flushedAt;
  assert.ok(after >= 0 && after < duration, `told ${after} ms after the flush; the validity was ${duration} ms`);
  assert.ok(seen.includes(out.error), 'the "error" event heard it too');
});
