// SPDX-License-Identifier: BSD-3-Clause

// TryLockMany: one attempt at each of many Mutexes, pipelined in about one
// round trip (redlock_lock_acquire_many), for a dispatcher that takes a
// lock per message.

//go:build cgo

package redlock

// #include <stdlib.h>
// #define REDLOCK_EXPERIMENTAL
// #include "redlock.h"
import "C"

import (
	"fmt"
	"sort"
	"unsafe"
)

// TryLockMany makes one attempt at each of ms (Mutexes of this client, of
// any kind), as TryLock would, all at once: about one round trip instead
// of one per Mutex. errs[k] is what ms[k].TryLock would have returned (nil
// when it is held now). The Mutexes must share one expiry (WithExpiry); a
// Mutex given twice, another client's, a nil one or different expiries make
// every element an error matching ErrInvalid, before any I/O.
func (c *Client) TryLockMany(ms ...*Mutex) []error {
	errs := make([]error, len(ms))
	if len(ms) == 0 {
		return errs
	}
	invalid := func(detail string) []error {
		e := &Error{Op: "lock many", Code: int(C.REDLOCK_EINVAL), Detail: detail}
		for k := range errs {
			errs[k] = e
		}
		return errs
	}
	// A nil Mutex has no handle to give C, and the expiry is each Mutex's
	// own in Go (WithExpiry): these two are the binding's. The list's
	// checks (another client's Mutex, one twice, too many) are C's.
	var ttl uint32
	for k, m := range ms {
		if m == nil {
			return invalid(fmt.Sprintf("Mutex %d is nil", k))
		}
		if m.err == nil {
			if ttl != 0 && m.ttlMs != ttl {
				return invalid("the Mutexes have different expiries (WithExpiry): give them one")
			}
			ttl = m.ttlMs
		}
	}
	// Each Mutex's own lock, taken once and in one order (by address) so
	// that two overlapping calls cannot wait for each other; the client's
	// read side once, as each call takes it.
	order := make([]int, 0, len(ms))
	for k, m := range ms {
		if m.err != nil {
			errs[k] = m.err
			continue
		}
		order = append(order, k)
	}
	sort.Slice(order, func(a, b int) bool {
		return uintptr(unsafe.Pointer(ms[order[a]])) < uintptr(unsafe.Pointer(ms[order[b]]))
	})
	for i, k := range order {
		if i == 0 || ms[k] != ms[order[i-1]] {
			ms[k].mu.Lock()
			defer ms[k].mu.Unlock()
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	live := order[:0:0]
	for _, k := range order {
		if c.closing.Load() || ms[k].h.p == nil {
			errs[k] = closedErr("lock", ms[k].name)
			continue
		}
		C.redlock_lock_cancel_reset(ms[k].h.p)
		live = append(live, k)
	}
	if len(live) == 0 {
		return errs
	}
	n := len(live)
	arr := (**C.redlock_lock)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.redlock_lock)(nil)))))
	res := (*C.int)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int(0)))))
	const errSize = 512
	cerr := (*C.char)(C.malloc(errSize))
	defer C.free(unsafe.Pointer(arr))
	defer C.free(unsafe.Pointer(res))
	defer C.free(unsafe.Pointer(cerr))
	ps, rcs := unsafe.Slice(arr, n), unsafe.Slice(res, n)
	for j, k := range live {
		ps[j] = ms[k].h.p
	}
	if rc := C.redlock_lock_acquire_many(c.p, arr, C.size_t(n), C.uint32_t(ttl), res, cerr, errSize); rc != 0 {
		e := &Error{Op: "lock many", Code: int(rc), Detail: C.GoString(cerr)}
		for _, k := range live {
			errs[k] = e
		}
		return errs
	}
	for j, k := range live {
		m, p := ms[k], ps[j]
		if rcs[j] == 0 {
			m.t.newHold()
			m.observe(p, nil)
			continue
		}
		errs[k] = m.fail("lock", rcs[j], p)
		m.observe(p, errs[k])
	}
	return errs
}
