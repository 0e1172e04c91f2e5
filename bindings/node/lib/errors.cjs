// SPDX-License-Identifier: BSD-3-Clause
// The errors of the Node.js binding: one class per REDLOCK_E* code, all carrying the C code
// (err.errno, negative, as in redlock.h), its name (err.code, e.g. "REDLOCK_ENOTACQUIRED"), C's
// detail (err.detail: which nodes said what) and, for operations, the per-node report of the
// last round: err.report, and err.attempts as node-redlock has it (an array of promises of it).
// ExecutionError and ResourceLockedError are node-redlock's names: a failed acquire, release or
// extension is an ExecutionError, and a lock held elsewhere a ResourceLockedError, which is an
// ExecutionError too, so that node-redlock's `instanceof ExecutionError` checks keep working.
'use strict';

const native = require('./native.cjs');

class RedlockError extends Error {
  constructor(message, { errno = 0, detail = '', resource, report = null } = {}) {
    super(message);
    this.name = new.target.name;
    this.errno = errno;
    this.code = errno ? native.strerror(errno)[0] : 'REDLOCK_ERROR';
    this.detail = detail;
    if (resource !== undefined) this.resource = resource;
    this.report = report;
    this.attempts = report ? [Promise.resolve(report)] : [];
  }
}

class ExecutionError extends RedlockError {}
class ResourceLockedError extends ExecutionError {}
class LockTimeoutError extends ResourceLockedError {}
class InvalidArgumentError extends RedlockError {}
class QuorumError extends ExecutionError {}
class UnreachableError extends QuorumError {}
class LockExpiredError extends ExecutionError {}
class LockLostError extends ExecutionError {}
class AuthError extends ExecutionError {}
class PermissionError extends ExecutionError {}
class TLSError extends ExecutionError {}
class ServerError extends ExecutionError {}
class RedlockIOError extends ExecutionError {}
class LimitError extends ExecutionError {}
class StateError extends ExecutionError {}
class AbortError extends ExecutionError {}
class AtRiskError extends ExecutionError {}

const BY_CODE = new Map([
  [-1, InvalidArgumentError], [-3, ResourceLockedError], [-4, QuorumError],
  [-5, LockExpiredError], [-6, LockLostError], [-7, LockTimeoutError], [-8, RedlockIOError],
  [-9, ServerError], [-10, AuthError], [-11, TLSError], [-13, AbortError], [-14, LimitError],
  [-15, StateError], [-16, UnreachableError], [-17, PermissionError], [-18, AtRiskError],
]);

// The code's text and C's detail, the cause said once (as the Python binding does): C starts
// some details with the code's own words ("no quorum: ..."); that head is left out.
function sayOnce(text, detail) {
  if (!detail || detail === text) return text;
  const at = detail.indexOf(': ');
  if (at >= 0) {
    const head = detail.slice(0, at);
    const rest = detail.slice(at + 2);
    const clause = text.split(': ')[0];
    if (head === text || head === clause || (head.includes(' ') && clause.endsWith(' ' + head))) {
      return rest ? `${text}: ${rest}` : text;
    }
  }
  return `${text}: ${detail}`;
}

function makeError(errno, detail = '', resource, report = null) {
  const Cls = BY_CODE.get(errno) || ExecutionError;
  const text = native.strerror(errno)[1];
  let shown = resource;
  if (typeof shown === 'string' && shown.length > 80) shown = shown.slice(0, 60) + '...';
  const where = shown !== undefined ? `'${shown}': ` : '';
  return new Cls(`${where}${sayOnce(text, detail)}`, { errno, detail, resource, report });
}

function invalid(message, resource) {
  return makeError(-1, message, resource);
}

module.exports = {
  RedlockError, ExecutionError, ResourceLockedError, LockTimeoutError, InvalidArgumentError,
  QuorumError, UnreachableError, LockExpiredError, LockLostError, AuthError, PermissionError,
  TLSError, ServerError, RedlockIOError, LimitError, StateError, AbortError, AtRiskError,
  makeError, invalid,
};
