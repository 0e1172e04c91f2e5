// SPDX-License-Identifier: BSD-3-Clause
// Loads the addon: $REDLOCK_NODE_ADDON if set, else build/redlock_node.node beside lib/ (what
// the CMake build with -DREDLOCK_NODE=ON writes, and what the package ships).
'use strict';

const path = require('node:path');

const file = process.env.REDLOCK_NODE_ADDON || path.join(__dirname, '..', 'build', 'redlock_node.node');
let addon;
try {
  addon = require(file);
} catch (e) {
  const err = new Error(`libredlock: cannot load the native addon ${file} (${e.message}); ` +
    'build it with: cmake -S . -B build -DREDLOCK_NODE=ON && cmake --build build --target redlock_node ' +
    '(at the root of the redlock source tree; docs/node.md)');
  err.code = 'REDLOCK_ADDON_MISSING';
  err.cause = e;
  throw err;
}
module.exports = addon;
