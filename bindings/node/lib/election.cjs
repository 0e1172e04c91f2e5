// SPDX-License-Identifier: BSD-3-Clause
// Leader election over the C library's redlock_election_* (docs/node.md, "Leader election";
// the safety argument in docs/algorithm.md): campaign() resolves once this process leads, with a
// Leadership whose term is a fencing token; resign() hands over; observe() is an async iterator
// of the election's changes. Every wait runs on the client's acquire thread
// (redlock_election_campaign_async, redlock_election_observe_async) and ends through the
// client's thread-safe function, as the locks' do (redlock.cjs, src/redlock_node.c).
'use strict';

const native = require('./native.cjs');
const { makeError, invalid } = require('./errors.cjs');

const WAIT_NONE = 0;
const WAIT_FOREVER = -2;
const MAX_TTL_MS = 86400000;
const MAX_WAIT_MS = 604800000;
const MAX_VALUE = 1024;
const ECANCELED = -13;
const ETIMEDOUT = -7;
const DONE = Object.freeze({ value: undefined, done: true });

function describe(v) {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number' || typeof v === 'boolean' || v == null) return String(v);
  return Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}

// A campaign's or a proclaim's value: a string of at most MAX_VALUE bytes, without NUL.
function checkValue(value, name) {
  if (typeof value !== 'string') throw invalid(`the value must be a string, not ${describe(value)}`, name);
  if (value.includes('\0')) throw invalid('the value must not contain a NUL character', name);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_VALUE) throw invalid(`the value is ${bytes} bytes, over the limit of ${MAX_VALUE}`, name);
}

function checkMs(what, v, min, max) {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalid(`${what} must be an integer number of milliseconds from ${min} to ${max}, not ${describe(v)}`);
  }
}

function checkSignal(signal) {
  if (signal !== undefined && signal !== null &&
      (typeof signal !== 'object' || typeof signal.addEventListener !== 'function')) {
    throw invalid(`the setting signal must be an AbortSignal, not ${describe(signal)}`);
  }
  return signal || undefined;
}

function checkSettings(settings, what) {
  if (settings === undefined || settings === null) return {};
  if (typeof settings !== 'object') throw invalid(`${what} must be an object, not ${describe(settings)}`);
  return settings;
}

// What a read of the election found, from the addon's [present, revision, value] and the term.
function leaderOf(state, term) {
  const [present, revision, value] = state;
  return Object.freeze({ present, term, revision: present ? revision : 0, value: present ? value : null });
}

// This process's leadership of one term, from campaign().
class Leadership {
  constructor(election, term, report) {
    this.election = election;
    this.term = term;
    this.report = report;
    this._controller = new AbortController();
    this._ended = false;
  }

  // Aborted, with signal.error, when the leadership is lost (it could not be extended in time,
  // or the nodes no longer have it): stop acting as leader then. Not aborted by resign().
  get signal() { return this._controller.signal; }

  // True while this term lasts: not resigned, not lost, its validity not run out.
  get isLeader() {
    if (this._ended) return false;
    const [leading, term] = native.electionState(this.election._h);
    return leading && term === this.term;
  }

  get validityMs() { return this.isLeader ? Math.max(0, native.electionState(this.election._h)[2]) : 0; }

  // The leader's new value, same term, next revision (redlock_election_proclaim): observers
  // see it. StateError once this leadership has ended; LockLostError when the nodes say the
  // election is no longer ours. A value written on too few nodes may be proclaimed again.
  async proclaim(value) {
    checkValue(value, this.election.name);
    if (this._ended) {
      throw makeError(-15, `the leadership of term ${this.term} has already ended`, this.election.name);
    }
    return this.election._proclaim(this, value);
  }

  // Gives the leadership up at once: the next campaigner is woken.
  async resign() {
    if (this._ended) {
      throw makeError(-15, `the leadership of term ${this.term} has already ended`, this.election.name);
    }
    return this.election._resign(this);
  }
}

// The election's changes as an async iterator, from Election.observe(): each item is a Leader
// ({ present, term, revision, value }), in term order, never a term back. It ends (done) on
// break (return()), close(), the signal's abort, quit(), and when a wait runs past `timeout`
// (then timedOut is true). Each observer waits on a C handle of its own.
class Observer {
  constructor(election, { signal, current = true, timeout } = {}) {
    this.election = election;
    this._signal = checkSignal(signal);
    if (typeof current !== 'boolean') throw invalid(`the setting current must be a boolean, not ${describe(current)}`);
    if (timeout !== undefined) checkMs('the setting timeout', timeout, 1, MAX_WAIT_MS);
    this._current = current;
    this._timeout = timeout;
    this._h = null;
    this._primed = false;
    this._closed = false;
    this._waiting = false;
    this._tail = Promise.resolve();
    this.timedOut = false;
  }

  [Symbol.asyncIterator]() { return this; }

  get closed() { return this._closed; }

  // One next() at a time on the C handle: later calls wait their turn.
  next() {
    const p = this._tail.then(() => this._next());
    this._tail = p.then(() => {}, () => {});
    return p;
  }

  // break in a for await loop: the iteration ends, and a wait under way is cancelled.
  async return() {
    this.close();
    return DONE;
  }

  // Ends the iteration: a next() waiting resolves done, after at most the read in flight.
  close() {
    if (this._closed) return;
    this._closed = true;
    if (this._waiting && this._h) native.electionCancel(this._h, false);
  }

  async _next() {
    const e = this.election;
    if (this._closed) return DONE;
    if (this._signal && this._signal.aborted) {
      this.close();
      return DONE;
    }
    if (!this._h) this._h = e._open(0);
    if (!this._primed) {
      // The state now: one read, from the zeroed state (no leader, term 0); "timed out" means
      // the election is still in that state.
      const first = await this._observe(WAIT_NONE);
      if (first === null) return DONE;
      this._primed = true;
      if (this._current) return { value: first, done: false };
    }
    const change = await this._observe(this._timeout === undefined ? WAIT_FOREVER : this._timeout);
    return change === null ? DONE : { value: change, done: false };
  }

  // The next state (a Leader), or null once the iteration has ended; throws what C failed with.
  async _observe(wait) {
    const e = this.election;
    const rl = e.redlock;
    const h = this._h;
    this._waiting = true;
    let r;
    try {
      r = await rl._op((id) => native.electionObserve(h, id, wait), this._signal,
        () => native.electionCancel(h, false));
    } finally {
      this._waiting = false;
    }
    if (r.rc === 0 || (wait === WAIT_NONE && r.rc === ETIMEDOUT)) {
      if (this._closed || (this._signal && this._signal.aborted)) return null;
      return leaderOf(r.leader, r.token);
    }
    this._closed = true;
    if (r.rc === ECANCELED) return null;
    if (r.rc === ETIMEDOUT) {
      this.timedOut = true;
      return null;
    }
    throw makeError(r.rc, r.message, e.name);
  }
}

// One campaigner of the election `name`, and a source of observers. The leader's lock is the
// election's; its term (a fencing token) strictly increases from one leader to the next.
class Election {
  constructor(redlock, name, settings) {
    const s = checkSettings(settings, 'the election\'s settings');
    if (typeof name !== 'string') throw invalid(`the election name must be a string, not ${describe(name)}`);
    if (name.length === 0) throw invalid('the election name must not be empty');
    if (name.includes('\0')) throw invalid(`the election name must not contain a NUL character: ${describe(name)}`);
    this.redlock = redlock;
    this.name = name;
    this.duration = s.duration === undefined ? 10000 : s.duration;
    checkMs('the election\'s duration', this.duration, 1, MAX_TTL_MS);
    if (redlock._closed) throw makeError(-15, 'the Redlock was closed by quit()', name);
    this._lostId = ++redlock._seq;
    this._h = this._open(this._lostId);
    this._campaigning = false;
    this._leadership = null;
  }

  // A C handle on the election (no network I/O); lostId names this Election in loss reports.
  _open(lostId) {
    const rl = this.redlock;
    if (rl._closed) throw makeError(-15, 'the Redlock was closed by quit()', this.name);
    const [rc, h] = native.electionOpen(rl._h, this.name, lostId);
    if (rc !== 0) throw makeError(rc, h, this.name);
    return h;
  }

  // The leadership this Election holds, or null.
  get leadership() {
    return this._leadership && this._leadership.isLeader ? this._leadership : null;
  }

  get isLeader() { return this.leadership !== null; }

  // Waits until this process leads, writes `value` (a string of at most 1024 bytes) with the new
  // term, and keeps the leadership extended (every duration/3) until resign(), its loss or
  // quit(). settings: signal (an AbortSignal: AbortError), timeout (ms: LockTimeoutError after
  // it; none by default), duration (the leadership's TTL, ms; the Election's by default).
  async campaign(value, settings) {
    const s = checkSettings(settings, 'the campaign\'s settings');
    checkValue(value, this.name);
    const duration = s.duration === undefined ? this.duration : s.duration;
    checkMs('the duration', duration, 1, MAX_TTL_MS);
    if (s.timeout !== undefined) checkMs('the setting timeout', s.timeout, 1, MAX_WAIT_MS);
    const signal = checkSignal(s.signal);
    const rl = this.redlock;
    if (rl._closed || rl._closing) throw makeError(-15, 'the Redlock was closed by quit()', this.name);
    if (signal && signal.aborted) throw makeError(ECANCELED, 'the signal was aborted before the campaign', this.name);
    if (this._campaigning) throw makeError(-15, 'a campaign of this Election is under way', this.name);
    if (this.isLeader) {
      throw makeError(-15, `already leading (term ${this._leadership.term}): resign first`, this.name);
    }
    // A leadership that ran out without its loss told yet: the new campaign's acquire ends its
    // auto-extension in C, which then tells nothing more of it.
    if (this._leadership) this._onLost(this._leadership, -5, 'the leadership\'s validity ran out', []);
    const h = this._h;
    native.electionCancel(h, true);   // an earlier abort's cancel is sticky in C
    this._campaigning = true;
    let r;
    try {
      r = await rl._op((id) => native.electionCampaign(h, id, value, duration, s.timeout === undefined ? WAIT_FOREVER : s.timeout),
        signal, () => native.electionCancel(h, false));
    } finally {
      this._campaigning = false;
    }
    if (r.rc !== 0) throw rl._fail(r, this.name);
    const attempt = rl._attempt(r.report);
    rl._emitNodeErrors(attempt);
    const leadership = new Leadership(this, r.token, attempt);
    this._leadership = leadership;
    rl._leaders.add(this);
    rl._lost.set(this._lostId, (code, message, report) => this._onLost(leadership, code, message, report));
    if (rl._closing) {
      // won as quit() cancelled the wait: handed over at once
      await this._resign(leadership).catch(() => {});
      throw makeError(ECANCELED, 'the campaign was cancelled by quit()', this.name);
    }
    return leadership;
  }

  // Told by C's auto-extend thread: the leadership is lost. C posts a loss before the done of
  // any later campaign of the handle (src/redlock_node.c), so it is this leadership's.
  _onLost(l, code, message, report) {
    if (l._ended || this._leadership !== l) return;
    const rl = this.redlock;
    this._end(l);
    const err = makeError(code, message, this.name, rl._attempt(report));
    l.signal.error = err;
    l._controller.abort(err);
    rl._emitError(err);
  }

  _end(l) {
    l._ended = true;
    if (this._leadership === l) {
      this._leadership = null;
      this.redlock._lost.delete(this._lostId);
      this.redlock._leaders.delete(this);
    }
  }

  async _resign(l) {
    const rl = this.redlock;
    if (this._leadership !== l) throw makeError(-15, `the leadership of term ${l.term} has already ended`, this.name);
    const r = await rl._op((id) => native.electionResign(this._h, id));
    if (r.rc === -15 && rl._closed) throw makeError(-15, r.message, this.name);
    this._end(l);
    const attempt = r.report && r.report.length ? rl._attempt(r.report) : null;
    if (r.rc !== 0) throw makeError(r.rc, r.message, this.name, attempt);
    if (attempt) rl._emitNodeErrors(attempt);
  }

  async _proclaim(l, value) {
    const rl = this.redlock;
    if (this._leadership !== l) throw makeError(-15, `the leadership of term ${l.term} has already ended`, this.name);
    const r = await rl._op((id) => native.electionProclaim(this._h, id, value));
    const attempt = r.report && r.report.length ? rl._attempt(r.report) : null;
    if (r.rc !== 0) throw makeError(r.rc, r.message, this.name, attempt);
    if (attempt) rl._emitNodeErrors(attempt);
  }

  // quit()'s hand-over.
  async _resignCurrent() {
    if (this._leadership) await this._resign(this._leadership);
  }

  // Resigns the leadership this Election holds; nothing when it holds none.
  async resign() {
    if (this._leadership) await this._leadership.resign();
  }

  // The election's changes: for await (const leader of election.observe({ signal })) ...
  // settings: signal (ends the iteration), current (true: the first item is the state now;
  // false: the first change after it), timeout (ms a wait may last; the iteration then ends).
  observe(settings) {
    return new Observer(this, checkSettings(settings, 'the observer\'s settings'));
  }

  // The leader as a majority of the nodes report it now (one read): a hint, which may have
  // changed by the time it is seen; act on it only with its term as a fencing token.
  async leader() {
    const o = new Observer(this, { current: true });
    try {
      const { value } = await o.next();
      if (value === undefined) throw makeError(-15, 'the Redlock was closed by quit()', this.name);
      return value;
    } finally {
      o.close();
    }
  }
}

module.exports = { Election, Leadership, Observer };
