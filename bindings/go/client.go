// Client: the node set and settings (one C redlock_client), and the
// bookkeeping that lets Close end everything safely while goroutines use it.

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Client is a set of nodes and the settings used to talk to them. It is
// safe for concurrent use. Close it when done; operations after Close
// return ErrClosed.
type Client struct {
	// mu's read side is held by every operation for the length of its C
	// call, its write side by Close, so Close never frees what a call uses.
	mu        sync.RWMutex
	p         *C.redlock_client // nil after Close
	closing   atomic.Bool       // set first thing in Close; new operations stop
	closeOnce sync.Once

	urls []string
	cfg  config // effective settings, and the default expiry for mutexes

	// Every live C lock handle of this client's mutexes, so Close can
	// cancel their waits and free them. Holds handles, not Mutexes, so
	// that an unused Mutex can still be collected.
	regMu sync.Mutex
	reg   map[*handle]struct{}
}

// handle is the C lock owned by one Mutex; p is nil once freed.
type handle struct{ p *C.redlock_lock }

// NewClient makes a client over the given node URLs:
//
//	redis://[user[:password]@]host[:port][/db]   (host may be [IPv6])
//	unix:///path/to/redis.sock[?db=N]
//
//	rediss://...                                 (TLS; see the WithTLS options)
//
// No connection is made yet: nodes are connected on first use. The error
// is an *Error (matching ErrInvalid for a malformed or duplicate URL, ErrTLS
// for TLS files that cannot be loaded) whose text names the offending node.
func NewClient(urls []string, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	cfg.s = cfg.s.effective()
	p, err := openC(urls, cfg.s)
	if err != nil {
		return nil, err
	}
	c := &Client{p: p, urls: append([]string(nil), urls...), cfg: cfg, reg: map[*handle]struct{}{}}
	// Memory only: the C client closes its connections when freed.
	runtime.SetFinalizer(c, (*Client).finalize)
	return c, nil
}

// openC makes a C client; the detail of a failure comes from C's errbuf.
func openC(urls []string, s settings) (*C.redlock_client, error) {
	curls := make([]*C.char, len(urls))
	defer func() {
		for _, u := range curls {
			C.free(unsafe.Pointer(u))
		}
	}()
	for i, u := range urls {
		if strings.IndexByte(u, 0) >= 0 { // C would see a shorter string
			return nil, &Error{Op: "open", Code: int(C.REDLOCK_EINVAL),
				Detail: fmt.Sprintf("node %d: URL contains a NUL byte", i)}
		}
		curls[i] = C.CString(u)
	}
	var first **C.char
	if len(curls) > 0 {
		first = &curls[0]
	}
	o := s.cOptions()
	defer freeCOptions(&o)
	var errbuf [1024]C.char
	var p *C.redlock_client
	rc := C.redlock_client_open(&p, first, C.size_t(len(curls)), &o, &errbuf[0], C.size_t(len(errbuf)))
	if rc != 0 {
		return nil, &Error{Op: "open", Code: int(rc), Detail: C.GoString(&errbuf[0])}
	}
	return p, nil
}

func (c *Client) finalize() {
	C.redlock_client_free(c.p)
	c.p = nil
}

// Close frees the client and the C locks of all its mutexes. Waits in
// progress (LockContext, Lock) are cancelled and return an error matching
// ErrClosed; Close returns once every running operation has returned.
// Locks still held are not released: they expire on the nodes. Close is
// idempotent and safe to call concurrently with anything; it returns nil.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		// closing first, then cancel: an acquire resets its handle's
		// (sticky) cancel before checking closing, so it either sees
		// closing or is cancelled after its reset. Either way it ends
		// within a round, and the write side below is not kept waiting.
		c.closing.Store(true)
		c.cancelAll()
		c.mu.Lock()
		c.regMu.Lock()
		for h := range c.reg {
			C.redlock_lock_free(h.p)
			h.p = nil
		}
		c.reg = nil
		c.regMu.Unlock()
		C.redlock_client_free(c.p)
		c.p = nil
		runtime.SetFinalizer(c, nil)
		c.mu.Unlock()
	})
	return nil
}

func (c *Client) cancelAll() {
	c.regMu.Lock()
	for h := range c.reg {
		C.redlock_lock_cancel(h.p)
	}
	c.regMu.Unlock()
}

func (c *Client) register(h *handle) {
	c.regMu.Lock()
	c.reg[h] = struct{}{}
	c.regMu.Unlock()
}

// unregister frees h unless Close already did.
func (c *Client) unregister(h *handle) {
	c.regMu.Lock()
	if h.p != nil {
		C.redlock_lock_free(h.p)
		h.p = nil
	}
	delete(c.reg, h)
	c.regMu.Unlock()
}

// LoadFunctions loads (FUNCTION LOAD REPLACE) the "redlock" function
// library that WithFunctions calls, on every node. An administrator runs it
// once per node, and again after a node lost its data, through a client
// whose URLs carry a user allowed FUNCTION LOAD. The error's detail gives
// each node's answer.
func (c *Client) LoadFunctions() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closing.Load() {
		return closedErr("load functions", "")
	}
	var errbuf [2048]C.char
	rc := C.redlock_client_load_functions(c.p, &errbuf[0], C.size_t(len(errbuf)))
	runtime.KeepAlive(c)
	if rc != 0 {
		return &Error{Op: "load functions", Code: int(rc), Detail: C.GoString(&errbuf[0])}
	}
	return nil
}

// Version is the version of the C library actually linked, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.redlock_version()) }
