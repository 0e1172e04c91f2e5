// SPDX-License-Identifier: BSD-3-Clause
// The safety net: a Redlock dropped without quit() is collected and its connections closed;
// many acquire/release cycles leave the memory flat. Run with --expose-gc (package.json's test
// script passes it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Redlock from '../lib/index.mjs';
import { nodeUrls, uniq, sleep, ctl } from './helpers.mjs';

const urls = nodeUrls();

async function clients(i) {
  const list = await ctl('CMD', i, 'CLIENT', 'LIST');
  return String(list).split('\n').filter((l) => l.includes('addr=')).length;
}

async function collect() {
  for (let k = 0; k < 10; k++) {
    globalThis.gc();
    await sleep(50);
  }
}

test('a Redlock dropped without quit() is collected, and its connections closed', async () => {
  assert.equal(typeof globalThis.gc, 'function', 'run with node --expose-gc');
  const before = await clients(0);
  await (async () => {
    const rl = new Redlock(urls, { nodeTimeout: 500 });
    const lock = await rl.acquire(uniq('gc'), 2000);
    await lock.release();
  })();
  const during = await clients(0);
  assert.ok(during > before, `the Redlock connected (${before} -> ${during})`);
  let after = during;
  for (let k = 0; k < 20 && after >= during; k++) {
    await collect();
    after = await clients(0);
  }
  assert.ok(after < during, `connections on node 0: ${before} before, ${during} with the Redlock, ${after} after its collection`);
});

test('acquire/release cycles leave the memory flat', async () => {
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  try {
    const cycle = async (n) => {
      for (let i = 0; i < n; i++) {
        const lock = await rl.acquire(uniq('rss'), 2000);
        await lock.release();
      }
    };
    await cycle(500);
    await collect();
    const base = process.memoryUsage().rss;
    await cycle(3000);
    await collect();
    const grown = process.memoryUsage().rss - base;
    assert.ok(grown < 12 * 1024 * 1024, `RSS grew ${(grown / 1048576).toFixed(1)} MiB over 3000 cycles`);
  } finally {
    await rl.quit();
  }
});
