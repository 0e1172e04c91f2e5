// SPDX-License-Identifier: BSD-3-Clause

// Without cgo this package is empty, so that the build stops at the
// binding's own "needs cgo" message instead of here.

//go:build !cgo

package cbaseline
