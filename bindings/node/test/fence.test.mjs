// SPDX-License-Identifier: BSD-3-Clause
// Fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting your store"): lock.fenced()
// and Fence over ioredis (installed at test time into $REDLOCK_NODE_INTEROP_DIR, as for the interop
// test), running the C library's fence script on a real node: first write, equal and older tokens,
// tokens above 2^53 as BigInts, advance, NOSCRIPT, and bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { lib, nodeUrls, uniq } from './helpers.mjs';

const { Redlock, Fence, FencedError, fenceKey, StateError, InvalidArgumentError } = lib;
const urls = nodeUrls();

function ioredis() {
  const dir = process.env.REDLOCK_NODE_INTEROP_DIR;
  assert.ok(dir && existsSync(path.join(dir, 'node_modules', 'ioredis')),
    'REDLOCK_NODE_INTEROP_DIR must hold node_modules/ioredis: make test-node installs it');
  const Redis = createRequire(path.join(dir, 'package.json'))('ioredis');
  return new Redis(urls[0], { lazyConnect: false, maxRetriesPerRequest: 1 });
}

test('fence key names and bad input', () => {
  assert.equal(fenceKey('orders'), '{orders}:fence');
  assert.equal(fenceKey('{orders}:17'), '{orders}:17:fence');
  for (const bad of ['', 'a}b', 'x'.repeat(4097), 'a\u0000b']) {
    assert.throws(() => fenceKey(bad), InvalidArgumentError, JSON.stringify(bad.slice(0, 10)));
  }
  assert.throws(() => new Fence({}, 'r', 1n), TypeError);
  const store = { evalsha() {}, eval() {} };
  for (const t of [0n, -1n, 1n << 64n]) assert.throws(() => new Fence(store, 'r', t), InvalidArgumentError);
  for (const t of ['5', 1.5, null]) assert.throws(() => new Fence(store, 'r', t), TypeError);
});

test('first write, equal and older tokens, BigInts above 2^53, every operation', async () => {
  const store = ioredis();
  try {
    const r = uniq('fence');
    const f5 = new Fence(store, r, 5n);
    assert.equal(await f5.set(`${r}:v`, 'five'), true);
    assert.equal(await store.get(fenceKey(r)), '5');
    assert.equal(await f5.set(`${r}:v`, 'again'), true);
    assert.equal(await new Fence(store, r, 7n).incrby(`${r}:n`, 2), 2);
    await assert.rejects(f5.set(`${r}:v`, 'late'), (e) => e instanceof FencedError && e.token === 5n &&
      e.fence === 7n && e.code === 'REDLOCK_EFENCED' && /5.*7/.test(e.message));
    assert.equal(await store.get(`${r}:v`), 'again');
    const big = 1n << 53n;
    const rb = `${r}:big`;
    await new Fence(store, rb, big + 1n).set(`${rb}:v`, 'x');
    await assert.rejects(new Fence(store, rb, big).set(`${rb}:v`, 'y'), FencedError);
    const top = new Fence(store, rb, (1n << 64n) - 1n);
    assert.equal(await top.hset(`${rb}:h`, { a: 1, b: 2 }), 2);
    assert.equal(await top.rpush(`${rb}:l`, 'x', 'y'), 2);
    assert.equal(await top.set(`${rb}:e`, 'x', { px: 60000 }), true);
    assert.ok((await store.pttl(`${rb}:e`)) > 0);
    assert.equal(await top.del(`${rb}:e`), 1);
    assert.equal(await store.get(fenceKey(rb)), ((1n << 64n) - 1n).toString());
    assert.ok((await store.pttl(fenceKey(rb))) > 6 * 86400 * 1000);
    // advance before reading; then NOSCRIPT falls back to EVAL
    const ra = `${r}:adv`;
    assert.equal(await new Fence(store, ra, 4n).advance(), 0n);
    assert.equal(await new Fence(store, ra, 6n).advance(), 4n);
    await store.script('FLUSH');
    await assert.rejects(new Fence(store, ra, 4n).set(`${ra}:v`, 'late'), FencedError);
    await assert.rejects(top.hset(`${rb}:h`, {}), InvalidArgumentError);
  } finally {
    store.disconnect();
  }
});

test('lock.fenced uses the acquisition\'s token', async () => {
  const store = ioredis();
  const rl = new Redlock(urls, { fencing: true, nodeTimeout: 500 });
  const plain = new Redlock(urls, { nodeTimeout: 500 });
  try {
    const r = uniq('fenced');
    const first = await rl.acquire([r], 5000);
    const old = first.fenced(store);
    assert.equal(old.token, first.fencingToken);
    await old.set(`${r}:v`, 'first');
    await first.release();
    assert.throws(() => first.fenced(store), StateError);
    const second = await rl.acquire([r], 5000);
    await second.fenced(store).set(`${r}:v`, 'second');
    await assert.rejects(old.set(`${r}:v`, 'late'), FencedError);
    assert.equal(await store.get(`${r}:v`), 'second');
    await second.release();
    const noToken = await plain.acquire([`${r}:x`], 5000);
    assert.throws(() => noToken.fenced(store), StateError);
    await noToken.release();
  } finally {
    store.disconnect();
    await rl.quit();
    await plain.quit();
  }
});
