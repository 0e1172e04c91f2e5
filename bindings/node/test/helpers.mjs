// SPDX-License-Identifier: BSD-3-Clause
// Test helpers: the nodes of tests/harness/nodes.py exec ($REDLOCK_TEST_NODES) and its control
// socket ($REDLOCK_HARNESS), spoken to in RESP. Without them the tests fail: they never pass
// without real servers.
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
export const lib = require('../lib/index.cjs');

export function nodeUrls() {
  const v = process.env.REDLOCK_TEST_NODES;
  if (!v) {
    throw new Error('REDLOCK_TEST_NODES is not set: run the tests under the harness, ' +
      'python3 tests/harness/nodes.py exec --count 5 --kind mixed -- node --test bindings/node/test/ ' +
      '(make test-node does)');
  }
  return v.split(',');
}

// The tests' Redlocks take nodeTimeout: 500 (ms per node per round; the default is 50) where
// they measure no timing: a machine busy with other builds can stall every node that long, and
// a release that meets such a stall fails with no quorum, which is right, but not what is tested.

export function uniq(name) {
  return `node-test:${name}:${randomBytes(6).toString('hex')}`;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function encode(args) {
  let s = `*${args.length}\r\n`;
  for (const a of args) {
    const b = Buffer.from(String(a));
    s += `$${b.length}\r\n${b.toString('latin1')}\r\n`;
  }
  return Buffer.from(s, 'latin1');
}

// Parses one RESP reply from buf at i: [value, next index] or null when incomplete.
function parse(buf, i) {
  const eol = buf.indexOf('\r\n', i);
  if (eol < 0) return null;
  const t = String.fromCharCode(buf[i]);
  const line = buf.toString('utf8', i + 1, eol);
  if (t === '+') return [line, eol + 2];
  if (t === '-') return [new Error(line), eol + 2];
  if (t === ':') return [Number(line), eol + 2];
  if (t === '$') {
    const n = Number(line);
    if (n < 0) return [null, eol + 2];
    if (buf.length < eol + 2 + n + 2) return null;
    return [buf.toString('utf8', eol + 2, eol + 2 + n), eol + 2 + n + 2];
  }
  if (t === '*') {
    const n = Number(line);
    const out = [];
    let j = eol + 2;
    for (let k = 0; k < n; k++) {
      const r = parse(buf, j);
      if (!r) return null;
      out.push(r[0]);
      j = r[1];
    }
    return [out, j];
  }
  throw new Error(`bad RESP from the harness: ${line}`);
}

// One command to the harness's control socket; rejects on an error reply.
export function ctl(...args) {
  const path = process.env.REDLOCK_HARNESS;
  if (!path) return Promise.reject(new Error('REDLOCK_HARNESS is not set: run under tests/harness/nodes.py exec'));
  return new Promise((resolve, reject) => {
    const sock = net.createConnection(path);
    let buf = Buffer.alloc(0);
    sock.on('connect', () => sock.write(encode(args)));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const r = parse(buf, 0);
      if (!r) return;
      sock.end();
      if (r[0] instanceof Error) reject(new Error(`harness ${args.join(' ')}: ${r[0].message}`));
      else resolve(r[0]);
    });
    sock.on('error', reject);
  });
}

// A command on every node.
export async function onAll(...args) {
  const n = nodeUrls().length;
  return Promise.all([...Array(n).keys()].map((i) => ctl('CMD', i, ...args)));
}

// Commands straight to a node (redis://host:port), pipelined on one connection: for what the
// harness's own connections cannot do once a node asks for a password. Resolves to the replies.
export function nodeCmds(url, ...cmds) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ host: u.hostname, port: Number(u.port) });
    let buf = Buffer.alloc(0);
    sock.setTimeout(2000, () => { sock.destroy(); reject(new Error(`${url}: no reply`)); });
    sock.on('connect', () => sock.write(Buffer.concat(cmds.map(encode))));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const out = [];
      let i = 0;
      while (out.length < cmds.length) {
        const r = parse(buf, i);
        if (!r) return;
        out.push(r[0]);
        i = r[1];
      }
      sock.end();
      resolve(out);
    });
    sock.on('error', reject);
  });
}
