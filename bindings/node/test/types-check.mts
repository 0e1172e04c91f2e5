// SPDX-License-Identifier: BSD-3-Clause
// Compiled (not run) by test/types.test.mjs with tsc --strict: node-redlock v5's README code,
// with only the import changed, and this package's additions.
import Redlock, { ExecutionError, ResourceLockedError, Lock, type RedlockAbortSignal } from 'libredlock';

const redlock = new Redlock(['redis://127.0.0.1:6379'], {
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 200,
  automaticExtensionThreshold: 500,
});

redlock.on('error', (error) => {
  if (error instanceof ResourceLockedError) return;
  console.error(error.code, error.errno, error.message);
});

export async function main(): Promise<number> {
  let lock: Lock = await redlock.acquire(['a'], 5000);
  try {
    lock = await lock.extend(5000);
    const stats = await lock.attempts[0];
    const n: number = stats.votesFor.size + stats.quorumSize + lock.report.nodes.length;
    const exp: number = lock.expiration;
    void n; void exp;
  } finally {
    await lock.release();
  }
  const r: number = await redlock.using([String(1), 'b'], 5000, async (signal: RedlockAbortSignal) => {
    if (signal.aborted) throw signal.error;
    return 1;
  });
  await redlock.using('c', 5000, { retryCount: 0, signal: new AbortController().signal }, async () => 2);
  try {
    await redlock.acquire('d', 1000);
  } catch (e) {
    if (e instanceof ExecutionError) {
      const a = await e.attempts[0];
      for (const [node, err] of a.votesAgainst) console.log(node, err.message);
    }
  }
  await redlock.quit();
  return r;
}
