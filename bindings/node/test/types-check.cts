// SPDX-License-Identifier: BSD-3-Clause
// The CommonJS shape, compiled by test/types.test.mjs: node-redlock's require('redlock').default,
// and the named export.
import lib = require('libredlock');

const redlock = new lib.default(['redis://127.0.0.1:6379']);
const other: lib.Redlock = new lib.Redlock(['redis://127.0.0.1:6380'], { retryCount: 0 });
export const p: Promise<void[]> = Promise.all([redlock.quit(), other.quit()]);
