// SPDX-License-Identifier: BSD-3-Clause
// npm's prepack: copies the C core's sources (c/sources.txt, c/cflags.txt, what they list, and
// the headers beside them) from the source tree into csrc/, so that the packed tarball can
// build its addon from source where the prebuilt does not load (scripts/install.cjs).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const pkg = path.join(__dirname, '..');
const root = path.join(pkg, '..', '..');
const out = path.join(pkg, 'csrc');
const list = (f) => fs.readFileSync(path.join(root, f), 'utf8').split('\n')
  .map((s) => s.trim()).filter((s) => s && !s.startsWith('#'));

if (!fs.existsSync(path.join(root, 'c', 'sources.txt'))) {
  console.error(`libredlock prepack: no c/sources.txt in ${root}: pack from the redlock source tree`);
  process.exit(1);
}
fs.rmSync(out, { recursive: true, force: true });
const files = ['c/sources.txt', 'c/cflags.txt', 'LICENSE', ...list('c/sources.txt')];
for (const dir of ['c/include', 'c/src', 'c/src/engine', 'c/common']) {
  for (const f of fs.readdirSync(path.join(root, dir))) {
    if (f.endsWith('.h')) files.push(`${dir}/${f}`);
  }
}
for (const f of files) {
  fs.mkdirSync(path.dirname(path.join(out, f)), { recursive: true });
  fs.copyFileSync(path.join(root, f), path.join(out, f));
}
console.error(`libredlock prepack: ${files.length} files of the C core in csrc/`);
