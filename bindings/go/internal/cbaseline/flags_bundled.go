// SPDX-License-Identifier: BSD-3-Clause

// Header path for the default (bundled) link mode; the code itself comes
// with the binding package.

//go:build !redlock_system

package cbaseline

// #cgo CFLAGS: -I${SRCDIR}/../../../../c/include
import "C"
