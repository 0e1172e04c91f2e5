// SPDX-License-Identifier: BSD-3-Clause
// CommonJS entry point: const Redlock = require('libredlock') (node-redlock's default export),
// with the named exports as its properties too: const { Redlock, ResourceLockedError } = ...
'use strict';

const mod = require('./redlock.cjs');

module.exports = mod.Redlock;
Object.assign(module.exports, mod);
