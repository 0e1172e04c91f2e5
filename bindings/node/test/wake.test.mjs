// SPDX-License-Identifier: BSD-3-Clause
// Wake-up and fair mode (docs/algorithm.md, "Waking waiters"), for a Redlock or one acquire:
// a woken waiter has the lock long before its next poll would come; in fair mode waiters get
// it in the order they began to wait, and a holder coming straight back does not barge in;
// contradictory settings are refused.
//
// A client that saw a node fail within 3 s wakes nobody and orders nobody: it polls, as
// documented ("When the queue is not trusted"). A round in which a client heard of a failing
// node (a 'node-error' metrics event: on a loaded machine, a reply past nodeTimeout) is
// therefore not judged, and is run again, up to 4 times; a round without one must pass.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redlock, { InvalidArgumentError, ResourceLockedError } from '../lib/index.mjs';
import { nodeUrls, uniq, sleep } from './helpers.mjs';

const urls = nodeUrls();
const holder = new Redlock(urls, { nodeTimeout: 500 });
// Polling alone would ask every 5 s: a quick hand-over is the wake-up's.
const slow = { nodeTimeout: 500, retryCount: -1, retryDelay: 5000, retryJitter: 0 };
const polling = new Redlock(urls, slow);
const waking = new Redlock(urls, { ...slow, wake: true });
after(async () => { await holder.quit(); await polling.quit(); await waking.quit(); });

// Runs round() until it passes in a round where no client heard of a failing node.
async function judged(clients, round) {
  const failures = [];
  const hear = (e) => { if (e.type === 'node-error' && e.nodeOutcome !== 'quarantined') failures.push(e); };
  for (const c of clients) c.on('metrics', hear);
  try {
    for (let k = 1; ; k++) {
      failures.length = 0;
      const err = await round().then(() => null, (e) => e);
      if (!err) return;
      if (failures.length === 0 || k === 4) throw err;
      console.log(`# round ${k} not judged (${failures.length} node errors: ${failures[0].message}): ${err.message}`);
    }
  } finally {
    for (const c of clients) c.off('metrics', hear);
  }
}

async function handOver(redlock, settings) {
  const name = uniq('wake');
  const lock = await holder.acquire(name, 30000);
  const got = redlock.acquire(name, 5000, settings).then((l) => ({ l, at: Date.now() }));
  await sleep(800);   // the waiter's first attempts are refused: it registers, then sleeps
  const released = Date.now();
  await lock.release();
  const { l, at } = await got;
  await l.release();
  return at - released;
}

test('wake: the release wakes the waiter, for the Redlock or for one acquire', async () => {
  // Beyond 1.5 s would be the next poll (5 s after the refusal), or the wake-up's own fallback.
  await judged([holder, waking], async () => {
    const ms = await handOver(waking);
    assert.ok(ms < 1500, `wake: true for the Redlock: woken ${ms} ms after the release`);
  });
  await judged([holder, polling], async () => {
    const ms = await handOver(polling, { wake: true });
    assert.ok(ms < 1500, `wake: true for the acquire: woken ${ms} ms after the release`);
  });
});

test('fair: waiters have the lock in the order they began to wait', async () => {
  const clients = [0, 1, 2].map(() => new Redlock(urls, { ...slow, fair: true }));
  try {
    await judged([holder, ...clients], async () => {
      const name = uniq('fair');
      const first = await holder.acquire(name, 30000, { fair: true });
      const order = [];
      const waits = clients.map(async (rl, i) => {
        await sleep(250 * i);   // begins to wait after the ones before it
        const l = await rl.acquire(name, 5000);
        order.push(i);
        await sleep(50);
        await l.release();
      });
      await sleep(1200);
      await first.release();
      // The holder coming straight back does not barge in: the lock is the queue's head's.
      const barge = await holder.acquire(name, 30000, { fair: true, retryCount: 0 }).then((l) => l, (e) => e);
      if (!(barge instanceof Error)) await barge.release();
      await Promise.all(waits);
      assert.ok(barge instanceof ResourceLockedError, `the holder came back: ${barge}`);
      assert.deepEqual(order, [0, 1, 2]);
    });
  } finally {
    await Promise.all(clients.map((rl) => rl.quit()));
  }
});

test('bad wake and fair settings; fair with wake: false is C\'s fair mode, which wakes', async () => {
  assert.throws(() => new Redlock(urls, { wake: 'yes' }), (e) => e instanceof InvalidArgumentError && /wake must be a boolean/.test(e.message));
  assert.throws(() => new Redlock(urls, { fair: 1 }), (e) => e instanceof InvalidArgumentError && /fair must be a boolean/.test(e.message));
  const err = await holder.acquire(uniq('w'), 1000, { wake: 0 }).then(() => null, (e) => e);
  assert.ok(err instanceof InvalidArgumentError && /wake must be a boolean/.test(err.message), `${err}`);
  // fair mode implies wake-up (redlock_flags_set_wake): a waiter that says wake: false is still
  // woken by the release, long before its 5 s poll
  await judged([holder, polling], async () => {
    const ms = await handOver(polling, { fair: true, wake: false });
    assert.ok(ms < 1500, `fair: true, wake: false: woken ${ms} ms after the release`);
  });
});
