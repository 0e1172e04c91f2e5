// SPDX-License-Identifier: BSD-3-Clause

// Header and library of an installed libredlock, for -tags redlock_system.

//go:build redlock_system

package cbaseline

// #cgo pkg-config: redlock
import "C"
