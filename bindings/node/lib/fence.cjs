// SPDX-License-Identifier: BSD-3-Clause
// Fenced writes to a Redis/Valkey store (docs/fencing.md, "Protecting your store"): the C
// library's one fence script and key name, run on the caller's own ioredis or node-redis client,
// so that the token comparison (as 64-bit integers), the fence key and its lifetime are the
// library's. An older token rejects with FencedError naming both tokens; nothing is written.
'use strict';

const native = require('./native.cjs');
const errors = require('./errors.cjs');

const MAX = (1n << 64n) - 1n;

function toToken(t) {
  if (typeof t === 'number' && Number.isSafeInteger(t)) t = BigInt(t);
  if (typeof t !== 'bigint') throw new TypeError('token must be a bigint (lock.fencingToken) or a safe integer');
  if (t < 1n || t > MAX) throw errors.invalid(`token must be in [1, 2^64 - 1], got ${t}`);
  return t;
}

function fenceInfo(resource) {
  if (typeof resource !== 'string') throw new TypeError('resource must be a string');
  try {
    return native.fenceInfo(resource);
  } catch (e) {
    throw errors.invalid(e.message, resource);
  }
}

// The store's client: ioredis (evalsha(sha, numkeys, ...keys, ...args)) or node-redis v4+
// (evalSha(sha, { keys, arguments })).
function runner(store) {
  if (store && typeof store.evalsha === 'function' && typeof store.eval === 'function') {
    return {
      sha: (sha, keys, args) => store.evalsha(sha, keys.length, ...keys, ...args),
      src: (src, keys, args) => store.eval(src, keys.length, ...keys, ...args),
    };
  }
  if (store && typeof store.evalSha === 'function' && typeof store.eval === 'function') {
    return {
      sha: (sha, keys, args) => store.evalSha(sha, { keys, arguments: args }),
      src: (src, keys, args) => store.eval(src, { keys, arguments: args }),
    };
  }
  throw new TypeError('store must be an ioredis or node-redis client');
}

class FencedError extends errors.ExecutionError {
  constructor(message, { token, fence, resource, detail }) {
    super(message, { errno: -19, detail, resource });
    this.token = token;
    this.fence = fence;
  }
}

class Fence {
  // Writes to `resource` on `store` that apply only while `token` is at least the highest token
  // a write to the resource has carried. retentionMs: how long the fence outlives the last write.
  constructor(store, resource, token, { retentionMs } = {}) {
    const [script, sha, key, retention] = fenceInfo(resource);
    this._run = runner(store);
    this._script = script;
    this._sha = sha;
    this.key = key;
    this.resource = resource;
    this.token = toToken(token);
    const ms = retentionMs === undefined ? retention : retentionMs;
    if (!Number.isSafeInteger(ms) || ms < 1) throw errors.invalid(`retentionMs must be a whole number >= 1, got ${ms}`);
    this._head = [this.token.toString(), String(ms)];
  }

  async _call(op, key, ...args) {
    const keys = key === undefined ? [this.key] : [this.key, String(key)];
    const argv = [...this._head, op, ...args.map(String)];
    try {
      try {
        return await this._run.sha(this._sha, keys, argv);
      } catch (e) {
        if (!String(e && e.message).startsWith('NOSCRIPT')) throw e;
        return await this._run.src(this._script, keys, argv);
      }
    } catch (e) {
      const m = String(e && e.message);
      // The script's refusal, "FENCED <token> <fence> [why]", read by the C library's parser.
      const tf = native.fenceRefusal(m);
      if (tf === null) throw e;
      const why = m.split(' ').slice(3).join(' ');
      throw new FencedError(`'${this.resource}': ${why}`,
        { token: tf[0], fence: tf[1], resource: this.resource, detail: m });
    }
  }

  // Raise the fence to this token without writing (a new holder, before it reads); resolves to the
  // fence it had (0n for none).
  async advance() { return BigInt(await this._call('advance')); }

  async set(key, value, { px } = {}) {
    if (px !== undefined && (!Number.isSafeInteger(px) || px < 1)) throw errors.invalid(`px must be a whole number of ms >= 1, got ${px}`);
    const r = await (px === undefined ? this._call('set', key, value) : this._call('set', key, value, px));
    return r === 'OK';
  }

  async del(key) { return Number(await this._call('del', key)); }

  async hset(key, fields) {
    const flat = Object.entries(fields || {}).flat();
    if (!flat.length) throw errors.invalid('hset needs at least one field');
    return Number(await this._call('hset', key, ...flat));
  }

  async rpush(key, ...values) {
    if (!values.length) throw errors.invalid('rpush needs at least one value');
    return Number(await this._call('rpush', key, ...values));
  }

  async incrby(key, n = 1) {
    if (!Number.isSafeInteger(n)) throw new TypeError('n must be a safe integer');
    return Number(await this._call('incrby', key, n));
  }
}

function fenceKey(resource) { return fenceInfo(resource)[2]; }

module.exports = { Fence, FencedError, fenceKey };
