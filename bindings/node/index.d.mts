// SPDX-License-Identifier: BSD-3-Clause
// Types of libredlock, node-redlock v5's shapes (docs/node.md says where they differ).
// index.d.ts (require) and index.d.mts (import) are the same text: keep them so.
import { EventEmitter } from 'node:events';

export interface Settings {
  /** Drift allowance: duration × driftFactor + 2 ms. In [0, 0.5). Default 0.01. */
  readonly driftFactor: number;
  /** Retries after the first attempt; -1 waits until acquired (or cancelled). Default 10. */
  readonly retryCount: number;
  /** Mean ms between attempts. Default 200. */
  readonly retryDelay: number;
  /** Attempts start retryDelay ± retryJitter ms apart. Default 100. */
  readonly retryJitter: number;
  /** using(): the signal is aborted when this many ms of validity are left and no extension has succeeded. Default 500. */
  readonly automaticExtensionThreshold: number;
}

export interface AcquireSettings extends Partial<Settings> {
  /** Cancels a waiting acquire (the promise rejects with an AbortError). */
  readonly signal?: AbortSignal;
  /** This acquire's waits: true woken by the release, false polling only (default: the Redlock's). */
  readonly wake?: boolean;
  /** Fair mode for this acquire: the lock goes to the waiter that has waited longest (implies wake). */
  readonly fair?: boolean;
}

export interface RedlockSettings extends Partial<Settings> {
  /** Per-node reply deadline of one round, ms (default 50). */
  readonly nodeTimeout?: number;
  /** Extra time for a node that needs a new connection, ms (default 200). */
  readonly connectTimeout?: number;
  /** A waiting acquire fails with REDLOCK_EUNREACHABLE once no quorum was reachable this long, ms. */
  readonly unreachableTimeout?: number;
  /** Mint a fencing token per acquisition (lock.fencingToken). */
  readonly fencing?: boolean;
  /** true: waiters are woken by the holder's release instead of polling; false: poll only. */
  readonly wake?: boolean;
  /** Fair mode for every lock: a free lock goes to the waiter that has waited longest (implies wake). */
  readonly fair?: boolean;
  /** TLS files for rediss:// nodes (the library reads files, not in-memory PEM). */
  readonly tls?: {
    readonly caFile?: string;
    readonly caDir?: string;
    readonly certFile?: string;
    readonly keyFile?: string;
    readonly serverName?: string;
    readonly insecureSkipVerify?: boolean;
  };
}

/** What one node did in a round. */
export interface NodeResult {
  readonly node: string;
  readonly outcome: 'none' | 'ok' | 'refused' | 'error' | 'timeout' | 'down' | 'not-waited' | 'quarantined';
  readonly errno: number;
  readonly code: string | null;
  readonly rttUs: number;
  readonly message: string;
}

/** node-redlock's ExecutionStats, with nodes named by URL, plus each node's result. */
export interface ExecutionStats {
  readonly membershipSize: number;
  readonly quorumSize: number;
  readonly votesFor: Set<string>;
  readonly votesAgainst: Map<string, RedlockError>;
  readonly nodes: ReadonlyArray<NodeResult>;
}

export interface ExecutionResult {
  /** node-redlock's shape: promises of the report (C keeps the last round's only). */
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
  /** The per-node report of the round. */
  readonly report: ExecutionStats;
}

/** An event of the metrics hook (redlock.on('metrics', ...)): C's redlock_event. */
export interface RedlockEvent {
  readonly type: 'acquired' | 'acquire-failed' | 'extended' | 'extend-failed' | 'lost' | 'released' |
    'release-failed' | 'node-error' | 'woken' | 'listener' | 'acquire-done' | 'watch-behind' | 'at-risk';
  /** The failure's code name, e.g. "REDLOCK_ENOTACQUIRED"; null for none. */
  readonly code: string | null;
  /** The failure's C code (negative), 0 for none. */
  readonly errno: number;
  readonly resource: string;
  /** The detail; "" when none. */
  readonly message: string;
  /** acquired / acquire-failed: 1 for a call's first attempt; acquire-done: the attempts made. */
  readonly attempt: number;
  /** true when the C library's auto-extend thread did it. */
  readonly automatic: boolean;
  readonly nodesOk: number;
  readonly quorum: number;
  readonly nodeCount: number;
  /** The round's duration (acquired: the attempt's; acquire-done: the whole call's), µs. */
  readonly elapsedUs: number;
  /** acquired / extended / at-risk: the validity then left, ms. */
  readonly validityMs: number;
  /** acquired with fencing: the token; else 0n. */
  readonly fencingToken: bigint;
  /** node-error, woken, listener: the node's URL; else null. */
  readonly node: string | null;
  /** node-error: what the node did; else null. */
  readonly nodeOutcome: NodeResult['outcome'] | null;
  /** node-error: from the round's start to the failure, µs; else null. */
  readonly nodeRttUs: number | null;
  /** listener: the node's wake-up listener's new state; else null. */
  readonly listenerState: 'off' | 'connecting' | 'ready' | 'down' | 'refused' | null;
  /** released / release-failed / lost: how long the lock was held, µs. */
  readonly heldUs: number;
  /** A round's events: each node's round trip in µs, -1 for no reply; else null. */
  readonly nodeRttsUs: number[] | null;
}

export interface RedlockAbortSignal extends AbortSignal {
  error?: Error;
}

/** A Redis client of ioredis or node-redis: only its connection settings are read. */
export interface ClientLike {
  readonly options?: object;
}

export class RedlockError extends Error {
  /** The C code's name, e.g. "REDLOCK_ENOTACQUIRED". */
  readonly code: string;
  /** The C code, negative (redlock.h). */
  readonly errno: number;
  /** C's detail: which nodes said what. */
  readonly detail: string;
  readonly resource?: string;
  /** node-redlock's shape: promises of the report (C keeps the last round's only). */
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
  /** The per-node report of the last round, or null when no round was made. */
  readonly report: ExecutionStats | null;
  /** votesAgainst entries: the node they concern. */
  readonly node?: string;
  constructor(message: string, options?: { errno?: number; detail?: string; resource?: string; report?: ExecutionStats | null });
}
export class ExecutionError extends RedlockError {}
export class ResourceLockedError extends ExecutionError {}
export class LockTimeoutError extends ResourceLockedError {}
export class InvalidArgumentError extends RedlockError {}
export class QuorumError extends ExecutionError {}
export class UnreachableError extends QuorumError {}
export class LockExpiredError extends ExecutionError {}
export class LockLostError extends ExecutionError {}
export class AuthError extends ExecutionError {}
export class PermissionError extends ExecutionError {}
export class TLSError extends ExecutionError {}
export class ServerError extends ExecutionError {}
export class RedlockIOError extends ExecutionError {}
export class LimitError extends ExecutionError {}
export class StateError extends ExecutionError {}
export class AbortError extends ExecutionError {}
export class AtRiskError extends ExecutionError {}
/** A store refused a fenced write: `token` is older than `fence`, a later holder has written. */
export class FencedError extends ExecutionError {
  readonly token: bigint;
  readonly fence: bigint;
}

/** A Redis/Valkey client the fence runs its script on: ioredis or node-redis (v4+). */
export type FenceStore =
  | { evalsha(...args: any[]): Promise<unknown>; eval(...args: any[]): Promise<unknown> }
  | { evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>; eval(...args: any[]): Promise<unknown> };

/** Writes to one resource on a store, applied only while `token` is at least its fence (docs/fencing.md). */
export class Fence {
  constructor(store: FenceStore, resource: string, token: bigint | number, options?: { retentionMs?: number });
  readonly key: string;
  readonly resource: string;
  readonly token: bigint;
  /** Raise the fence to this token without writing; the fence it had (0n for none). */
  advance(): Promise<bigint>;
  set(key: string, value: string | number, options?: { px?: number }): Promise<boolean>;
  del(key: string): Promise<number>;
  hset(key: string, fields: Record<string, string | number>): Promise<number>;
  rpush(key: string, ...values: Array<string | number>): Promise<number>;
  incrby(key: string, n?: number): Promise<number>;
}
/** The store key of a resource's fence: {resource}:fence, or resource:fence with a hash tag. */
export function fenceKey(resource: string): string;

/** What the SQL helpers run their statements on: a node-postgres (pg) Client, Pool or PoolClient. */
export interface FenceSqlClient {
  query(text: string, values: unknown[]): Promise<{ rowCount: number | null; rows: any[] }>;
}
/** A fenced update found no row with the key (`code` 'ERR_NO_SUCH_ROW'); fencedUpsert makes one. */
export class NoSuchRowError extends Error {
  readonly code: 'ERR_NO_SUCH_ROW';
  readonly table: string;
  readonly key: Record<string, unknown>;
}
/**
 * Inserts the row `key` + `values` with the fence column set to `token`, or updates it if its fence is at
 * most `token` (or NULL), in one statement; FencedError if a later holder's token is there (docs/fencing.md).
 */
export function fencedUpsert(client: FenceSqlClient, table: string, key: Record<string, unknown>,
  values: Record<string, unknown>, token: bigint | number, options?: { fenceColumn?: string }): Promise<void>;
/**
 * Updates the existing row `key` to `values` and the fence column to `token` if its fence is at most `token`
 * (or NULL); FencedError if a later holder's token is there, NoSuchRowError if there is no such row. Empty
 * `values` only raise the fence.
 */
export function fencedUpdate(client: FenceSqlClient, table: string, key: Record<string, unknown>,
  values: Record<string, unknown>, token: bigint | number, options?: { fenceColumn?: string }): Promise<void>;

export class Lock {
  readonly redlock: Redlock;
  readonly resources: string[];
  /** Not given by the C library: always undefined (docs/node.md). */
  readonly value: string | undefined;
  /** When the validity ends, ms since the epoch; 0 when not held. Moves with extensions. */
  readonly expiration: number;
  /** node-redlock's shape: promises of the report of the lock's last round. */
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
  /** The per-node report of the lock's last round (acquire, extend or release). */
  readonly report: ExecutionStats;
  readonly isHeld: boolean;
  readonly validityMs: number;
  /** The fencing token of this acquisition (settings.fencing), else 0n. */
  readonly fencingToken: bigint;
  release(): Promise<ExecutionResult>;
  extend(duration: number): Promise<Lock>;
  /** Writes to a store fenced by this acquisition's token (settings.fencing). */
  fenced(store: FenceStore, options?: { resource?: string; retentionMs?: number }): Fence;
}

export type RedlockUsingCallback<T> = (signal: RedlockAbortSignal) => Promise<T>;

export interface SemaphoreAcquireSettings extends AcquireSettings {
  /** Permits taken at once, all or none: 1 to the semaphore's limit. Default 1. */
  readonly permits?: number;
}

/** One acquisition of a semaphore: `permits` of its `limit`, released together. */
export class Permit extends Lock {
  readonly semaphore: Semaphore;
  readonly permits: number;
  readonly limit: number;
}

/** A counting semaphore: at most `limit` permits of `name` held at once, across processes. */
export class Semaphore {
  readonly redlock: Redlock;
  readonly name: string;
  /** 1 to 1000; every user of the name must give the same one. */
  readonly limit: number;
  readonly settings: Settings;
  acquire(duration: number, settings?: SemaphoreAcquireSettings): Promise<Permit>;
  using<T>(duration: number, settings: SemaphoreAcquireSettings, routine: RedlockUsingCallback<T>): Promise<T>;
  using<T>(duration: number, routine: RedlockUsingCallback<T>): Promise<T>;
}

/** The read side of a read-write lock: shared with other readers, never with a writer. */
export class ReadLock extends Lock {
  readonly mode: 'read';
}

/** The write side of a read-write lock: held alone. */
export class WriteLock extends Lock {
  /** 'read' once downgrade() has made it a read lock. */
  readonly mode: 'read' | 'write';
  /** Makes the held write lock a read lock in one round, with no writer in between. */
  downgrade(): Promise<WriteLock>;
}

/** The read-write lock on one name: many readers together, or one writer (writers preferred). */
export class RWLock {
  readonly redlock: Redlock;
  readonly name: string;
  readonly settings: Settings;
  acquireRead(duration: number, settings?: AcquireSettings): Promise<ReadLock>;
  acquireWrite(duration: number, settings?: AcquireSettings): Promise<WriteLock>;
  usingRead<T>(duration: number, settings: AcquireSettings, routine: RedlockUsingCallback<T>): Promise<T>;
  usingRead<T>(duration: number, routine: RedlockUsingCallback<T>): Promise<T>;
  usingWrite<T>(duration: number, settings: AcquireSettings, routine: RedlockUsingCallback<T>): Promise<T>;
  usingWrite<T>(duration: number, routine: RedlockUsingCallback<T>): Promise<T>;
}

/** What a read of an election found. */
export interface Leader {
  /** true: a leader holds the election on a majority. */
  readonly present: boolean;
  /** The leader's term (its fencing token); with no leader, the last term a majority recorded (0n: never any). */
  readonly term: bigint;
  /** 1 when elected; 0 with no leader. */
  readonly revision: number;
  /** The leader's value; null with no leader. */
  readonly value: string | null;
}

export interface ElectionSettings {
  /** The leadership's TTL in ms, extended every third of it while leading. Default 10000. */
  readonly duration?: number;
}

export interface CampaignSettings {
  /** Cancels the wait: the campaign rejects with an AbortError. */
  readonly signal?: AbortSignal;
  /** Ms to wait for the leadership, then LockTimeoutError. Default: no limit. */
  readonly timeout?: number;
  /** This campaign's TTL in ms; the Election's duration by default. */
  readonly duration?: number;
}

export interface ObserveSettings {
  /** Ends the iteration (cleanly: the loop just ends). */
  readonly signal?: AbortSignal;
  /** true (default): the first item is the state now; false: the first change after it. */
  readonly current?: boolean;
  /** Ms one wait for a change may last; the iteration then ends, with timedOut true. Default: no limit. */
  readonly timeout?: number;
}

/** This process's leadership of one term. */
export class Leadership {
  readonly election: Election;
  /** The term: a fencing token, strictly increasing from one leader to the next. */
  readonly term: bigint;
  /** The per-node report of the campaign's last round. */
  readonly report: ExecutionStats;
  /** Aborted, with signal.error, when the leadership is lost; not by resign(). */
  readonly signal: RedlockAbortSignal;
  readonly isLeader: boolean;
  readonly validityMs: number;
  /** The leader's new value (at most 1024 bytes), same term, next revision; observers see it. */
  proclaim(value: string): Promise<void>;
  /** Gives the leadership up at once; the next campaigner is woken. */
  resign(): Promise<void>;
}

/** An election's changes, in term order: `for await (const leader of election.observe())`. */
export class Observer implements AsyncIterable<Leader> {
  readonly election: Election;
  readonly closed: boolean;
  /** true when the iteration ended because a wait ran past its timeout. */
  readonly timedOut: boolean;
  next(): Promise<IteratorResult<Leader, undefined>>;
  /** Ends the iteration (what break does). */
  return(): Promise<IteratorResult<Leader, undefined>>;
  /** Ends the iteration; a next() waiting resolves done. */
  close(): void;
  [Symbol.asyncIterator](): Observer;
}

/** One campaigner of the election `name`, and a source of observers. */
export class Election {
  readonly redlock: Redlock;
  readonly name: string;
  /** The leadership's TTL in ms. */
  readonly duration: number;
  /** The leadership this Election holds, or null. */
  readonly leadership: Leadership | null;
  readonly isLeader: boolean;
  /** Waits until this process leads, then writes `value` (at most 1024 bytes) with the new term. */
  campaign(value: string, settings?: CampaignSettings): Promise<Leadership>;
  /** Resigns the leadership held, if any. */
  resign(): Promise<void>;
  observe(settings?: ObserveSettings): Observer;
  /** The leader as a majority reports it now (one read). */
  leader(): Promise<Leader>;
}

export class Redlock extends EventEmitter {
  readonly settings: Settings;
  /** The nodes' URLs, passwords masked. */
  readonly nodes: string[];
  /** What the constructor was given: URLs or client objects (node-redlock's clients). */
  readonly clients: Set<string | ClientLike>;
  constructor(clients: Iterable<string | ClientLike>, settings?: RedlockSettings, scripts?: unknown);
  acquire(resources: string | string[], duration: number, settings?: AcquireSettings): Promise<Lock>;
  release(lock: Lock, settings?: Partial<Settings>): Promise<ExecutionResult>;
  extend(existing: Lock, duration: number, settings?: Partial<Settings>): Promise<Lock>;
  using<T>(resources: string | string[], duration: number, settings: AcquireSettings, routine: RedlockUsingCallback<T>): Promise<T>;
  using<T>(resources: string | string[], duration: number, routine: RedlockUsingCallback<T>): Promise<T>;
  /** A counting semaphore of `limit` permits on `name`; settings are its acquires' defaults. */
  semaphore(name: string, limit: number, settings?: Partial<Settings>): Semaphore;
  /** The read-write lock on `name`; settings are its acquires' defaults. */
  rwlock(name: string, settings?: Partial<Settings>): RWLock;
  /** Leader election on `name`. */
  election(name: string, settings?: ElectionSettings): Election;
  quit(): Promise<void>;
  on(event: 'error', listener: (error: RedlockError) => void): this;
  /** The metrics hook: every attempt, extension, release, loss and node failure of this Redlock's locks. */
  on(event: 'metrics', listener: (event: RedlockEvent) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

export const defaultSettings: Readonly<Settings>;
export default Redlock;
