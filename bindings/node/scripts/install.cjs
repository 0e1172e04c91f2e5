// SPDX-License-Identifier: BSD-3-Clause
// npm's install script: keeps the prebuilt addon (build/redlock_node.node) when it loads here, and
// otherwise, or with LIBREDLOCK_BUILD_FROM_SOURCE=1, builds it from the C sources in the package
// (csrc/, or the source tree's c/ when installed from a checkout) with the system's C compiler,
// hiredis and OpenSSL (pkg-config) and node's Node-API headers. docs/node.md, "Install".
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawn } = require('node:child_process');

const pkg = path.join(__dirname, '..');
const addon = path.join(pkg, 'build', 'redlock_node.node');
const say = (m) => console.error(`libredlock: ${m}`);

function loads() {
  try {
    execFileSync(process.execPath, ['-e', `require(${JSON.stringify(addon)})`], { stdio: 'pipe' });
    return null;
  } catch (e) {
    return String(e.stderr || e.message).split('\n').find((l) => /Error/.test(l)) || 'does not load';
  }
}

function fail(m) {
  say(`${m}\nlibredlock: cannot build the addon from source; see docs/node.md, "Install" ` +
    '(needs a C compiler, pkg-config, hiredis >= 1.0 and OpenSSL development files, and node\'s headers)');
  process.exit(1);
}

function run(cmd, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`))));
  });
}

async function build() {
  const root = [path.join(pkg, 'csrc'), path.join(pkg, '..', '..')]
    .find((d) => fs.existsSync(path.join(d, 'c', 'sources.txt')));
  if (!root) fail('no C sources in the package (csrc/) nor a source tree around it');
  const list = (f) => fs.readFileSync(path.join(root, f), 'utf8').split('\n')
    .map((s) => s.trim()).filter((s) => s && !s.startsWith('#'));
  const nodeInc = process.env.NODE_INCLUDE_DIR || path.resolve(process.execPath, '..', '..', 'include', 'node');
  if (!fs.existsSync(path.join(nodeInc, 'node_api.h'))) {
    fail(`no node_api.h in ${nodeInc} (Debian: libnode-dev); set NODE_INCLUDE_DIR`);
  }
  let deps;
  try {
    deps = (m) => execFileSync('pkg-config', [m, 'hiredis >= 1.0.0', 'hiredis_ssl', 'openssl'], { encoding: 'utf8' })
      .trim().split(/\s+/).filter(Boolean);
    deps('--exists');
  } catch (e) {
    fail(`pkg-config finds no hiredis >= 1.0, hiredis_ssl or openssl (${e.message.split('\n')[0]})`);
  }
  const cc = process.env.CC || 'cc';
  const obj = path.join(pkg, 'build', 'obj');
  fs.mkdirSync(obj, { recursive: true });
  const common = ['-O2', '-g', '-fPIC', '-pthread', ...deps('--cflags')];
  const inc = ['c/include', 'c/src', 'c/common'].map((d) => `-I${path.join(root, d)}`);
  const units = list('c/sources.txt').map((s) => ({ src: path.join(root, s), flags: [...list('c/cflags.txt'), ...inc] }));
  for (const f of fs.readdirSync(path.join(pkg, 'src')).filter((x) => x.endsWith('.c'))) {
    units.push({ src: path.join(pkg, 'src', f), flags: ['-std=c11', '-fvisibility=hidden', '-DNODE_GYP_MODULE_NAME=redlock_node',
      '-DBUILDING_NODE_EXTENSION', `-I${nodeInc}`, `-I${path.join(root, 'c', 'include')}`] });
  }
  say(`building the addon from source: ${units.length} files with ${cc}`);
  const objs = units.map((u, i) => path.join(obj, `${i}-${path.basename(u.src, '.c')}.o`));
  let next = 0;
  const jobs = Math.max(1, Math.min(os.availableParallelism ? os.availableParallelism() : os.cpus().length, 8));
  const worker = async () => {
    while (next < units.length) {
      const i = next++;
      await run(cc, [...common, ...units[i].flags, '-c', units[i].src, '-o', objs[i]]);
    }
  };
  try {
    await Promise.all([...Array(jobs)].map(worker));
    const tmp = `${addon}.tmp`;
    await run(cc, ['-shared', '-pthread', '-o', tmp, ...objs, ...deps('--libs')]);
    fs.renameSync(tmp, addon);
  } catch (e) {
    fail(e.message);
  } finally {
    fs.rmSync(obj, { recursive: true, force: true });
  }
  const err = loads();
  if (err) fail(`the addon built from source does not load: ${err}`);
  say(`built ${addon} from source`);
}

const force = process.env.LIBREDLOCK_BUILD_FROM_SOURCE === '1';
const err = fs.existsSync(addon) ? loads() : 'no prebuilt addon';
if (!force && !err) {
  process.exit(0);   // the prebuilt loads: nothing to do
}
say(force ? 'LIBREDLOCK_BUILD_FROM_SOURCE=1: not using the prebuilt addon' : `the prebuilt addon does not load here (${err})`);
build();
