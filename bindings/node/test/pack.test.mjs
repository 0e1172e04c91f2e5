// SPDX-License-Identifier: BSD-3-Clause
// The package as npm sees it: npm pack, then npm install of the tarball into an empty project
// (offline: it has no dependencies), then an acquire and a release on the nodes through it,
// by require and by import.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nodeUrls, uniq } from './helpers.mjs';

const pkg = fileURLToPath(new URL('..', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

test('npm pack gives a tarball that installs and locks from an empty project', () => {
  const urls = nodeUrls();
  const work = mkdtempSync(path.join(tmpdir(), 'libredlock-pack-'));
  try {
    const out = execFileSync(npm, ['pack', '--json', '--pack-destination', work], { cwd: pkg, encoding: 'utf8' });
    const [info] = JSON.parse(out);
    const files = info.files.map((f) => f.path).sort();
    assert.ok(files.includes('build/redlock_node.node'), `the addon is in the tarball: ${files}`);
    assert.ok(files.includes('index.d.ts') && files.includes('index.d.mts') && files.includes('lib/index.mjs'));
    assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('node_modules/')), `${files}`);
    const project = path.join(work, 'project');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), '{"private": true}');
    execFileSync(npm, ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', path.join(work, info.filename)],
      { cwd: project, encoding: 'utf8' });
    assert.ok(readdirSync(path.join(project, 'node_modules')).includes('libredlock'));
    const env = { ...process.env };
    delete env.REDLOCK_NODE_ADDON;   // the tarball's own addon
    const cjs = `const Redlock = require('libredlock');
      const rl = new Redlock(${JSON.stringify(urls)});
      rl.acquire(${JSON.stringify(uniq('pack'))}, 2000).then(async (l) => { await l.release(); await rl.quit(); console.log('cjs ok'); });`;
    const esm = `import Redlock from 'libredlock';
      const rl = new Redlock(${JSON.stringify(urls)});
      const l = await rl.acquire(${JSON.stringify(uniq('pack'))}, 2000); await l.release(); await rl.quit(); console.log('esm ok');`;
    assert.equal(execFileSync(process.execPath, ['-e', cjs], { cwd: project, env, encoding: 'utf8' }).trim(), 'cjs ok');
    assert.equal(execFileSync(process.execPath, ['--input-type=module', '-e', esm], { cwd: project, env, encoding: 'utf8' }).trim(), 'esm ok');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
