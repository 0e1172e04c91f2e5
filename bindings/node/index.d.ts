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
  quit(): Promise<void>;
  on(event: 'error', listener: (error: RedlockError) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

export const defaultSettings: Readonly<Settings>;
export default Redlock;
