// SPDX-License-Identifier: BSD-3-Clause

// Fails the build with a message that says what to do when cgo is off:
// the binding is a cgo wrapper around the C library and cannot work without it.

//go:build !cgo

package redlock

// The identifier below is undefined on purpose; the compiler prints it as the
// error. With cgo on, the build also needs pkg-config and the development
// files of hiredis >= 1.0 and OpenSSL: on Debian, apt-get install gcc pkgconf
// libssl-dev and libhiredict-shims-dev (Debian 12, from bookworm-backports) or
// libhiredis-dev (later releases). See docs/go.md.
var _ = redlock_needs_cgo__set_CGO_ENABLED_1__on_Debian_apt_install_gcc_pkgconf_libssl_dev_libhiredict_shims_dev__see_docs_go_md
