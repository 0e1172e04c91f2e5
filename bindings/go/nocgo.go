// Fails the build with a message that says what to do when cgo is off:
// the binding is a cgo wrapper around the C library and cannot work without it.

//go:build !cgo

package redlock

// The identifier below is undefined on purpose; the compiler prints it as the error.
var _ = redlock_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler_see_docs_go_md
