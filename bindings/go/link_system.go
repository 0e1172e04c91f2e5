// SPDX-License-Identifier: BSD-3-Clause

// Link mode for -tags redlock_system: an installed libredlock, found through
// its pkg-config file (redlock.pc), instead of the bundled sources.

//go:build cgo && redlock_system

package redlock

// #cgo pkg-config: redlock
import "C"

// LinkMode says how libredlock was linked into this program.
const LinkMode = "system"
