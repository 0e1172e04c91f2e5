// SPDX-License-Identifier: BSD-3-Clause
// index.d.ts under tsc --strict, reached through the package's "exports" as a user's project
// reaches it (ESM and CommonJS). TypeScript is installed at test time into
// $REDLOCK_NODE_INTEROP_DIR (make test-node); without it this test fails, saying so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync, mkdirSync, symlinkSync, copyFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const pkg = fileURLToPath(new URL('..', import.meta.url));

test('index.d.ts compiles under tsc --strict, from ESM and from CommonJS', () => {
  const dir = process.env.REDLOCK_NODE_INTEROP_DIR;
  const tsc = dir && path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  assert.ok(tsc && existsSync(tsc) && existsSync(path.join(dir, 'node_modules', '@types', 'node')),
    'REDLOCK_NODE_INTEROP_DIR must hold node_modules/typescript and @types/node: make test-node installs them');
  const work = mkdtempSync(path.join(tmpdir(), 'libredlock-types-'));
  try {
    mkdirSync(path.join(work, 'node_modules'));
    symlinkSync(pkg, path.join(work, 'node_modules', 'libredlock'));
    symlinkSync(path.join(dir, 'node_modules', '@types'), path.join(work, 'node_modules', '@types'));
    writeFileSync(path.join(work, 'package.json'), '{"type": "module"}');
    for (const f of ['types-check.mts', 'types-check.cts']) copyFileSync(path.join(pkg, 'test', f), path.join(work, f));
    let out = '';
    try {
      execFileSync(process.execPath, [tsc, '--strict', '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext',
        '--target', 'es2022', '--types', 'node', 'types-check.mts', 'types-check.cts'], { cwd: work, encoding: 'utf8' });
    } catch (e) {
      out = `${e.stdout}${e.stderr}`;
    }
    assert.equal(out, '', `tsc --strict:\n${out}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('index.d.ts (require) and index.d.mts (import) are the same declarations', () => {
  assert.equal(readFileSync(path.join(pkg, 'index.d.mts'), 'utf8'), readFileSync(path.join(pkg, 'index.d.ts'), 'utf8'));
});
