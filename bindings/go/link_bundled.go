// Default link mode: the C library's sources (../../c/src, compiled by the
// bundled_*.c files next to this one) become part of this package.

//go:build cgo && !redlock_system

package redlock

// #cgo CFLAGS: -I${SRCDIR}/../../c/include -I${SRCDIR}/../../c/src -I${SRCDIR}/../../c/common -DREDLOCK_BUILDING -D_GNU_SOURCE
// #cgo pkg-config: hiredis hiredis_ssl libssl libcrypto
// #cgo LDFLAGS: -lpthread
import "C"

// LinkMode says how libredlock was linked into this program.
const LinkMode = "bundled"
