// SPDX-License-Identifier: BSD-3-Clause
// A child_process.fork or cluster worker of fork.test.mjs: loads the package afresh, makes its own
// Redlock, and reports to its parent: the parent's held resource refused, its own acquired and
// released.
'use strict';
const Redlock = require('../lib/index.cjs');

const { held, own } = JSON.parse(process.env.REDLOCK_FORK_TEST);
// nodeTimeout 1000 and retries for its own lock: a loaded machine can stall a node that long.
const rl = new Redlock(process.env.REDLOCK_TEST_NODES.split(','), { nodeTimeout: 1000, retryCount: 0 });
(async () => {
  const out = { pid: process.pid };
  try {
    await rl.acquire(held, 2000);
    out.held = 'acquired';
  } catch (e) {
    out.held = e.code;
  }
  const l = await rl.acquire(own, 5000, { retryCount: 10 });
  out.own = l.report.nodes.filter((n) => n.outcome === 'ok').length;
  await l.release();
  await rl.quit();
  // Then the worker exits by itself: nothing held or waiting, and the IPC channel closed.
  process.send(out, () => process.disconnect());
})().catch((e) => {
  process.send({ error: String(e && e.stack || e) }, () => process.disconnect());
});
