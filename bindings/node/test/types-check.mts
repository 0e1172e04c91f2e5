// SPDX-License-Identifier: BSD-3-Clause
// Compiled (not run) by test/types.test.mjs with tsc --strict: node-redlock v5's README code,
// with only the import changed, and this package's additions.
import Redlock, {
  ExecutionError, ResourceLockedError, Lock, type RedlockAbortSignal, Permit, ReadLock, WriteLock, Leadership,
  type Leader, Semaphore, RWLock, Election, Observer, fencedUpsert, fencedUpdate, FencedError, NoSuchRowError,
  type FenceSqlClient,
} from 'libredlock';

const redlock = new Redlock(['redis://127.0.0.1:6379'], {
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 200,
  automaticExtensionThreshold: 500,
});

redlock.on('metrics', (event) => {
  if (event.type === 'node-error') console.log(event.node, event.nodeOutcome, event.nodeRttUs);
  const held: number = event.heldUs;
  void held;
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

// Beyond node-redlock: the semaphore, the read-write lock, leader election.
export async function primitives(ac: AbortController): Promise<bigint> {
  const sem: Semaphore = redlock.semaphore('jobs', 3, { retryCount: -1 });
  const p: Permit = await sem.acquire(5000, { permits: 2, signal: ac.signal });
  const n: number = p.permits + p.limit + sem.limit;
  await p.extend(5000);
  await p.release();
  const s2: string = await sem.using(5000, async (signal) => (signal.aborted ? 'lost' : 'ok'));
  await sem.using(5000, { permits: 1 }, async () => n);

  const rw: RWLock = redlock.rwlock('table');
  const rd: ReadLock = await rw.acquireRead(5000, { signal: ac.signal });
  const m: 'read' = rd.mode;
  await rd.release();
  const wr: WriteLock = await rw.acquireWrite(5000);
  const back: WriteLock = await wr.downgrade();
  const m2: 'read' | 'write' = back.mode;
  await back.release();
  await rw.usingRead(5000, async () => 1);
  await rw.usingWrite(5000, { retryCount: 0 }, async (signal: RedlockAbortSignal) => signal.error);
  void s2; void m; void m2;

  const election: Election = redlock.election('leader', { duration: 10000 });
  const leadership: Leadership = await election.campaign('me', { signal: ac.signal, timeout: 1000 });
  leadership.signal.addEventListener('abort', () => console.log(leadership.signal.error));
  const term: bigint = leadership.term;
  await leadership.proclaim('still me');
  if (leadership.isLeader && election.leadership === leadership) await leadership.resign();
  const now: Leader = await election.leader();
  const obs: Observer = election.observe({ signal: ac.signal, current: false, timeout: 5000 });
  for await (const leader of obs) {
    const v: string | null = leader.value;
    if (leader.present && v !== null && leader.term > term) break;
  }
  const timedOut: boolean = obs.timedOut;
  void timedOut;
  return now.term;
}

// Fenced SQL writes, on anything shaped as node-postgres's Pool, Client or PoolClient.
export async function fencedSql(pool: FenceSqlClient, lock: Lock): Promise<bigint> {
  await fencedUpsert(pool, 'accounts', { id: 7 }, { balance: 120, note: null }, lock.fencingToken);
  try {
    await fencedUpdate(pool, 'app.accounts', { id: 7 }, {}, 5, { fenceColumn: 'fence' });
  } catch (e) {
    if (e instanceof FencedError) return e.fence;
    if (e instanceof NoSuchRowError) console.log(e.code, e.table, e.key);
  }
  return 0n;
}
