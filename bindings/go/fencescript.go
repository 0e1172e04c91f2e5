// SPDX-License-Identifier: BSD-3-Clause

// The store's side of fencing as the C library defines it (docs/fencing.md,
// "Protecting your store"): the one script, its SHA1 and the fence key's
// name, for the fence package (bindings/go/fence) and any Go code that runs
// the script on its own client to the store.

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
import "C"

import (
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// FenceRetention is how long a fence outlives the last fenced write to
// its resource unless the caller gives another retention (seven days).
const FenceRetention = time.Duration(C.REDLOCK_FENCE_RETENTION_MS) * time.Millisecond

var (
	fenceScript = C.GoString(C.redlock_fence_script())
	fenceSHA1   = C.GoString(C.redlock_fence_script_sha1())
)

// FenceScript is the Lua source of the fenced-write script: KEYS[1] the
// fence key (FenceKey), KEYS[2] the data key (none for "advance"); ARGV[1]
// the token in decimal, ARGV[2] the retention in ms, ARGV[3] the operation
// ("set" VALUE [PX-ms], "del", "hset" FIELD VALUE..., "rpush" VALUE...,
// "incrby" N, "advance"). An older token gets the error reply
// "FENCED <token> <fence> ..." and nothing is written.
func FenceScript() string { return fenceScript }

// FenceScriptSHA1 is the SHA1 of FenceScript, in hex, for EVALSHA.
func FenceScriptSHA1() string { return fenceSHA1 }

// FenceKey is the store key that holds resource's fence: "{resource}:fence",
// or "resource:fence" when resource has a hash tag (so that on a cluster
// store it shares the slot of data keys named with the same tag). It
// returns an *Error matching ErrInvalid for an empty resource, one longer
// than the C limit, one with a NUL, or one with a '}' but no hash tag.
func FenceKey(resource string) (string, error) {
	bad := &Error{Op: "fence", Resource: resource, Code: int(C.REDLOCK_EINVAL),
		Detail: "cannot name a fence: empty, too long, a NUL, or a '}' without a hash tag"}
	if resource == "" || strings.IndexByte(resource, 0) >= 0 {
		return "", bad
	}
	cs := C.CString(resource)
	defer C.free(unsafe.Pointer(cs))
	n := C.redlock_fence_key(nil, 0, cs)
	if n < 0 {
		return "", bad
	}
	buf := (*C.char)(C.malloc(C.size_t(n) + 1))
	defer C.free(unsafe.Pointer(buf))
	C.redlock_fence_key(buf, C.size_t(n)+1, cs)
	return C.GoStringN(buf, n), nil
}

// FenceRefusal reads a store's error reply msg as the fence script's
// refusal, "FENCED <token> <fence> ...": ok is true, with the refused
// write's token and the resource's fence, when it is one (the C library's
// redlock_fence_refusal reads it, for every binding alike).
func FenceRefusal(msg string) (token, fence uint64, ok bool) {
	if len(msg) < 7 || msg[:7] != "FENCED " {
		return 0, 0, false
	}
	cs := C.CString(msg)
	defer C.free(unsafe.Pointer(cs))
	var t, f C.uint64_t
	if C.redlock_fence_refusal(cs, C.size_t(len(msg)), &t, &f) != 1 {
		return 0, 0, false
	}
	return uint64(t), uint64(f), true
}

// FenceSQLStatement names one statement of a fenced write to an SQL row
// (docs/fencing.md, "SQL rows"), as FenceSQL builds it.
type FenceSQLStatement int

// The statements, and the order of the values their parameters take (K the
// key columns' values, V the value columns', T the token).
const (
	// FenceSQLUpsert inserts the row or updates it while its fence is NULL
	// or at most T: parameters K..., V..., T.
	FenceSQLUpsert FenceSQLStatement = C.REDLOCK_FENCE_SQL_UPSERT
	// FenceSQLUpdate updates an existing row while its fence is NULL or at
	// most T: parameters V..., T, K..., and T again unless PlaceholderDollar.
	FenceSQLUpdate FenceSQLStatement = C.REDLOCK_FENCE_SQL_UPDATE
	// FenceSQLRead reads the row's fence after a write that changed no row:
	// parameters K....
	FenceSQLRead FenceSQLStatement = C.REDLOCK_FENCE_SQL_READ
)

// SQLPlaceholder is how a statement marks its parameters.
type SQLPlaceholder int

const (
	PlaceholderDollar   SQLPlaceholder = C.REDLOCK_SQL_DOLLAR // $1, $2, ...: PostgreSQL (pgx, lib/pq)
	PlaceholderFormat   SQLPlaceholder = C.REDLOCK_SQL_FORMAT // %s; a '%' in a name is written %%
	PlaceholderQuestion SQLPlaceholder = C.REDLOCK_SQL_QMARK  // ?: SQLite, MySQL
)

// FenceSQL is the text of one statement of a fenced write to table, built
// by the C library (redlock_fence_sql) as for every binding: each name
// quoted as an identifier ("schema.table" is two), fenceColumn "" meaning
// "fence". Values are never in the text: pass them as parameters in the
// order the statement's constant gives. The token is only checked: 1 to
// 2^63-1, what a BIGINT holds. An *Error matching ErrInvalid says why a
// statement cannot be built: a bad token, an empty or NUL-containing name,
// an empty part of a dotted name, no key column, no value column for an
// upsert, or a column named twice among key, values and fence.
func FenceSQL(stmt FenceSQLStatement, ph SQLPlaceholder, table string, key, values []string, fenceColumn string,
	token uint64) (string, error) {
	if fenceColumn == "" {
		fenceColumn = "fence"
	}
	names := append(append([]string{table, fenceColumn}, key...), values...)
	cs := make([]*C.char, len(names))
	defer func() {
		for _, p := range cs {
			C.free(unsafe.Pointer(p))
		}
	}()
	for i, n := range names {
		// A C string ends at a NUL: a name with one would reach C cut short.
		if strings.IndexByte(n, 0) >= 0 {
			return "", &Error{Op: "fence", Resource: table, Code: int(C.REDLOCK_EINVAL),
				Detail: "a name has a NUL: " + strconv.Quote(n)}
		}
		cs[i] = C.CString(n)
	}
	// A Go slice of C pointers may be handed to C: it holds no Go pointer.
	arr := cs
	var kp, vp **C.char
	if len(key) > 0 {
		kp = &arr[2]
	}
	if len(values) > 0 {
		vp = &arr[2+len(key)]
	}
	var errbuf [256]C.char
	build := func(out *C.char, size C.size_t) C.int {
		return C.redlock_fence_sql(out, size, C.int(stmt), C.int(ph), arr[0], kp, C.size_t(len(key)), vp,
			C.size_t(len(values)), arr[1], C.uint64_t(token), &errbuf[0], C.size_t(len(errbuf)))
	}
	n := build(nil, 0)
	if n < 0 {
		return "", &Error{Op: "fence", Resource: table, Code: int(n), Detail: C.GoString(&errbuf[0])}
	}
	buf := (*C.char)(C.malloc(C.size_t(n) + 1))
	defer C.free(unsafe.Pointer(buf))
	build(buf, C.size_t(n)+1)
	return C.GoStringN(buf, n), nil
}
