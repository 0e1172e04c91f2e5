// SPDX-License-Identifier: BSD-3-Clause
// fork (docs/node.md, "The event loop, lifetimes and fork"): child_process.fork and cluster
// workers started after the parent made a client, and while it holds a lock and an acquire
// waits, are new processes that load the package afresh and make their own client; the
// parent's client goes on working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import Redlock from '../lib/index.mjs';
import { nodeUrls, uniq } from './helpers.mjs';

const urls = nodeUrls();
const worker = fileURLToPath(new URL('./fork-worker.cjs', import.meta.url));

function result(child, what) {
  return new Promise((resolve, reject) => {
    let msg;
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${what}: no answer in 20 s`)); }, 20000);
    child.on('message', (m) => { msg = m; });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (!msg) reject(new Error(`${what} exited (${code ?? signal}) without an answer`));
      else if (msg.error) reject(new Error(`${what}: ${msg.error}`));
      else resolve({ ...msg, code });
    });
  });
}

async function withParentBusy(start) {
  const rl = new Redlock(urls, { nodeTimeout: 1000, retryCount: -1, retryDelay: 50, retryJitter: 10 });
  try {
    const held = uniq('fork-held');
    const lock = await rl.acquire(held, 10000);
    const contended = uniq('fork-wait');
    const blocker = await rl.acquire(contended, 10000);
    const waiting = rl.acquire(contended, 5000);   // under way in C while the workers start
    waiting.catch(() => {});   // awaited below; quit() cancels it when a check fails first
    const env = { ...process.env, REDLOCK_FORK_TEST: JSON.stringify({ held, own: uniq('fork-own') }) };
    const answers = await start(env);
    for (const a of answers) {
      assert.notEqual(a.pid, process.pid);
      assert.equal(a.held, 'REDLOCK_ENOTACQUIRED', `the worker acquired the parent's lock: ${JSON.stringify(a)}`);
      assert.ok(a.own >= 3, `the worker's own lock: ${JSON.stringify(a)}`);
      assert.equal(a.code, 0, 'the worker exited by itself');
    }
    // The parent's client goes on: its waiting acquire completes once the blocker is released,
    // and its lock is still its own.
    assert.ok(lock.isHeld);
    await blocker.release();
    const second = await waiting;
    await second.release();
    await lock.release();
  } finally {
    await rl.quit();
  }
}

test('child_process.fork workers make their own client; the parent\'s goes on', () =>
  withParentBusy((env) => Promise.all([1, 2].map((i) =>
    result(fork(worker, [], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }), `fork ${i}`)))));

test('cluster workers make their own client; the primary\'s goes on', () =>
  withParentBusy((env) => {
    cluster.setupPrimary({ exec: worker, silent: false });
    const answers = Promise.all([1, 2].map((i) => result(cluster.fork(env).process, `cluster worker ${i}`)));
    return answers;
  }));
