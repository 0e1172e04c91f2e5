// SPDX-License-Identifier: BSD-3-Clause

// MultiMutex: several names locked together, all or none, as one Mutex
// over a C multi-resource handle (redlock_lock_open_multi), so its Lock,
// Extend, Unlock, Until, Token and auto-extension are the Mutex's.

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
//
// /* A multi-resource handle with the acquisition policy of `like` (a
//  * Mutex's handle made with the same options). On a refused policy the
//  * handle is kept, for its message, and the caller frees it. */
// static int rl_go_multi_open(redlock_lock **out, redlock_client *c, char **names, size_t n,
//                             const redlock_lock *like, char *errbuf, size_t errbuf_size) {
//     int rc = redlock_lock_open_multi(out, c, (const char *const *)names, n, errbuf, errbuf_size);
//     if (rc != 0)
//         return rc;
//     redlock_lock_options o;
//     o.version = REDLOCK_LOCK_OPTIONS_VERSION;
//     if (redlock_lock_get_options(like, &o) != 0)
//         return 0;
//     return redlock_lock_set_options(*out, &o);
// }
import "C"

import (
	"runtime"
	"strings"
	"unsafe"
)

// MaxMultiNames is the most names one multi-resource Mutex takes.
const MaxMultiNames = int(C.REDLOCK_MAX_MULTI)

// NewMultiMutex makes a Mutex that locks every one of names together, all
// or none (Redisson's MultiLock, node-redlock's acquire([...])): each node
// sets all the keys in one script, in one canonical order, so Mutexes that
// list the same names in any order exclude each other and never deadlock,
// and a Mutex on any one of the names excludes them. Its methods are the
// Mutex's; Token is one fencing token for the set, above every name's own
// counter; Name is the names in canonical order joined by commas. As
// NewMutex, it does no I/O and never fails: an empty list, a name given
// twice, more than MaxMultiNames names or a bad name makes every operation
// return the error (matching ErrInvalid). NewMultiMutexOpts takes options.
func (c *Client) NewMultiMutex(names ...string) *Mutex { return c.NewMultiMutexOpts(names) }

// NewMultiMutexOpts is NewMultiMutex with a Mutex's options (WithExpiry,
// WithTries, WithRetryDelay, WithWake, ...).
func (c *Client) NewMultiMutexOpts(names []string, opts ...Option) *Mutex {
	first := "multi"
	if len(names) > 0 && names[0] != "" {
		first = names[0]
	}
	// A Mutex with the options, whose own handle (a mutex, never used)
	// gives way to the multi-resource one.
	m := c.NewMutex(first, opts...)
	m.name = strings.Join(names, ",")
	if m.err != nil {
		if e, ok := m.err.(*Error); ok {
			e.Resource = m.name
		}
		return m
	}
	fail := func(code C.int, detail string) *Mutex {
		m.err = &Error{Op: "new multi mutex", Resource: m.name, Code: int(code), Detail: detail}
		c.regMu.Lock()
		m.h.free()
		delete(c.reg, m.h)
		c.regMu.Unlock()
		m.h = nil // as NewMutex leaves an invalid Mutex: no handle, no finalizer
		runtime.SetFinalizer(m, nil)
		return m
	}
	for _, n := range names {
		if strings.IndexByte(n, 0) >= 0 { // C would see a shorter name
			return fail(C.REDLOCK_EINVAL, "name "+quoteShort(n)+" contains a NUL byte")
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closing.Load() {
		m.err = closedErr("new multi mutex", m.name)
		return m
	}
	cnames := make([]*C.char, len(names)+1)
	for i, n := range names {
		cnames[i] = C.CString(n)
	}
	defer func() {
		for _, p := range cnames[:len(names)] {
			C.free(unsafe.Pointer(p))
		}
	}()
	arr := (**C.char)(C.malloc(C.size_t(len(cnames)) * C.size_t(unsafe.Sizeof(cnames[0]))))
	defer C.free(unsafe.Pointer(arr))
	copy(unsafe.Slice(arr, len(cnames)), cnames)
	var p *C.redlock_lock
	var errbuf [512]C.char
	rc := C.rl_go_multi_open(&p, c.p, arr, C.size_t(len(names)), m.h.p, &errbuf[0], C.size_t(len(errbuf)))
	if rc != 0 {
		if p == nil {
			return fail(rc, C.GoString(&errbuf[0]))
		}
		detail := C.GoString(C.redlock_lock_errmsg(p))
		C.redlock_lock_free(p)
		return fail(rc, detail)
	}
	c.swapHandle(m, p)
	m.name = C.GoString(C.redlock_lock_resource(p))
	return m
}
