// SPDX-License-Identifier: BSD-3-Clause
// One contender of test/interop.test.mjs: the same code for node-redlock and for libredlock,
// only the import differs, as for a user who switches. argv: which ("redlock" or "libredlock"),
// the interop directory (its node_modules has redlock@5 and ioredis), the resource, the counter
// key and the number of increments. Node URLs come from $REDLOCK_TEST_NODES.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [which, dir, resource, counter, countArg] = process.argv.slice(2);
const requireFrom = createRequire(path.join(dir, 'package.json'));
const Redis = requireFrom('ioredis');
const mod = which === 'redlock'
  ? requireFrom('redlock')
  : createRequire(import.meta.url)(fileURLToPath(new URL('../lib/index.cjs', import.meta.url)));
const Redlock = mod.default || mod;
const { ExecutionError } = mod;

const urls = process.env.REDLOCK_TEST_NODES.split(',');
const clients = urls.map((u) => new Redis(u, { lazyConnect: false, maxRetriesPerRequest: 1 }));
// One attempt per acquire, retried here: node-redlock keeps the keys a failed attempt set on a
// minority while it retries (it cleans them only when it gives up), so that contenders that
// retry inside acquire() can block each other until those keys expire. Each failed attempt
// here is cleaned up before the next. nodeTimeout (libredlock only) allows for a loaded machine.
const redlock = new Redlock(clients, { retryCount: 0, nodeTimeout: 500 });   // node-redlock ignores nodeTimeout
redlock.on('error', () => {});
const store = new Redis(urls[0]);
const n = Number(countArg);
for (let i = 0; i < n; i++) {
  let lock;
  while (!lock) {
    try {
      lock = await redlock.acquire([resource], 5000);
    } catch (e) {
      if (!(e instanceof ExecutionError)) throw e;
      await new Promise((r) => setTimeout(r, 2 + Math.random() * 15));
    }
  }
  const v = Number(await store.get(counter) || 0);
  await new Promise((r) => setTimeout(r, 1));   // widen the read-modify-write window
  await store.set(counter, String(v + 1));
  await lock.release();
}
await redlock.quit();
await store.quit();
console.log(`${which} done ${n}`);
