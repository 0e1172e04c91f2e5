// SPDX-License-Identifier: BSD-3-Clause
// The handles of the semaphore, the read-write lock and elections (observers' own included) are
// freed when collected: cycles of each leave the memory flat. Run with --expose-gc (package.json's
// test script passes it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Redlock from '../lib/index.mjs';
import { nodeUrls, uniq, sleep } from './helpers.mjs';

const urls = nodeUrls();

async function collect() {
  for (let k = 0; k < 10; k++) {
    globalThis.gc();
    await sleep(50);
  }
}

test('permit, read, write, campaign and observer cycles leave the memory flat', async () => {
  assert.equal(typeof globalThis.gc, 'function', 'run with node --expose-gc');
  const rl = new Redlock(urls, { nodeTimeout: 500 });
  try {
    const sem = rl.semaphore(uniq('gcsem'), 2);
    const rw = rl.rwlock(uniq('gcrw'));
    const name = uniq('gcel');
    const cycle = async (n) => {
      for (let i = 0; i < n; i++) {
        await (await sem.acquire(2000)).release();
        await (await rw.acquireRead(2000)).release();
        await (await rw.acquireWrite(2000)).release();
        const e = rl.election(name);
        const l = await e.campaign('v');
        for await (const x of e.observe()) { void x; break; }
        await e.leader();   // a handle of its own each
        await l.resign();
      }
    };
    await cycle(200);
    await collect();
    const base = process.memoryUsage().rss;
    await cycle(800);
    await collect();
    const grown = process.memoryUsage().rss - base;
    // Kept alive, the 800 cycles' elections and observers (3 C election handles a cycle) grow
    // it by about 14 MiB; freed, by 1 to 2.
    assert.ok(grown < 8 * 1024 * 1024, `RSS grew ${(grown / 1048576).toFixed(1)} MiB over 800 cycles of 6 handles`);
  } finally {
    await rl.quit();
  }
});
