/* SPDX-License-Identifier: BSD-3-Clause */
// Compiles the C library's conn_state.c into the Go package (default link mode).
// One file per C source, so that their static names never meet.
//go:build cgo && !redlock_system

#include "../../c/src/engine/conn_state.c"
