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
