// SPDX-License-Identifier: BSD-3-Clause
// ESM entry point: import Redlock, { ResourceLockedError } from 'libredlock' (node-redlock's shape).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const mod = require('./redlock.cjs');

export const {
  Redlock, Lock, Semaphore, Permit, RWLock, ReadLock, WriteLock, Election, Leadership, Observer,
  defaultSettings, RedlockError, ExecutionError, ResourceLockedError,
  LockTimeoutError, InvalidArgumentError, QuorumError, UnreachableError, LockExpiredError,
  LockLostError, AuthError, PermissionError, TLSError, ServerError, RedlockIOError, LimitError,
  StateError, AbortError, AtRiskError, Fence, FencedError, fenceKey, fencedUpsert, fencedUpdate, NoSuchRowError,
} = mod;
export default mod.Redlock;
