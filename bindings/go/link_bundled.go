// SPDX-License-Identifier: BSD-3-Clause

// Default link mode: the C library's sources (../../c/src and ../../c/common,
// compiled by the bundled_*.c files next to this one) become part of this package.
// The bundled_*.c files and the compile flags (link_bundled_flags.go) are written by
// tools/gen-go-bundle from c/sources.txt and c/cflags.txt, which CMake and the Python
// build read too; this file adds the include paths and the libraries.

//go:build cgo && !redlock_system

package redlock

// #cgo CFLAGS: -I${SRCDIR}/../../c/include -I${SRCDIR}/../../c/src -I${SRCDIR}/../../c/common
// /* The dependencies come through one .pc file of this package that requires
//  * them, so that pkg-config's error when one is missing ("required by ...")
//  * quotes the file's name, which says what to install on Debian. */
// #cgo pkg-config: ${SRCDIR}/pkgconfig/redlock-go-needs--on-Debian-apt-install-libssl-dev-and-libhiredict-shims-dev-from-bookworm-backports-or-libhiredis-dev-1.0-or-later.pc
// #cgo LDFLAGS: -lpthread
import "C"

// LinkMode says how libredlock was linked into this program.
const LinkMode = "bundled"
