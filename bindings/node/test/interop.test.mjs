// SPDX-License-Identifier: BSD-3-Clause
// Interop with node-redlock itself: processes using node-redlock (over ioredis) and processes
// using this package contend for one resource and increment a shared counter under it; no
// update may be lost. node-redlock and ioredis are installed at test time (make test-node) into
// $REDLOCK_NODE_INTEROP_DIR; without them this test fails, saying so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nodeUrls, uniq, ctl } from './helpers.mjs';

const urls = nodeUrls();
const worker = fileURLToPath(new URL('./interop-worker.mjs', import.meta.url));
const PER_PROCESS = 40;

function run(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [worker, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.on('exit', (status, signal) => { clearTimeout(timer); resolve({ status, signal, out }); });
  });
}

test('node-redlock and libredlock processes exclude each other: no update lost', async () => {
  const dir = process.env.REDLOCK_NODE_INTEROP_DIR;
  assert.ok(dir && existsSync(path.join(dir, 'node_modules', 'redlock')) &&
    existsSync(path.join(dir, 'node_modules', 'ioredis')),
  'REDLOCK_NODE_INTEROP_DIR must hold node_modules/redlock (5.0.0-beta.2) and node_modules/ioredis: ' +
    'make test-node installs them');
  const resource = uniq('interop');
  const counter = `${resource}:counter`;
  const kinds = ['redlock', 'libredlock', 'redlock', 'libredlock'];
  const results = await Promise.all(kinds.map((k) => run([k, dir, resource, counter, String(PER_PROCESS)])));
  for (const [i, r] of results.entries()) {
    assert.equal(r.status, 0, `${kinds[i]} worker: status ${r.status} ${r.signal || ''}\n${r.out}`);
    assert.match(r.out, new RegExp(`${kinds[i]} done ${PER_PROCESS}`));
  }
  const total = Number(await ctl('CMD', 0, 'GET', counter));
  assert.equal(total, kinds.length * PER_PROCESS, 'lost updates');
});
