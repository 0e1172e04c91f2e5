// SPDX-License-Identifier: BSD-3-Clause
// Bad input gets a clear error: a specific code and message, in bounded time, never a false
// acquire, and never a refusal told as contention.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import Redlock, {
  InvalidArgumentError, UnreachableError, QuorumError, AuthError, ResourceLockedError,
} from '../lib/index.mjs';
import { nodeUrls, uniq, ctl, nodeCmds } from './helpers.mjs';

const urls = nodeUrls();
const redlock = new Redlock(urls, { nodeTimeout: 500 });
after(() => redlock.quit());

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
  return err;
}

// A port nothing listens on (bound, then closed).
async function closedPort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

test('bad resources', async () => {
  await rejects(redlock.acquire('', 1000), InvalidArgumentError, 'REDLOCK_EINVAL', /must not be empty/);
  await rejects(redlock.acquire([], 1000), InvalidArgumentError, 'REDLOCK_EINVAL', /non-empty/);
  await rejects(redlock.acquire(['a', ''], 1000), InvalidArgumentError, 'REDLOCK_EINVAL', /must not be empty/);
  await rejects(redlock.acquire([1], 1000), InvalidArgumentError, 'REDLOCK_EINVAL', /must be a string/);
  await rejects(redlock.acquire(undefined, 1000), InvalidArgumentError, 'REDLOCK_EINVAL');
  await rejects(redlock.acquire('a\0b', 1000), InvalidArgumentError, 'REDLOCK_EINVAL', /NUL/);
  await rejects(redlock.acquire('x'.repeat(5000), 1000), InvalidArgumentError, 'REDLOCK_EINVAL', /4096/);
  const dup = uniq('dup');
  await rejects(redlock.acquire([dup, dup], 1000), InvalidArgumentError, 'REDLOCK_EINVAL', /twice/);
  await rejects(redlock.acquire([...Array(65).keys()].map(String), 1000), InvalidArgumentError, 'REDLOCK_EINVAL');
});

test('bad durations', async () => {
  for (const d of [NaN, -1, 0, 1.5, 86400001, Infinity, '1000', 2 ** 32, undefined, 10n]) {
    await rejects(redlock.acquire(uniq('ttl'), d), InvalidArgumentError, 'REDLOCK_EINVAL', /duration must be an integer/);
  }
  const lock = await redlock.acquire(uniq('ttl'), 1000);
  await rejects(lock.extend(NaN), InvalidArgumentError, 'REDLOCK_EINVAL', /duration/);
  await rejects(lock.extend(-5), InvalidArgumentError, 'REDLOCK_EINVAL', /duration/);
  assert.ok(lock.isHeld, 'a refused extension leaves the lock alone');
  await lock.release();
  await rejects(redlock.using(uniq('u'), 500, async () => 1), InvalidArgumentError, 'REDLOCK_EINVAL',
    /at least 100ms greater than the `automaticExtensionThreshold`/);
  await rejects(redlock.using(uniq('u'), 1000, {}), InvalidArgumentError, 'REDLOCK_EINVAL', /routine/);
});

test('bad settings', async () => {
  throwsSync(() => new Redlock(urls, { driftFactor: 0.7 }), InvalidArgumentError, 'REDLOCK_EINVAL', /driftFactor/);
  throwsSync(() => new Redlock(urls, { retryCount: -2 }), InvalidArgumentError, 'REDLOCK_EINVAL', /retryCount/);
  throwsSync(() => new Redlock(urls, { retryDelay: NaN }), InvalidArgumentError, 'REDLOCK_EINVAL', /retryDelay/);
  throwsSync(() => new Redlock(urls, { retryJitter: -1 }), InvalidArgumentError, 'REDLOCK_EINVAL', /retryJitter/);
  await rejects(redlock.acquire(uniq('s'), 1000, { retryCount: 1.5 }), InvalidArgumentError, 'REDLOCK_EINVAL', /retryCount/);
  await rejects(redlock.acquire(uniq('s'), 1000, { signal: 'no' }), InvalidArgumentError, 'REDLOCK_EINVAL', /AbortSignal/);
});

test('bad node URLs and client lists', () => {
  throwsSync(() => new Redlock('redis://127.0.0.1'), InvalidArgumentError, 'REDLOCK_EINVAL', /array/);
  throwsSync(() => new Redlock([]), InvalidArgumentError, 'REDLOCK_EINVAL', /no nodes/);
  throwsSync(() => new Redlock(['http://127.0.0.1:6379']), InvalidArgumentError, 'REDLOCK_EINVAL');
  throwsSync(() => new Redlock(['redis://127.0.0.1:99999']), InvalidArgumentError, 'REDLOCK_EINVAL', /port/);
  throwsSync(() => new Redlock([urls[0], urls[0]]), InvalidArgumentError, 'REDLOCK_EINVAL');
  throwsSync(() => new Redlock([42]), InvalidArgumentError, 'REDLOCK_EINVAL', /node URL or a Redis client/);
  const e = throwsSync(() => new Redlock(['redis://user:s3cret@127.0.0.1:0']), InvalidArgumentError, 'REDLOCK_EINVAL');
  assert.doesNotMatch(e.message, /s3cret/, 'passwords are masked');
});

test('ioredis and node-redis client objects give their servers', async () => {
  const [a, b, c] = urls.slice(0, 3).map((u) => new URL(u));
  const ioredisLike = { options: { host: a.hostname, port: Number(a.port), db: 0 }, status: 'ready' };
  const nodeRedisLike = { options: { socket: { host: b.hostname, port: Number(b.port) } } };
  const rl = new Redlock([ioredisLike, nodeRedisLike, urls[2]]);
  try {
    assert.deepEqual(rl.nodes, [`redis://${a.host}`, `redis://${b.host}`, urls[2]]);
    assert.deepEqual([...rl.clients], [ioredisLike, nodeRedisLike, urls[2]]);
    const lock = await rl.acquire(uniq('clients'), 2000);
    assert.ok(lock.report.votesFor.size >= 2, "a quorum of the 3");
    assert.deepEqual(lock.report.nodes.map((n) => n.node), rl.nodes);
    await lock.release();
  } finally {
    await rl.quit();
  }
  const withAuth = new Redlock([{ options: { host: 'h.example', port: 7000, username: 'u', password: 'p@ss', db: 3 } }]);
  assert.deepEqual(withAuth.nodes, ['redis://***@h.example:7000/3'], 'the user and password masked by C');
  await withAuth.quit();
  throwsSync(() => new Redlock([{ options: { host: 'h', port: 1, tls: { ca: 'PEM' } } }]), Error, 'REDLOCK_ENOTSUP', /files/);
});

test('unreachable nodes: REDLOCK_EUNREACHABLE naming them, in bounded time, never an acquire', async () => {
  const ports = [await closedPort(), await closedPort(), await closedPort()];
  const rl = new Redlock([...ports.map((p) => `redis://127.0.0.1:${p}`), urls[0], urls[1]]);
  try {
    const t0 = Date.now();
    const err = await rejects(rl.acquire(uniq('down'), 1000), UnreachableError, 'REDLOCK_EUNREACHABLE',
      new RegExp(`127\\.0\\.0\\.1:${ports[0]}.*refused`));
    assert.ok(err instanceof QuorumError);
    assert.ok(!(err instanceof ResourceLockedError), 'not told as contention');
    assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
    // one attempt: no quorum, with the per-node detail
    const one = await rejects(rl.acquire(uniq('down'), 1000, { retryCount: 0 }), QuorumError, 'REDLOCK_ENOQUORUM');
    assert.ok(one.report.votesFor.size <= 2, 'never a quorum');
    assert.deepEqual([...one.report.votesAgainst.keys()], rl.nodes.slice(0, 3));
    // forever is bounded too while nothing can be reached
    await rejects(rl.acquire(uniq('down'), 1000, { retryCount: -1 }), UnreachableError, 'REDLOCK_EUNREACHABLE');
  } finally {
    await rl.quit();
  }
});

test('a node that asks for a password: an authentication error, not contention', async () => {
  const victims = [0, 1, 2];
  await Promise.all(victims.map((i) => ctl('CMD', i, 'CONFIG', 'SET', 'requirepass', 'x')));
  try {
    const rl = new Redlock(urls, { nodeTimeout: 500 });
    try {
      const t0 = Date.now();
      const err = await rejects(rl.acquire(uniq('auth'), 1000), AuthError, 'REDLOCK_EAUTH');
      assert.ok(!(err instanceof ResourceLockedError), 'not told as contention');
      assert.match(err.message, /NOAUTH|WRONGPASS|auth/i);
      assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
      assert.ok(err.report.votesAgainst.size >= 3);
    } finally {
      await rl.quit();
    }
    const wrong = new Redlock(urls.map((u) => u.replace('redis://', 'redis://:nope@')));
    try {
      await rejects(wrong.acquire(uniq('auth'), 1000), AuthError, 'REDLOCK_EAUTH', /WRONGPASS|invalid|password/i);
    } finally {
      await wrong.quit();
    }
  } finally {
    await Promise.all(victims.map((i) => nodeCmds(urls[i], ['AUTH', 'x'], ['CONFIG', 'SET', 'requirepass', ''])));
  }
  const lock = await redlock.acquire(uniq('auth-after'), 1000);
  await lock.release();
});
