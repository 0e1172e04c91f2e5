// SPDX-License-Identifier: BSD-3-Clause
// Fenced writes to SQL rows (docs/fencing.md, "SQL rows"): one statement that writes a row only
// while the caller's token is at least the row's fence column, and raises the column to it, run
// on the caller's own node-postgres client (Client, Pool or PoolClient: anything with
// query(text, values) resolving to { rowCount, rows }). The statements, their quoting and their
// checks are the C library's (redlock_fence_sql), as every binding's are, with PostgreSQL's $n
// placeholders; only the values and the client are handled here.
'use strict';

const { inspect } = require('node:util');
const native = require('./native.cjs');
const errors = require('./errors.cjs');
const { FencedError } = require('./fence.cjs');

// redlock.h's redlock_fence_sql_statement and redlock_sql_placeholder.
const UPSERT = 1;
const UPDATE = 2;
const READ = 3;
const DOLLAR = 1;

// A fenced update found no row with the key: a fenced write does not make one (fencedUpsert does).
class NoSuchRowError extends Error {
  constructor(message, { table, key }) {
    super(message);
    this.name = 'NoSuchRowError';
    this.code = 'ERR_NO_SUCH_ROW';
    this.table = table;
    this.key = key;
  }
}

function columns(obj, what) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new TypeError(`${what} must be a plain object of column to value`);
  }
  return [Object.keys(obj), Object.values(obj)];
}

// The statements of one fenced write, built by the C library, and the values in the order it
// documents (for $n: UPSERT K..., V..., T; UPDATE V..., T, K...; READ K...).
class Statements {
  constructor(client, table, key, values, token, fenceColumn) {
    if (!client || typeof client.query !== 'function') {
      throw new TypeError('client must have query(text, values): a pg Client, Pool or PoolClient');
    }
    if (typeof token === 'number' && Number.isSafeInteger(token)) token = BigInt(token);
    if (typeof token !== 'bigint') throw new TypeError('token must be a bigint (lock.fencingToken) or a safe integer');
    if (typeof table !== 'string') throw new TypeError('table must be a string');
    if (fenceColumn !== undefined && typeof fenceColumn !== 'string') throw new TypeError('fenceColumn must be a string');
    this.client = client;
    this.table = table;
    this.key = key;
    this.token = token;
    [this.kcols, this.kvals] = columns(key, 'key');
    [this.vcols, this.vvals] = columns(values, 'values');
    this.fence = fenceColumn === undefined ? null : fenceColumn;
    this.display = `${table} ${inspect(key, { breakLength: Infinity })}`;
  }

  sql(statement) {
    try {
      return native.fenceSql(statement, DOLLAR, this.table, this.kcols, this.vcols, this.fence, this.token);
    } catch (e) {
      if (e && e.code === 'REDLOCK_EINVAL') throw errors.invalid(e.message);
      throw e;
    }
  }

  async run(statement, params) {
    const r = await this.client.query(this.sql(statement), params);
    if (!r || typeof r.rowCount !== 'number' || !Array.isArray(r.rows)) {
      throw new TypeError('client.query must resolve to { rowCount, rows }, as node-postgres does');
    }
    return r;
  }

  // Why a write changed no row: the fence that refused it, or no such row.
  async refused() {
    const { rows } = await this.run(READ, this.kvals);
    if (!rows.length) {
      return new NoSuchRowError(`${this.display}: no such row to update (fencedUpsert makes one)`,
        { table: this.table, key: this.key });
    }
    const v = Object.values(rows[0])[0];
    const seen = v === null || v === undefined ? 0n : BigInt(v);
    return new FencedError(`${this.display}: token ${this.token} is older than ${seen}, the row's fence: `
      + 'a later holder has written',
    { token: this.token, fence: seen, resource: this.display, detail: `FENCED ${this.token} ${seen}` });
  }
}

// Inserts the row key + values with the fence column = token, or updates it to values if it
// exists and its fence is at most token (or NULL), in one statement (INSERT ... ON CONFLICT (key)
// DO UPDATE ... WHERE fence IS NULL OR fence <= token). A row whose fence is above token is left
// as it is and FencedError names both. key's columns must be the table's primary key or a unique
// index (ON CONFLICT needs one). The caller commits, if in a transaction.
async function fencedUpsert(client, table, key, values, token, { fenceColumn } = {}) {
  const s = new Statements(client, table, key, values, token, fenceColumn);
  const r = await s.run(UPSERT, [...s.kvals, ...s.vvals, s.token.toString()]);
  if (r.rowCount === 0) throw await s.refused();
}

// Updates the existing row key to values and the fence column = token if its fence is at most
// token (or NULL: the first fenced write). FencedError if a later holder's token is there;
// NoSuchRowError if there is no such row. Empty values only raise the fence, as a new holder does
// before it reads the row, so that the previous holder's late write fails from then on.
async function fencedUpdate(client, table, key, values, token, { fenceColumn } = {}) {
  const s = new Statements(client, table, key, values, token, fenceColumn);
  // $n names the token once, in SET and in WHERE.
  const r = await s.run(UPDATE, [...s.vvals, s.token.toString(), ...s.kvals]);
  if (r.rowCount === 0) throw await s.refused();
}

module.exports = { fencedUpsert, fencedUpdate, NoSuchRowError };
