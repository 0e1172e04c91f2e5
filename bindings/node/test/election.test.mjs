// SPDX-License-Identifier: BSD-3-Clause
// Leader election on real nodes: one leader among several campaigners on two clients, resign
// handing over to exactly one other, terms increasing; observers that see the changes and end
// cleanly on break, close(), an abort and their timeout; an abort or a timeout mid-campaign;
// a lost leadership told through its signal; quit(); bad input.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import Redlock, {
  Election, Leadership, Observer, AbortError, LockTimeoutError, InvalidArgumentError, StateError, ExecutionError,
} from '../lib/index.mjs';
import { nodeUrls, uniq, sleep, onAll } from './helpers.mjs';

const urls = nodeUrls();
const redlock = new Redlock(urls, { nodeTimeout: 500 });
const other = new Redlock(urls, { nodeTimeout: 500 });
after(async () => { await redlock.quit(); await other.quit(); });

async function rejects(p, Cls, code, re) {
  const err = await p.then(() => null, (e) => e);
  assert.ok(err instanceof Cls, `expected ${Cls.name}, got ${err && err.stack}`);
  assert.equal(err.code, code);
  if (re) assert.match(err.message, re);
  return err;
}

test('one leader among several campaigners; each resign hands over to exactly one', async () => {
  const name = uniq('elect');
  const N = 5;
  const elections = [...Array(N).keys()].map((i) => (i % 2 ? other : redlock).election(name));
  assert.ok(elections[0] instanceof Election);
  const won = new Map();   // index -> Leadership
  const campaigns = elections.map((e, i) => e.campaign(`c${i}`).then((l) => { won.set(i, l); return l; }));
  let terms = [];
  for (let round = 0; round < N; round++) {
    const t0 = Date.now();
    // A resign wakes the next campaigner at once; a client that saw a node fail within 3 s
    // wakes nobody, and the waiter then asks by its fallback, within 5 s (docs/algorithm.md,
    // "When the queue is not trusted"): the hand-over's speed is test_wake's, not this test's.
    while (won.size < round + 1 && Date.now() - t0 < 6000) await sleep(10);
    await sleep(150);   // time for a second leader, were there one
    assert.equal(won.size, round + 1, `round ${round}: ${won.size} campaigns have won`);
    const leaders = elections.filter((e) => e.isLeader);
    assert.equal(leaders.length, 1, `round ${round}: ${leaders.length} leaders`);
    const i = elections.indexOf(leaders[0]);
    const l = won.get(i);
    assert.ok(l instanceof Leadership);
    assert.equal(l.isLeader, true);
    assert.equal(leaders[0].leadership, l);
    assert.ok(l.validityMs > 5000);
    terms.push(l.term);
    // anyone reads the same leader
    const seen = await elections[(i + 1) % N].leader();
    assert.deepEqual(seen, { present: true, term: l.term, revision: 1, value: `c${i}` });
    await l.resign();
    assert.equal(l.isLeader, false);
    assert.equal(leaders[0].isLeader, false);
  }
  await Promise.all(campaigns);
  for (let k = 1; k < terms.length; k++) assert.ok(terms[k] > terms[k - 1], `terms ${terms.join(', ')}`);
  const none = await elections[0].leader();
  assert.equal(none.present, false);
  assert.equal(none.term, terms[N - 1], 'with no leader, the last term');
  assert.equal(none.value, null);
  terms = null;
});

test('an election that never had a leader', async () => {
  const leader = await redlock.election(uniq('never')).leader();
  assert.deepEqual(leader, { present: false, term: 0n, revision: 0, value: null });
});

test('an observer sees each change in term order, as an async iterator', async () => {
  const name = uniq('observe');
  const [a, b] = [redlock.election(name), other.election(name)];
  const obs = redlock.election(name).observe();
  assert.ok(obs instanceof Observer);
  const seen = [];
  const loop = (async () => {
    for await (const leader of obs) {
      seen.push(leader);
      if (!leader.present && leader.term > 1n) break;
    }
  })();
  await sleep(200);
  const la = await a.campaign('A');
  await sleep(300);
  await la.resign();
  await sleep(300);
  const lb = await b.campaign('B');
  await sleep(300);
  await lb.resign();
  await loop;
  assert.equal(obs.closed, true, 'break closed it');
  const shown = seen.map((l) => `${l.present ? l.value : 'none'}@${l.term}`).join(' ');
  assert.deepEqual(seen[0], { present: false, term: 0n, revision: 0, value: null }, shown);
  assert.ok(seen.some((l) => l.present && l.value === 'A' && l.term === la.term), shown);
  assert.ok(seen.some((l) => l.present && l.value === 'B' && l.term === lb.term), shown);
  assert.ok(lb.term > la.term);
  for (let k = 1; k < seen.length; k++) {
    const [p, c] = [seen[k - 1], seen[k]];
    assert.ok(c.term > p.term || (c.term === p.term && p.present && !c.present), `not in order: ${shown}`);
  }
  assert.deepEqual(seen[seen.length - 1], { present: false, term: lb.term, revision: 0, value: null });
});

test('proclaim: a new value in the same term, seen by readers and observers', async () => {
  const name = uniq('proclaim');
  const e = redlock.election(name);
  const obs = other.election(name).observe({ current: false });
  const seen = [];
  const loop = (async () => {
    for await (const leader of obs) {
      seen.push(leader);
      if (leader.present && leader.revision === 3) break;
    }
  })();
  await sleep(200);
  const l = await e.campaign('first');
  await l.proclaim('second');
  assert.deepEqual(await other.election(name).leader(), { present: true, term: l.term, revision: 2, value: 'second' });
  await l.proclaim('');   // an empty value is a value
  assert.deepEqual(await e.leader(), { present: true, term: l.term, revision: 3, value: '' });
  await loop;
  const shown = seen.map((x) => `${x.value}@${x.term}.${x.revision}`).join(' ');
  assert.ok(seen.every((x) => x.present && x.term === l.term), shown);
  for (let k = 1; k < seen.length; k++) assert.ok(seen[k].revision > seen[k - 1].revision, shown);
  assert.equal(seen[seen.length - 1].value, '', shown);
  // bad values, while leading: refused before any I/O, the record unchanged
  await rejects(l.proclaim(5), InvalidArgumentError, 'REDLOCK_EINVAL', /value must be a string/);
  await rejects(l.proclaim('a\0b'), InvalidArgumentError, 'REDLOCK_EINVAL', /NUL/);
  await rejects(l.proclaim('x'.repeat(1025)), InvalidArgumentError, 'REDLOCK_EINVAL', /1025 bytes, over the limit of 1024/);
  assert.equal((await e.leader()).revision, 3);
  await l.resign();
  // after the term: a StateError, nothing written
  await rejects(l.proclaim('late'), StateError, 'REDLOCK_ESTATE', /already ended/);
  const after = await e.leader();
  assert.equal(after.present, false);
  assert.equal(after.term, l.term);
});

test('current: false waits for the first change; timeout ends the iteration', async () => {
  const name = uniq('quiet');
  const e = redlock.election(name);
  const l = await e.campaign('first');
  const obs = other.election(name).observe({ current: false, timeout: 300 });
  const t0 = Date.now();
  const items = [];
  for await (const leader of obs) items.push(leader);
  const took = Date.now() - t0;
  assert.deepEqual(items, [], 'no change within the timeout');
  assert.equal(obs.timedOut, true);
  assert.ok(took >= 280 && took < 1500, `ended after ${took} ms`);
  const next = other.election(name).observe({ current: false });
  const p = next.next();
  await sleep(200);
  await l.resign();
  const { value, done } = await p;
  assert.equal(done, false);
  assert.deepEqual(value, { present: false, term: l.term, revision: 0, value: null });
  await next.return();
  assert.deepEqual(await next.next(), { value: undefined, done: true });
});

test('an abort or close() ends a waiting observer cleanly within 200 ms', async () => {
  const name = uniq('obsabort');
  const e = redlock.election(name);
  // abort mid-wait: the loop just ends
  const ac = new AbortController();
  const items = [];
  let t0 = 0;
  const loop = (async () => { for await (const x of e.observe({ signal: ac.signal })) items.push(x); })();
  await sleep(300);
  t0 = Date.now();
  ac.abort();
  await loop;
  let took = Date.now() - t0;
  assert.ok(took < 200, `ended ${took} ms after the abort`);
  assert.equal(items.length, 1, 'the state now, then nothing');
  // an aborted signal: ends at once
  assert.deepEqual(await e.observe({ signal: ac.signal }).next(), { value: undefined, done: true });
  // close() from outside
  const obs = e.observe({ current: false });
  const p = obs.next();
  await sleep(300);
  t0 = Date.now();
  obs.close();
  assert.deepEqual(await p, { value: undefined, done: true });
  took = Date.now() - t0;
  assert.ok(took < 200, `ended ${took} ms after close()`);
});

test('a campaign is cancelled by its signal within 200 ms, or times out', async () => {
  const name = uniq('campabort');
  const leader = await redlock.election(name).campaign('holder');
  const e = other.election(name);
  const ac = new AbortController();
  const p = e.campaign('waiter', { signal: ac.signal }).then(() => null, (x) => x);
  await sleep(300);
  const t0 = Date.now();
  ac.abort();
  const err = await p;
  const took = Date.now() - t0;
  assert.ok(err instanceof AbortError, `got ${err}`);
  assert.ok(took < 200, `ended ${took} ms after the abort`);
  await rejects(e.campaign('waiter', { signal: ac.signal }), AbortError, 'REDLOCK_ECANCELED', /aborted before/);
  const t1 = Date.now();
  await rejects(e.campaign('waiter', { timeout: 300 }), LockTimeoutError, 'REDLOCK_ETIMEDOUT');
  assert.ok(Date.now() - t1 < 1000);
  // the same Election campaigns again after an abort: the cancel is not sticky
  const again = e.campaign('waiter');
  await sleep(100);
  await leader.resign();
  const l = await again;
  assert.ok(l.term > leader.term);
  await rejects(e.campaign('twice'), StateError, 'REDLOCK_ESTATE', /already leading/);
  await e.resign();
  await e.resign();   // nothing held: nothing to do
});

test('a lost leadership aborts its signal within its duration', async () => {
  const name = uniq('lost');
  const seen = [];
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  rl.on('error', (x) => seen.push(x));
  try {
    const e = rl.election(name, { duration: 1500 });
    const l = await e.campaign('doomed');
    let abortedAt = 0;
    l.signal.addEventListener('abort', () => { abortedAt = Date.now(); });
    await sleep(100);
    await onAll('FLUSHALL');
    const flushedAt = Date.now();
    while (!l.signal.aborted && Date.now() - flushedAt < 4000) await sleep(20);
    assert.equal(l.signal.aborted, true);
    assert.ok(abortedAt - flushedAt < 1500, `told ${abortedAt - flushedAt} ms after the flush`);
    assert.ok(l.signal.error instanceof ExecutionError, `${l.signal.error}`);
    assert.ok(['REDLOCK_ELOST', 'REDLOCK_EEXPIRED'].includes(l.signal.error.code), l.signal.error.code);
    assert.equal(l.signal.reason, l.signal.error);
    assert.equal(l.isLeader, false);
    assert.equal(e.leadership, null);
    assert.ok(seen.includes(l.signal.error), 'the "error" event heard it');
    await rejects(l.resign(), StateError, 'REDLOCK_ESTATE', /already ended/);
    // campaigns again
    const l2 = await e.campaign('back');
    await l2.resign();
  } finally {
    await rl.quit();
  }
});

test('quit() resigns the leadership, ends observers and cancels campaigns', async () => {
  const name = uniq('quit');
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  const l = await rl.election(name).campaign('leaving');
  const waiting = rl.election(name).campaign('never').then(() => null, (x) => x);
  const items = [];
  const loop = (async () => { for await (const x of rl.election(name).observe()) items.push(x); })();
  const watcher = redlock.election(name).observe({ current: false });
  const change = watcher.next();
  await sleep(300);
  const t0 = Date.now();
  await rl.quit();
  await loop;
  assert.ok(Date.now() - t0 < 1000);
  assert.ok((await waiting) instanceof AbortError);
  assert.equal(items.length, 1);
  const { value } = await change;
  assert.deepEqual(value, { present: false, term: l.term, revision: 0, value: null }, 'the leadership was resigned');
  watcher.close();
  assert.throws(() => rl.election(name), StateError);
});

test('bad input gets a clear error', async () => {
  for (const name of ['', 'a\0b', 7, null]) {
    assert.throws(() => redlock.election(name), (e) => e instanceof InvalidArgumentError && /election name/.test(e.message));
  }
  assert.throws(() => redlock.election('jobs:fencing'), (e) => e instanceof InvalidArgumentError && /:fencing/.test(e.message));
  assert.throws(() => redlock.election('x'.repeat(5000)), (e) => e instanceof InvalidArgumentError && /4096/.test(e.message));
  for (const duration of [0, -1, 1.5, 86400001, 'x']) {
    assert.throws(() => redlock.election(uniq('d'), { duration }), (e) => e instanceof InvalidArgumentError && /duration/.test(e.message));
  }
  const e = redlock.election(uniq('bad'));
  await rejects(e.campaign(5), InvalidArgumentError, 'REDLOCK_EINVAL', /value must be a string/);
  await rejects(e.campaign('a\0b'), InvalidArgumentError, 'REDLOCK_EINVAL', /NUL/);
  await rejects(e.campaign('é'.repeat(513)), InvalidArgumentError, 'REDLOCK_EINVAL', /1026 bytes, over the limit of 1024/);
  await rejects(e.campaign('v', { timeout: 0 }), InvalidArgumentError, 'REDLOCK_EINVAL', /timeout/);
  await rejects(e.campaign('v', { duration: 0 }), InvalidArgumentError, 'REDLOCK_EINVAL', /duration/);
  await rejects(e.campaign('v', { signal: {} }), InvalidArgumentError, 'REDLOCK_EINVAL', /AbortSignal/);
  await rejects(e.campaign('v', 'fast'), InvalidArgumentError, 'REDLOCK_EINVAL', /settings must be an object/);
  assert.throws(() => e.observe({ timeout: -5 }), (x) => x instanceof InvalidArgumentError && /timeout/.test(x.message));
  assert.throws(() => e.observe({ current: 'yes' }), (x) => x instanceof InvalidArgumentError && /current/.test(x.message));
  assert.throws(() => e.observe({ signal: 1 }), (x) => x instanceof InvalidArgumentError && /AbortSignal/.test(x.message));
  // a value of exactly 1024 bytes is fine
  const l = await e.campaign('v'.repeat(1024));
  assert.equal((await e.leader()).value.length, 1024);
  await l.resign();
});
