// SPDX-License-Identifier: BSD-3-Clause
// The Node.js binding: node-redlock v5's API (Redlock, Lock, using, the "error" event) over the C
// library. The Redlock algorithm runs in C; every wait runs on the C library's own threads and
// ends here through one thread-safe function per client (src/redlock_node.c). This layer converts
// arguments and settings, keeps the event loop alive only while something waits or is
// auto-extended, and turns C's codes into errors (errors.cjs). docs/node.md has the mapping.
'use strict';

const { EventEmitter } = require('node:events');
const native = require('./native.cjs');
const errors = require('./errors.cjs');

const { makeError, invalid } = errors;

const OUTCOMES = ['none', 'ok', 'refused', 'error', 'timeout', 'down', 'not-waited', 'quarantined'];
// The metrics hook's event types (redlock_event_type, from 1) and listener states.
const EVENT_TYPES = [null, 'acquired', 'acquire-failed', 'extended', 'extend-failed', 'lost', 'released',
  'release-failed', 'node-error', 'woken', 'listener', 'acquire-done', 'watch-behind', 'at-risk'];
const LISTENER_STATES = ['off', 'connecting', 'ready', 'down', 'refused'];
const EVENT_NODE = new Set(['node-error', 'woken', 'listener']);
const OPT_FENCING = 0x2;
const OPT_NO_WAKE = 0x4;
const OPT_WAKE = 0x10;
const OPT_FAIR = 0x8;
const WAIT_NONE = 0;
const WAIT_DEFAULT = -1;
const WAIT_FOREVER = -2;
const MAX_TTL_MS = 86400000;
const MAX_U32 = 4294967295;

// node-redlock v5's defaults.
const defaultSettings = Object.freeze({
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
});

function describe(v) {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number' || typeof v === 'boolean' || v == null) return String(v);
  return Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}

function checkDuration(duration, what = 'duration') {
  if (typeof duration !== 'number' || !Number.isInteger(duration) || duration < 1 || duration > MAX_TTL_MS) {
    throw invalid(`the ${what} must be an integer number of milliseconds from 1 to ${MAX_TTL_MS}, not ${describe(duration)}`);
  }
}

function checkInt(name, v, min, max) {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalid(`the setting ${name} must be an integer from ${min} to ${max}, not ${describe(v)}`);
  }
}

function checkSettings(s) {
  if (typeof s.driftFactor !== 'number' || !(s.driftFactor >= 0 && s.driftFactor < 0.5)) {
    throw invalid(`the setting driftFactor must be a number in [0, 0.5), not ${describe(s.driftFactor)}`);
  }
  checkInt('retryCount', s.retryCount, -1, MAX_U32 - 1);
  checkInt('retryDelay', s.retryDelay, 0, MAX_TTL_MS);
  checkInt('retryJitter', s.retryJitter, 0, MAX_TTL_MS);
  checkInt('automaticExtensionThreshold', s.automaticExtensionThreshold, 0, MAX_TTL_MS);
  for (const k of ['wake', 'fair']) {
    if (s[k] !== undefined && typeof s[k] !== 'boolean') throw invalid(`the setting ${k} must be a boolean, not ${describe(s[k])}`);
  }
  if (s.signal !== undefined && s.signal !== null &&
      (typeof s.signal !== 'object' || typeof s.signal.addEventListener !== 'function')) {
    throw invalid(`the setting signal must be an AbortSignal, not ${describe(s.signal)}`);
  }
}

function mergeSettings(base, over) {
  if (over === undefined || over === null) return base;
  if (typeof over !== 'object') throw invalid(`settings must be an object, not ${describe(over)}`);
  const s = { ...base };
  for (const [k, v] of Object.entries(over)) if (v !== undefined) s[k] = v;
  checkSettings(s);
  return s;
}

// node-redlock waits retryDelay ± retryJitter between attempts; C waits retry_delay_ms plus a
// uniform [0, retry_jitter_ms]. The same interval: [max(0, delay - jitter), delay + jitter].
function lockOptions(s) {
  const low = Math.max(0, s.retryDelay - s.retryJitter);
  const o = {
    retryDelayMs: low,
    retryJitterMs: s.retryDelay + s.retryJitter - low,
    driftFactor: s.driftFactor,
    waitMs: 0,
  };
  if (s.retryCount > 0) o.retryCount = s.retryCount;
  // wake and fair, when set (for the Redlock or for this acquire): the lock's own, by C's rule
  if (s.wake !== undefined) o.wake = s.wake ? 1 : 0;
  if (s.fair !== undefined) o.fair = s.fair ? 1 : 0;
  return o;
}

function waitOf(s) {
  if (s.retryCount === -1) return WAIT_FOREVER;
  return s.retryCount === 0 ? WAIT_NONE : WAIT_DEFAULT;
}

function toResources(resources) {
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list) || list.length === 0) {
    throw invalid(`resources must be a non-empty string or a non-empty array of strings, not ${describe(resources)}`);
  }
  for (const r of list) {
    if (typeof r !== 'string') throw invalid(`each resource must be a string, not ${describe(r)}`);
    if (r.length === 0) throw invalid('a resource name must not be empty');
    if (r.includes('\0')) throw invalid(`a resource name must not contain a NUL character: ${describe(r)}`);
  }
  return [...list];
}

// A semaphore's, read-write lock's or election's name: one resource.
function toName(name, what) {
  if (typeof name !== 'string') throw invalid(`the ${what} must be a string, not ${describe(name)}`);
  if (name.length === 0) throw invalid(`the ${what} must not be empty`);
  if (name.includes('\0')) throw invalid(`the ${what} must not contain a NUL character: ${describe(name)}`);
  return name;
}

// using()'s optional settings before the routine.
function routineOf(what, settingsOrRoutine, maybeRoutine) {
  let settings;
  let routine;
  if (typeof settingsOrRoutine === 'function') routine = settingsOrRoutine;
  else { settings = settingsOrRoutine; routine = maybeRoutine; }
  if (typeof routine !== 'function') throw invalid(`${what} needs a routine (an async function), not ${describe(routine)}`);
  return [settings, routine];
}

// A node URL from an ioredis or node-redis (v4) client's settings: the library opens its own
// connections to the same server.
function urlOfClient(c, tlsOpts) {
  if (typeof c === 'string') {
    if (c.includes('\0')) throw invalid(`a node URL must not contain a NUL character: ${describe(c)}`);
    return c;
  }
  if (!c || typeof c !== 'object') throw invalid(`a client must be a node URL or a Redis client object, not ${describe(c)}`);
  if (c.isCluster || typeof c.nodes === 'function' && c.constructor && c.constructor.name === 'Cluster') {
    throw invalid('a Redis Cluster client cannot be a Redlock node here: give each node as a URL (docs/cluster.md)');
  }
  const o = c.options || {};
  let { host, port, username, password, tls, path } = o;
  let db = o.db !== undefined ? o.db : o.database;
  if (typeof o.url === 'string' && !o.socket) return o.url;      // node-redis created from a URL
  if (o.socket) {                                                  // node-redis v4
    if (typeof o.url === 'string') {
      const u = new URL(o.url);
      host = host || u.hostname; port = port || u.port;
      username = username || decodeURIComponent(u.username) || undefined;
      password = password || decodeURIComponent(u.password) || undefined;
      if (u.protocol === 'rediss:') tls = tls || {};
    }
    host = o.socket.host || host;
    port = o.socket.port || port;
    path = o.socket.path || path;
    if (o.socket.tls) tls = { ...(typeof o.socket.tls === 'object' ? o.socket.tls : {}), ...o.socket };
  }
  if (path) {
    const auth = password ? `:${encodeURIComponent(password)}@` : '';
    return `unix://${auth}${path}${db ? `?db=${db}` : ''}`;
  }
  if (!host) host = '127.0.0.1';
  if (!port) port = 6379;
  const scheme = tls ? 'rediss' : 'redis';
  if (tls) {
    if (tls.rejectUnauthorized === false) tlsOpts.tlsInsecureSkipVerify = 1;
    if (tls.servername && !tlsOpts.tlsServerName) tlsOpts.tlsServerName = tls.servername;
    if ((tls.ca || tls.cert || tls.key) && !(tlsOpts.tlsCaFile || tlsOpts.tlsCertFile)) {
      const e = makeError(-12, 'a client\'s TLS settings carry certificates in memory (ca, cert, key); ' +
        'the library reads them from files: give settings.tls = { caFile, certFile, keyFile } (docs/node.md)');
      throw e;
    }
  }
  let auth = '';
  if (password || username) {
    auth = `${username ? encodeURIComponent(username) : ''}:${password ? encodeURIComponent(password) : ''}@`;
  }
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${scheme}://${auth}${h}:${port}${db ? `/${db}` : ''}`;
}

const busy = new Set();

// The emitter's own listeners, called with this = the Redlock. Module functions, not arrows in
// the constructor: an arrow there that used `this` would put it in the constructor's closure
// context, which the dispatcher handed to the thread-safe function shares, and the Redlock could
// never be collected (test/gc.test.mjs).
function metricsListenerAdded(name) {
  if (name === 'metrics' && this.listenerCount('metrics') === 0 && !this._closed) native.clientEvents(this._h, true);
}

function metricsListenerRemoved(name) {
  if (name === 'metrics' && this.listenerCount('metrics') === 0 && !this._closed) native.clientEvents(this._h, false);
}

class Redlock extends EventEmitter {
  constructor(clients, settings = {}, scripts) {
    super();
    void scripts; // node-redlock's custom scripts: the C library has its own (docs/node.md)
    if (clients === undefined || clients === null || typeof clients[Symbol.iterator] !== 'function' ||
        typeof clients === 'string') {
      throw invalid(`clients must be an array of node URLs or Redis clients, not ${describe(clients)}`);
    }
    this.settings = mergeSettings(defaultSettings, settings);
    const copts = { driftFactor: this.settings.driftFactor };
    const t = settings.tls || {};
    if (t.caFile) copts.tlsCaFile = t.caFile;
    if (t.caDir) copts.tlsCaDir = t.caDir;
    if (t.certFile) copts.tlsCertFile = t.certFile;
    if (t.keyFile) copts.tlsKeyFile = t.keyFile;
    if (t.serverName) copts.tlsServerName = t.serverName;
    if (t.insecureSkipVerify) copts.tlsInsecureSkipVerify = 1;
    for (const [k, name] of [['nodeTimeout', 'nodeTimeoutMs'], ['connectTimeout', 'connectTimeoutMs'],
      ['unreachableTimeout', 'unreachableMs']]) {
      if (settings[k] !== undefined) {
        checkInt(k, settings[k], 0, 604800000);
        copts[name] = settings[k];
      }
    }
    let flags = 0;
    if (settings.fencing) flags |= OPT_FENCING;
    if (settings.wake === true) flags |= OPT_WAKE;
    if (settings.wake === false) flags |= OPT_NO_WAKE;
    if (settings.fair === true) flags |= OPT_FAIR;
    copts.flags = flags;
    const given = [...clients];
    const urls = given.map((c) => urlOfClient(c, copts));
    // node-redlock's quit() quits the clients it was given: so does this one's.
    this._clientObjects = given.filter((c) => typeof c === 'object' && c !== null);
    this._given = given;
    // The thread-safe function holds its callback strongly: through a WeakRef, so that a Redlock
    // dropped without quit() can still be collected, and its finalizer close the client.
    const self = new WeakRef(this);
    const [rc, handle] = native.clientOpen(urls, copts, (...a) => { const rl = self.deref(); if (rl) rl._dispatch(...a); });
    if (rc !== 0) throw makeError(rc, handle);
    this._h = handle;
    this._urls = native.clientNodeUrls(handle);
    this._seq = 0;
    this._pending = new Map();   // id -> { resolve, h, acquire }
    this._lost = new Map();      // id -> fn
    this._active = 0;            // waits under way + locks under auto-extension
    this._leaders = new Set();   // Elections of this Redlock that lead (resigned by quit())
    this._closed = false;
    this._closing = false;
    // The metrics hook: C copies its events for JS only while a 'metrics' listener is there.
    this.on('newListener', metricsListenerAdded);
    this.on('removeListener', metricsListenerRemoved);
  }

  get nodes() { return [...this._urls]; }

  // node-redlock's clients: what was given (URLs or client objects), in order.
  get clients() { return new Set(this._given); }

  // While something waits or is auto-extended, the Redlock stays reachable (its pending
  // promises live in it) and keeps the event loop alive; after, neither.
  _hold(delta) {
    const before = this._active;
    this._active += delta;
    if (before === 0 && this._active > 0) busy.add(this);
    else if (before > 0 && this._active === 0) busy.delete(this);
    if (this._closed) return;
    if (before === 0 && this._active > 0) native.clientRef(this._h, true);
    else if (before > 0 && this._active === 0) native.clientRef(this._h, false);
  }

  _dispatch(kind, id, rc, message, validity, report, token, leader) {
    if (kind === 1) {
      const p = this._pending.get(id);
      if (!p) return;
      this._pending.delete(id);
      this._hold(-1);
      p.resolve({ rc, message, validity, report, token, leader });
    } else if (kind === 2) {
      const fn = this._lost.get(id);
      if (fn) fn(rc, message, report, token);
    } else if (kind === 3 && this.listenerCount('metrics') > 0) {
      this.emit('metrics', this._event(rc, message, token, leader));
    }
  }

  // A metrics event from the addon's copy of a redlock_event.
  _event(code, message, token, e) {
    const [type, , resource, attempt, automatic, nodesOk, quorum, nodeCount, elapsedUs, validityMs, node,
      nodeOutcome, nodeRttUs, listenerState, heldUs, rtts] = e;
    const name = EVENT_TYPES[type] || String(type);
    const perNode = EVENT_NODE.has(name);
    return {
      type: name,
      code: code ? native.strerror(code)[0] : null,
      errno: code,
      resource,
      message,
      attempt,
      automatic: automatic !== 0,
      nodesOk,
      quorum,
      nodeCount,
      elapsedUs,
      validityMs,
      fencingToken: token,
      node: perNode ? this._urls[node] : null,
      nodeOutcome: name === 'node-error' ? (OUTCOMES[nodeOutcome] || String(nodeOutcome)) : null,
      nodeRttUs: name === 'node-error' ? nodeRttUs : null,
      listenerState: name === 'listener' ? (LISTENER_STATES[listenerState] || String(listenerState)) : null,
      heldUs,
      nodeRttsUs: rtts,
    };
  }

  // One asynchronous call on a C handle: start(id) begins it in C; resolves with its outcome.
  // cancel, for a wait (an acquire, a campaign, an observe): called on the signal's abort and
  // by quit(); C then ends the wait with REDLOCK_ECANCELED after at most the round in flight.
  _op(start, signal, cancel) {
    if (this._closed) return Promise.resolve({ rc: -15, message: 'the Redlock was closed by quit()', report: [] });
    const id = ++this._seq;
    return new Promise((resolve) => {
      let onAbort;
      const done = (r) => {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      this._pending.set(id, { resolve: done, cancel });
      this._hold(1);
      const [rc, message] = start(id);
      if (rc !== 0) {
        this._pending.delete(id);
        this._hold(-1);
        done({ rc, message, report: [] });
        return;
      }
      if (signal && cancel) {
        onAbort = cancel;
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
  }

  _attempt(report) {
    const n = report.length;
    const votesFor = new Set();
    const votesAgainst = new Map();
    const nodes = report.map(([outcome, code, rttUs, message], i) => {
      const node = this._urls[i];
      const o = OUTCOMES[outcome] || String(outcome);
      if (o === 'ok') votesFor.add(node);
      else if (o !== 'none' && o !== 'not-waited') {
        // node-redlock's votesAgainst: each node's error, a ResourceLockedError for a refusal
        const e = o === 'refused' ? makeError(-3, `${node}: ${message || 'held by another owner'}`)
          : makeError(code || -8, `${node}: ${message || o}`);
        e.node = node;
        e.outcome = o;
        votesAgainst.set(node, e);
      }
      return { node, outcome: o, errno: code, code: code ? native.strerror(code)[0] : null, rttUs, message };
    });
    return { membershipSize: n, quorumSize: Math.floor(n / 2) + 1, votesFor, votesAgainst, nodes };
  }

  _emitError(err) {
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  _emitNodeErrors(attempt) {
    for (const e of attempt.votesAgainst.values()) {
      if (!(e instanceof errors.ResourceLockedError)) this._emitError(e);
    }
  }

  _fail(r, name) {
    const attempt = this._attempt(r.report);
    this._emitNodeErrors(attempt);
    return makeError(r.rc, r.message, name, r.report.length ? attempt : null);
  }

  async acquire(resources, duration, settings) {
    const list = toResources(resources);
    checkDuration(duration);
    const s = mergeSettings(this.settings, settings);
    return this._take(() => native.lockOpen(this._h, list), list.join(','), duration, s,
      (h, attempt, token) => new Lock(this, h, list, attempt, token));
  }

  // An acquire of a new C handle of any kind (mutex, semaphore permit, read or write side):
  // open() makes it, make(h, attempt, token) the JS lock once held.
  async _take(open, display, duration, s, make) {
    if (this._closed) throw makeError(-15, 'the Redlock was closed by quit()');
    const signal = s.signal || undefined;
    if (signal && signal.aborted) {
      throw makeError(-13, 'the signal was aborted before the acquire', display);
    }
    const [rc, h] = open();
    if (rc !== 0) throw makeError(rc, h, display);
    const [orc, omsg] = native.lockSetOptions(h, lockOptions(s));
    if (orc !== 0) throw makeError(orc, omsg, display);
    const r = await this._op((id) => native.lockAcquire(h, id, duration, waitOf(s)), signal,
      () => native.lockCancel(h, false));
    if (r.rc !== 0) throw this._fail(r, native.lockResource(h));
    const attempt = this._attempt(r.report);
    this._emitNodeErrors(attempt);
    return make(h, attempt, r.token);
  }

  async release(lock, settings) {
    void settings;
    if (!(lock instanceof Lock)) throw invalid(`not a Lock: ${describe(lock)}`);
    return lock.release();
  }

  async extend(lock, duration, settings) {
    void settings;
    if (!(lock instanceof Lock)) throw invalid(`not a Lock: ${describe(lock)}`);
    return lock.extend(duration);
  }

  async using(resources, duration, settingsOrRoutine, maybeRoutine) {
    const [settings, routine] = routineOf('using()', settingsOrRoutine, maybeRoutine);
    checkDuration(duration);
    const s = mergeSettings(this.settings, settings);
    return this._using(() => this.acquire(resources, duration, settings), duration, s, routine);
  }

  // using() for a lock of any kind: take() acquires it; it is auto-extended while routine runs,
  // the signal tells of its loss, and it is released after.
  async _using(take, duration, s, routine) {
    if (s.automaticExtensionThreshold > duration - 100) {
      throw invalid('A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.');
    }
    const lock = await take();
    const controller = new AbortController();
    const signal = controller.signal;
    lock._autoExtend(s.automaticExtensionThreshold, (code, message, report) => {
      if (signal.aborted) return;
      const err = makeError(code, message, lock._resource, this._attempt(report));
      signal.error = err;
      controller.abort(err);
      this._emitError(err);
    });
    try {
      return await routine(signal);
    } finally {
      lock._stopAutoExtend();
      try {
        await lock.release();
      } catch (e) {
        // After a loss the signal has told it: the release only confirms it.
        if (!signal.aborted) throw e;
        this._emitError(e);
      }
    }
  }

  // A counting semaphore of `limit` permits on `name` (docs/node.md, "Semaphore").
  semaphore(name, limit, settings) { return new Semaphore(this, name, limit, settings); }

  // The read-write lock on `name` (docs/node.md, "Read-write lock").
  rwlock(name, settings) { return new RWLock(this, name, settings); }

  // Leader election on `name` (docs/node.md, "Leader election").
  election(name, settings) { return new Election(this, name, settings); }

  async quit() {
    if (this._closed) return;
    this._closing = true;
    for (const p of this._pending.values()) if (p.cancel) p.cancel();
    for (const lock of Lock._armed) if (lock._redlock === this) lock._stopAutoExtend();
    // A leadership is auto-extended by C until resigned: hand it over now (one round each).
    const resigns = [...this._leaders].map((e) => e._resignCurrent().catch(() => {}));
    const waits = [...this._pending.values()].map((p) => new Promise((res) => {
      const prev = p.resolve;
      p.resolve = (r) => { prev(r); res(); };
    }));
    await Promise.all([...waits, ...resigns]);
    this._closed = true;
    native.clientEvents(this._h, false);
    native.clientClose(this._h);
    await Promise.allSettled(this._clientObjects.map((c) => (typeof c.quit === 'function' ? c.quit() : undefined)));
  }
}

class Lock {
  constructor(redlock, h, resources, report, token) {
    this._redlock = redlock;
    this._h = h;
    this._resource = native.lockResource(h);
    this.resources = resources;
    this._setReport(report);
    this._token = token;
    this._lostId = 0;
  }

  get redlock() { return this._redlock; }

  // The per-node report of the lock's last round (acquire, extend or release), and node-redlock's
  // attempts: promises of it (C keeps the last round's report only).
  _setReport(report) {
    this.report = report;
    this.attempts = [Promise.resolve(report)];
  }

  // Not exposed by the C ABI (docs/node.md): the random value stays inside the library.
  get value() { return undefined; }

  // When the lock's validity ends, in ms since the epoch (0 when not held): read live from C's
  // monotonic validity, so auto-extension moves it.
  get expiration() {
    const v = native.lockValidity(this._h);
    return v > 0 ? Date.now() + v : 0;
  }

  get isHeld() { return native.lockIsHeld(this._h); }

  get validityMs() { return Math.max(0, native.lockValidity(this._h)); }

  // The fencing token of this acquisition (settings.fencing), else 0n.
  get fencingToken() { return this._token; }

  async release() {
    const rl = this._redlock;
    this._stopAutoExtend();
    const r = await rl._op((id) => native.lockRelease(this._h, id));
    const attempt = rl._attempt(r.report);
    if (r.rc !== 0) throw rl._fail(r, this._resource);
    rl._emitNodeErrors(attempt);
    this._setReport(attempt);
    return { attempts: this.attempts, report: attempt };
  }

  async extend(duration) {
    checkDuration(duration);
    const rl = this._redlock;
    const r = await rl._op((id) => native.lockExtend(this._h, id, duration));
    if (r.rc !== 0) throw rl._fail(r, this._resource);
    const attempt = rl._attempt(r.report);
    rl._emitNodeErrors(attempt);
    this._setReport(attempt);
    return this;
  }

  _autoExtend(atRiskMs, onLost) {
    const rl = this._redlock;
    const id = ++rl._seq;
    const [rc, message] = native.lockAutoExtend(this._h, id, atRiskMs);
    if (rc !== 0) throw makeError(rc, message, this._resource);
    rl._lost.set(id, onLost);
    this._lostId = id;
    Lock._armed.add(this);
    rl._hold(1);
  }

  _stopAutoExtend() {
    if (!this._lostId) return;
    const rl = this._redlock;
    native.lockAutoExtend(this._h);
    rl._lost.delete(this._lostId);
    this._lostId = 0;
    Lock._armed.delete(this);
    rl._hold(-1);
  }
}
Lock._armed = new Set();

const MAX_SEM_LIMIT = 1000;

// One acquisition of a semaphore: `permits` of its `limit` permits, taken and given back
// together. A Lock in every other way (release, extend, isHeld, fencingToken, report).
class Permit extends Lock {
  constructor(redlock, h, resources, report, token, semaphore, permits) {
    super(redlock, h, resources, report, token);
    this.semaphore = semaphore;
    this.permits = permits;
  }

  get limit() { return this.semaphore.limit; }
}

// A counting semaphore: at most `limit` permits of `name` held at once, across every process
// that uses the name with the same limit (another limit is refused, naming both).
class Semaphore {
  constructor(redlock, name, limit, settings) {
    this.redlock = redlock;
    this.name = toName(name, 'semaphore name');
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEM_LIMIT) {
      throw invalid(`the semaphore's limit must be an integer from 1 to ${MAX_SEM_LIMIT}, not ${describe(limit)}`, name);
    }
    this.limit = limit;
    this.settings = mergeSettings(redlock.settings, settings);
  }

  _permits(s) {
    const n = s.permits === undefined ? 1 : s.permits;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > this.limit) {
      throw invalid(`permits must be an integer from 1 to the limit, ${this.limit}, not ${describe(n)}`, this.name);
    }
    return n;
  }

  // Takes settings.permits (1) of the permits for `duration` ms, all or none; waits as acquire()
  // does (retryCount, retryDelay, retryJitter, signal). Resolves to a Permit.
  async acquire(duration, settings) {
    checkDuration(duration);
    const s = mergeSettings(this.settings, settings);
    const n = this._permits(s);
    const rl = this.redlock;
    return rl._take(() => native.lockOpenSemaphore(rl._h, this.name, this.limit, n), this.name, duration, s,
      (h, attempt, token) => new Permit(rl, h, [this.name], attempt, token, this, n));
  }

  async using(duration, settingsOrRoutine, maybeRoutine) {
    const [settings, routine] = routineOf('using()', settingsOrRoutine, maybeRoutine);
    checkDuration(duration);
    const s = mergeSettings(this.settings, settings);
    this._permits(s);
    return this.redlock._using(() => this.acquire(duration, settings), duration, s, routine);
  }
}

// The read side of a read-write lock: held by many readers at once, never with a writer.
class ReadLock extends Lock {
  get mode() { return 'read'; }
}

// The write side: held alone, excluding readers, other writers and mutex locks of the name.
class WriteLock extends Lock {
  constructor(...args) {
    super(...args);
    this._downgraded = false;
  }

  // 'read' once downgrade() has made it a read lock.
  get mode() { return this._downgraded ? 'read' : 'write'; }

  // Turns the held write lock into a read lock in one round, with no writer in between, for
  // the duration of its acquisition. On failure it is not held and its keys are released.
  async downgrade() {
    const rl = this._redlock;
    if (this._downgraded) throw makeError(-15, 'already downgraded to a read lock', this._resource);
    const r = await rl._op((id) => native.lockDowngrade(this._h, id));
    if (r.rc !== 0) throw rl._fail(r, this._resource);
    this._downgraded = true;
    const attempt = rl._attempt(r.report);
    rl._emitNodeErrors(attempt);
    this._setReport(attempt);
    return this;
  }
}

// The read-write lock on one name: many readers together, or one writer. Writers are
// preferred: once a waiting writer is refused because of readers, new readers wait for it.
class RWLock {
  constructor(redlock, name, settings) {
    this.redlock = redlock;
    this.name = toName(name, 'read-write lock name');
    this.settings = mergeSettings(redlock.settings, settings);
  }

  _acquire(write, duration, settings) {
    checkDuration(duration);
    const s = mergeSettings(this.settings, settings);
    const rl = this.redlock;
    const Cls = write ? WriteLock : ReadLock;
    return rl._take(() => native.lockOpenRw(rl._h, this.name, write), this.name, duration, s,
      (h, attempt, token) => new Cls(rl, h, [this.name], attempt, token));
  }

  async acquireRead(duration, settings) { return this._acquire(false, duration, settings); }

  async acquireWrite(duration, settings) { return this._acquire(true, duration, settings); }

  _using(write, duration, settingsOrRoutine, maybeRoutine) {
    const [settings, routine] = routineOf(write ? 'usingWrite()' : 'usingRead()', settingsOrRoutine, maybeRoutine);
    checkDuration(duration);
    const s = mergeSettings(this.settings, settings);
    return this.redlock._using(() => this._acquire(write, duration, settings), duration, s, routine);
  }

  async usingRead(duration, settingsOrRoutine, maybeRoutine) {
    return this._using(false, duration, settingsOrRoutine, maybeRoutine);
  }

  async usingWrite(duration, settingsOrRoutine, maybeRoutine) {
    return this._using(true, duration, settingsOrRoutine, maybeRoutine);
  }
}

const { Election, Leadership, Observer } = require('./election.cjs');

const fence = require('./fence.cjs');
const fenceSql = require('./fence_sql.cjs');

// Writes to a Redis/Valkey store (an ioredis or node-redis client) fenced by this acquisition's
// token (settings.fencing): each applies only while no later holder's token has reached the
// resource, else FencedError. The resource defaults to the lock's.
Lock.prototype.fenced = function fenced(store, { resource, retentionMs } = {}) {
  if (!this._token || !this.isHeld) {
    throw errors.makeError(-15, 'no fencing token: the lock is not held, or its Redlock was made without '
      + 'settings.fencing', this._resource);
  }
  return new fence.Fence(store, resource === undefined ? this._resource : resource, this._token, { retentionMs });
};

module.exports = {
  Redlock, Lock, Semaphore, Permit, RWLock, ReadLock, WriteLock, Election, Leadership, Observer,
  defaultSettings, ...errors, ...fence, ...fenceSql,
};
module.exports.default = Redlock;
