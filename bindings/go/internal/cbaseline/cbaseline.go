// SPDX-License-Identifier: BSD-3-Clause

// Package cbaseline times the C library's lock/unlock cycle with no binding
// in between, as the baseline for the Go benchmarks (cgo is not allowed in
// _test.go files, so it lives here). Not part of the public API.
package cbaseline

// #include <stdint.h>
// #include <stdlib.h>
// #include <time.h>
// #include "redlock.h"
//
// static int64_t mono_ns(void) {
//     struct timespec ts;
//     clock_gettime(CLOCK_MONOTONIC, &ts);
//     return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
// }
//
// /* n try-acquire + release cycles on lock; ns[i] gets cycle i's duration.
//  * A failed cycle is timed too. Returns the number of failed cycles and, in
//  * *first, the first failure's code. */
// static int cycles(redlock_lock *lock, uint32_t ttl_ms, int n, int64_t *ns, int *first) {
//     int failed = 0;
//     *first = 0;
//     for (int i = 0; i < n; i++) {
//         int64_t t0 = mono_ns();
//         int rc = redlock_lock_acquire(lock, ttl_ms, REDLOCK_WAIT_NONE);
//         if (rc == 0)
//             rc = redlock_lock_release(lock);
//         ns[i] = mono_ns() - t0;
//         if (rc != 0 && failed++ == 0)
//             *first = rc;
//     }
//     return failed;
// }
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	// The C library's symbols come with the binding (bundled or system).
	_ "github.com/redlock-project/redlock/bindings/go"
)

// Lock is a raw C client and lock handle.
type Lock struct {
	c *C.redlock_client
	l *C.redlock_lock
}

// Open makes a C client over urls (C defaults) and a lock on resource.
func Open(urls []string, resource string) (*Lock, error) {
	curls := make([]*C.char, len(urls))
	for i, u := range urls {
		curls[i] = C.CString(u)
		defer C.free(unsafe.Pointer(curls[i]))
	}
	var errbuf [512]C.char
	var c *C.redlock_client
	if rc := C.redlock_client_open(&c, &curls[0], C.size_t(len(urls)), nil, &errbuf[0], C.size_t(len(errbuf))); rc != 0 {
		return nil, fmt.Errorf("redlock_client_open: %s", C.GoString(&errbuf[0]))
	}
	cres := C.CString(resource)
	defer C.free(unsafe.Pointer(cres))
	var l *C.redlock_lock
	if rc := C.redlock_lock_new(&l, c, cres); rc != 0 {
		C.redlock_client_free(c)
		return nil, fmt.Errorf("redlock_lock_new: %s", C.GoString(C.redlock_strerror(rc)))
	}
	return &Lock{c: c, l: l}, nil
}

// Cycles runs n try-acquire/release cycles inside C and returns each one's
// duration, the number that failed and the first failure.
func (b *Lock) Cycles(n int, ttl time.Duration) ([]time.Duration, int, error) {
	if n == 0 {
		return nil, 0, nil
	}
	ns := make([]C.int64_t, n)
	var first C.int
	failed := int(C.cycles(b.l, C.uint32_t(ttl/time.Millisecond), C.int(n), &ns[0], &first))
	out := make([]time.Duration, n)
	for i := range ns {
		out[i] = time.Duration(ns[i])
	}
	var err error
	if failed > 0 {
		err = fmt.Errorf("%s: %s", C.GoString(C.redlock_error_name(first)), C.GoString(C.redlock_lock_errmsg(b.l)))
	}
	return out, failed, err
}

// Close frees the handle and the client.
func (b *Lock) Close() {
	C.redlock_lock_free(b.l)
	C.redlock_client_free(b.c)
}
