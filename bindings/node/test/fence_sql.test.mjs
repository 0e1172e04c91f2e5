// SPDX-License-Identifier: BSD-3-Clause
// Fenced writes to SQL rows (docs/fencing.md, "SQL rows"): fencedUpsert and fencedUpdate through
// node-postgres (installed at test time into $REDLOCK_NODE_INTEROP_DIR, as ioredis is) on a real
// PostgreSQL started on loopback by tests/harness/pgserver.py exec, which sets
// $REDLOCK_TEST_PG_DSN (make test-node runs the suite under it). The edge cases: the first write,
// equal and older tokens, tokens above 2^53, a NULL fence, the missing row, empty values, quoted
// names, and bad arguments refused before anything reaches the database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { lib, nodeUrls } from './helpers.mjs';

const { Redlock, fencedUpsert, fencedUpdate, FencedError, NoSuchRowError, InvalidArgumentError } = lib;

const DSN = process.env.REDLOCK_TEST_PG_DSN;
const NO_PG = DSN ? false : 'REDLOCK_TEST_PG_DSN is not set: no PostgreSQL, so the fenced SQL writes are NOT tested; ' +
  'run under python3 tests/harness/pgserver.py exec -- ... (make test-node does)';
if (NO_PG) console.error(`fence_sql.test.mjs: SKIPPED: ${NO_PG}`);

function pg() {
  const dir = process.env.REDLOCK_NODE_INTEROP_DIR;
  assert.ok(dir && existsSync(path.join(dir, 'node_modules', 'pg')),
    'REDLOCK_NODE_INTEROP_DIR must hold node_modules/pg: make test-node installs it');
  return createRequire(path.join(dir, 'package.json'))('pg');
}

// A pool on the harness's server with a fresh table: accounts (id BIGINT PRIMARY KEY, balance,
// note, fence BIGINT).
async function withDb(fn) {
  const pool = new (pg().Pool)({ connectionString: DSN, max: 2 });
  try {
    await pool.query('CREATE TABLE IF NOT EXISTS accounts (id BIGINT PRIMARY KEY, balance BIGINT, note TEXT, fence BIGINT)');
    await pool.query('TRUNCATE accounts');
    await fn(pool);
  } finally {
    await pool.end();
  }
}

async function row(db, id) {
  const { rows } = await db.query('SELECT balance, note, fence FROM accounts WHERE id = $1', [id]);
  return rows.length ? [rows[0].balance, rows[0].note, rows[0].fence] : null;
}

const fenced = (token, fence) => (e) => e instanceof FencedError && e.token === token && e.fence === fence &&
  e.code === 'REDLOCK_EFENCED' && e.message.includes(`token ${token}`) && e.message.includes(`${fence}, the row's fence`);

test('upsert: the first write, equal, newer and older tokens', { skip: NO_PG }, () => withDb(async (db) => {
  await fencedUpsert(db, 'accounts', { id: 1 }, { balance: 10, note: 'a' }, 5n);   // no row yet
  assert.deepEqual(await row(db, 1), ['10', 'a', '5']);
  await fencedUpsert(db, 'accounts', { id: 1 }, { balance: 11, note: 'b' }, 5n);   // the same holder
  assert.deepEqual(await row(db, 1), ['11', 'b', '5']);
  await fencedUpsert(db, 'accounts', { id: 1 }, { balance: 12, note: 'c' }, 9);    // a safe integer
  await assert.rejects(fencedUpsert(db, 'accounts', { id: 1 }, { balance: 0, note: 'late' }, 8n), fenced(8n, 9n));
  assert.deepEqual(await row(db, 1), ['12', 'c', '9']);                           // nothing written
}));

test('tokens compare as 64-bit integers, above 2^53 too', { skip: NO_PG }, () => withDb(async (db) => {
  await fencedUpsert(db, 'accounts', { id: 2 }, { balance: 1 }, 10n);
  await assert.rejects(fencedUpsert(db, 'accounts', { id: 2 }, { balance: 2 }, 9n), fenced(9n, 10n)); // "9" > "10"
  const big = 2n ** 53n;                     // big and big + 1n are the same double
  await fencedUpsert(db, 'accounts', { id: 3 }, { balance: 1 }, big + 1n);
  await assert.rejects(fencedUpsert(db, 'accounts', { id: 3 }, { balance: 2 }, big), fenced(big, big + 1n));
  await assert.rejects(fencedUpdate(db, 'accounts', { id: 3 }, { balance: 2 }, big), fenced(big, big + 1n));
  assert.deepEqual(await row(db, 3), ['1', null, (big + 1n).toString()]);
  const top = 2n ** 63n - 1n;
  await fencedUpdate(db, 'accounts', { id: 3 }, { balance: 3 }, top);
  assert.deepEqual(await row(db, 3), ['3', null, top.toString()]);
}));

test('update: a NULL fence, older tokens, the missing row', { skip: NO_PG }, () => withDb(async (db) => {
  await db.query('INSERT INTO accounts (id, balance) VALUES (4, 100)');  // written before fencing
  await fencedUpdate(db, 'accounts', { id: 4 }, { balance: 90 }, 3n);     // NULL fence: the first write
  assert.deepEqual(await row(db, 4), ['90', null, '3']);
  await fencedUpdate(db, 'accounts', { id: 4 }, { balance: 80 }, 3n);
  await assert.rejects(fencedUpdate(db, 'accounts', { id: 4 }, { balance: 0 }, 2n), fenced(2n, 3n));
  assert.deepEqual(await row(db, 4), ['80', null, '3']);
  await assert.rejects(fencedUpdate(db, 'accounts', { id: 5 }, { balance: 1 }, 7n), (e) => e instanceof NoSuchRowError &&
    e.code === 'ERR_NO_SUCH_ROW' && e.table === 'accounts' && e.key.id === 5 && /no such row/.test(e.message) &&
    !(e instanceof FencedError));
  assert.equal(await row(db, 5), null);                                    // an update makes no row
}));

test('update with empty values raises the fence only', { skip: NO_PG }, () => withDb(async (db) => {
  await fencedUpsert(db, 'accounts', { id: 6 }, { balance: 50, note: 'old' }, 3n);
  await fencedUpdate(db, 'accounts', { id: 6 }, {}, 6n);                   // the new holder, before it reads
  assert.deepEqual(await row(db, 6), ['50', 'old', '6']);
  await assert.rejects(fencedUpsert(db, 'accounts', { id: 6 }, { balance: 0 }, 5n), fenced(5n, 6n));
  await assert.rejects(fencedUpdate(db, 'accounts', { id: 6 }, {}, 5n), fenced(5n, 6n));
  assert.deepEqual(await row(db, 6), ['50', 'old', '6']);
  await assert.rejects(fencedUpdate(db, 'accounts', { id: 7 }, {}, 6n), NoSuchRowError);
}));

test('quoted names, a schema, a fence column of its own, a Client and a transaction', { skip: NO_PG }, async () => {
  const { Client } = pg();
  const c = new Client({ connectionString: DSN });
  await c.connect();
  try {
    await c.query('CREATE SCHEMA IF NOT EXISTS app');
    await c.query('DROP TABLE IF EXISTS app."odd ""t"""');
    await c.query('CREATE TABLE app."odd ""t""" ("k%1" TEXT, "K2" INT, "v$1" TEXT, "Fence Col" BIGINT, PRIMARY KEY ("k%1", "K2"))');
    const key = { 'k%1': 'a', K2: 2 };
    const opts = { fenceColumn: 'Fence Col' };
    await fencedUpsert(c, 'app.odd "t"', key, { v$1: 'x' }, 4n, opts);
    await fencedUpdate(c, 'app.odd "t"', key, { v$1: 'y' }, 4n, opts);
    await assert.rejects(fencedUpdate(c, 'app.odd "t"', key, { v$1: 'z' }, 3n, opts), fenced(3n, 4n));
    await c.query('BEGIN');
    await fencedUpdate(c, 'app.odd "t"', key, { v$1: 'rolled back' }, 8n, opts);
    await c.query('ROLLBACK');
    const { rows } = await c.query('SELECT "v$1" AS v, "Fence Col" AS f FROM app."odd ""t"""');
    assert.deepEqual(rows, [{ v: 'y', f: '4' }]);
  } finally {
    await c.end();
  }
});

test('bad arguments are refused before any query, with C\'s reasons', async () => {
  let queries = 0;
  const client = { async query() { queries++; return { rowCount: 1, rows: [] }; } };
  const bad = [
    [fencedUpsert, [client, '', { id: 1 }, { b: 1 }, 1n], /table name is empty/],
    [fencedUpsert, [client, 't', { id: 1 }, { id: 2 }, 1n], /column "id" is named twice/],
    [fencedUpdate, [client, 't', { id: 1 }, { fence: 2 }, 1n], /"fence" is the fence column/],
    [fencedUpsert, [client, 't', { id: 1 }, { b: 1 }, 1n, { fenceColumn: 'id' }], /"id" is the fence column/],
    [fencedUpsert, [client, 't', { id: 1 }, { b: 1 }, 0n], /token must be at least 1, got 0/],
    [fencedUpdate, [client, 't', { id: 1 }, { b: 1 }, 0], /token must be at least 1, got 0/],
    [fencedUpsert, [client, 't', { id: 1 }, { b: 1 }, 2n ** 63n], /token 9223372036854775808 does not fit a BIGINT/],
    [fencedUpsert, [client, 't', { id: 1 }, { b: 1 }, 2n ** 64n], /token must be from 1 to 2\^63-1/],
    [fencedUpsert, [client, 't', { id: 1 }, { b: 1 }, -1n], /token must be from 1 to 2\^63-1/],
    [fencedUpsert, [client, 't', { id: 1 }, {}, 1n], /values must name at least one column/],
    [fencedUpdate, [client, 't', {}, { b: 1 }, 1n], /key must name at least one column/],
    [fencedUpsert, [client, 'a..b', { id: 1 }, { b: 1 }, 1n], /table name/],
    [fencedUpsert, [client, 't\u0000x', { id: 1 }, { b: 1 }, 1n], /table must not contain a NUL/],
    [fencedUpdate, [client, 't', { 'i\u0000d': 1 }, { b: 1 }, 1n], /key column must not contain a NUL/],
    [fencedUpsert, [client, 't', { id: 1 }, { b: 1 }, 1n, { fenceColumn: '' }], /fence column name is empty/],
  ];
  for (const [fn, args, re] of bad) {
    await assert.rejects(fn(...args), (e) => e instanceof InvalidArgumentError && e.code === 'REDLOCK_EINVAL' &&
      re.test(e.message), `${fn.name} ${String(args[1])} ${String(args[4])}`);
  }
  const types = [
    [{}, 't', { id: 1 }, { b: 1 }, 1n], [client, 5, { id: 1 }, { b: 1 }, 1n], [client, 't', null, { b: 1 }, 1n],
    [client, 't', { id: 1 }, [1], 1n], [client, 't', { id: 1 }, { b: 1 }, '5'], [client, 't', { id: 1 }, { b: 1 }, 1.5],
  ];
  for (const args of types) await assert.rejects(fencedUpsert(...args), TypeError);
  assert.equal(queries, 0);
  // A client whose query does not answer as node-postgres does is an error, not a silent success.
  await assert.rejects(fencedUpsert({ async query() { return undefined; } }, 't', { id: 1 }, { b: 1 }, 1n),
    /rowCount/);
});

test('the docs/node.md example, with a lock\'s token', { skip: NO_PG }, () => withDb(async (pool) => {
  const redlock = new Redlock(nodeUrls(), { fencing: true, nodeTimeout: 500 });
  try {
    // docs/node.md, "Fenced writes" (SQL rows), as written there:
    const lock = await redlock.acquire(['account:7'], 10000);
    try {
      await fencedUpsert(pool, 'accounts', { id: 7 }, { balance: 120 }, lock.fencingToken);
      await fencedUpdate(pool, 'accounts', { id: 7 }, { balance: 90 }, lock.fencingToken);
    } finally {
      await lock.release();
    }
    const later = await redlock.acquire(['account:7'], 10000);
    await fencedUpdate(pool, 'accounts', { id: 7 }, {}, later.fencingToken);  // raises the fence
    await later.release();
    assert.deepEqual(await row(pool, 7), ['90', null, later.fencingToken.toString()]);
    await assert.rejects(fencedUpdate(pool, 'accounts', { id: 7 }, { balance: 0 }, lock.fencingToken),
      fenced(lock.fencingToken, later.fencingToken));
  } finally {
    await redlock.quit();
  }
}));
