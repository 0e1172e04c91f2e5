// SPDX-License-Identifier: BSD-3-Clause

// Client: the node set and settings (one C redlock_client), and the
// bookkeeping that lets Close end everything safely while goroutines use it.

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
import "C"

import (
	"fmt"
	"io"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	done      chan struct{}     // closed by Close, for the pauses of WithRetryDelayFunc
	closeOnce sync.Once

	// The node URLs as C shows them, password masked: for reports, events
	// and printing. The URLs as given are not kept, so that no formatting
	// of a Client, %#v included, can print a password.
	shown []string
	cfg   config // effective settings, and the default expiry for mutexes

	// Every live C lock handle of this client's mutexes, so Close can
	// cancel their waits and free them. Holds handles, not Mutexes, so
	// that an unused Mutex can still be collected.
	regMu sync.Mutex
	reg   map[*handle]struct{}
}

// handle is the C lock owned by one Mutex; p is nil once freed. It points
// at the Mutex's tracker, not at the Mutex, so that holding handles (the
// client's registry does) keeps no Mutex alive.
type handle struct {
	p *C.redlock_lock
	// guard lets Until and Token read C's atomic fields without taking
	// the Mutex: they read under the read side, free holds the write side.
	guard sync.RWMutex
	t     *tracker
}

// free frees the C lock and what C may call back into. The caller holds
// regMu, and either the client's write side or the last reference to the
// Mutex, so no call on the lock is in progress.
func (h *handle) free() {
	if h.p == nil {
		return
	}
	// Stop the auto-extension first, without the guard: an extension under
	// way may be calling the event handler, which may call Until or Token.
	autoOn := C.redlock_lock_auto_extend_stop(h.p) == 0
	now := time.Now()
	v := int64(C.redlock_lock_validity_ms(h.p))
	h.guard.Lock()
	C.redlock_lock_free(h.p) // drops the last reference to a private client
	h.p = nil
	h.guard.Unlock()
	if autoOn {
		// Contexts waiting on the auto-extension now end with the validity
		// the lock was left with.
		h.t.stopAuto()
		h.t.settle(now, v, nil)
	}
}

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
	if cfg.timeoutFactor > 0 {
		cfg.s.nodeTimeoutMs = cfg.millis("WithTimeoutFactor", time.Duration(float64(cfg.expiry)*cfg.timeoutFactor))
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	cfg.s = cfg.s.effective()
	cfg.clientOnly = nil
	p, err := openC(urls, cfg.s)
	if err != nil {
		return nil, err
	}
	c := &Client{p: p, shown: shownURLs(p), cfg: cfg, done: make(chan struct{}),
		reg: map[*handle]struct{}{}}
	// Memory only: the C client closes its connections when freed.
	runtime.SetFinalizer(c, (*Client).finalize)
	return c, nil
}

// openC makes a C client; the detail of a failure comes from C's errbuf.
// With an event handler, C calls it through a cgo.Handle that C itself has
// deleted (rlGoEventFree) once the C client and all its locks are freed.
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
	var hook cgo.Handle
	var target *hookTarget
	if s.hook != nil {
		target = &hookTarget{fn: s.hook.fn}
		hook = cgo.NewHandle(target)
		setHook(&o, hook)
	}
	var errbuf [1024]C.char
	var p *C.redlock_client
	rc := C.redlock_client_open(&p, first, C.size_t(len(curls)), &o, &errbuf[0], C.size_t(len(errbuf)))
	if rc != 0 {
		if hook != 0 {
			hook.Delete() // C frees the hook's userdata only of a client it made
		}
		return nil, &Error{Op: "open", Code: int(rc), Detail: C.GoString(&errbuf[0])}
	}
	if target != nil {
		// Before any lock exists, so before any event (a cgo call orders it
		// before the callbacks, for the race detector too).
		target.urls = shownURLs(p)
	}
	return p, nil
}

// shownURLs are the client's node URLs as C shows them, password masked.
func shownURLs(p *C.redlock_client) []string {
	n := int(C.redlock_client_node_count(p))
	out := make([]string, n)
	for i := range out {
		out[i] = C.GoString(C.redlock_client_node_url(p, C.size_t(i)))
	}
	return out
}

// finalize runs once the Client is unreachable, so are its Mutexes, whose
// finalizers (a Mutex points at its Client) have freed their locks.
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
		close(c.done)
		c.cancelAll()
		c.mu.Lock()
		c.regMu.Lock()
		for h := range c.reg {
			h.free()
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

// swapHandle gives the new, not yet shared Mutex m the C handle p in place
// of the plain mutex handle it was made with, which it frees.
func (c *Client) swapHandle(m *Mutex, p *C.redlock_lock) {
	old := m.h
	m.h = &handle{p: p, t: m.t}
	c.register(m.h)
	c.unregister(old)
}

// unregister frees h unless Close already did.
func (c *Client) unregister(h *handle) {
	c.regMu.Lock()
	h.free()
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

// Listener is the state of a client's wake-up listener on one node.
type Listener struct {
	URL    string // password masked
	State  ListenerState
	Detail string // why it is down or refused; "" otherwise
}

// ListenerState is the state of the client's wake-up listener on node i
// (an index into the client's URLs), and why it is down or refused ("" when
// it is not). The listeners are opened by the client's first waiting Lock
// (one connection per node) and kept until Close; see WithWake. A closed
// client, or i out of range, gives ListenerOff and a detail that says so.
func (c *Client) ListenerState(i int) (ListenerState, string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closing.Load() {
		return ListenerOff, "client closed"
	}
	if i < 0 || i >= len(c.shown) {
		return ListenerOff, fmt.Sprintf("node %d out of range (%d nodes)", i, len(c.shown))
	}
	var buf [512]C.char
	st := C.redlock_client_listener_state(c.p, C.size_t(i), &buf[0], C.size_t(len(buf)))
	runtime.KeepAlive(c)
	if st < 0 {
		return ListenerOff, C.GoString(C.redlock_strerror(st))
	}
	return ListenerState(st), C.GoString(&buf[0])
}

// Listeners is the state of the client's wake-up listener on each node, in
// the order of the URLs given to NewClient; nil once the client is closed.
func (c *Client) Listeners() []Listener {
	if c.closing.Load() {
		return nil
	}
	out := make([]Listener, len(c.shown))
	for i, u := range c.shown {
		st, detail := c.ListenerState(i)
		out[i] = Listener{URL: u, State: st, Detail: detail}
	}
	return out
}

// String describes the client by its nodes, with every password masked
// ("redis://user:***@host:6379"), and says whether it is closed.
func (c *Client) String() string {
	if c == nil {
		return "redlock.Client(nil)"
	}
	state := "open"
	if c.closing.Load() {
		state = "closed"
	}
	return fmt.Sprintf("redlock.Client{nodes: [%s], %s}", strings.Join(c.shown, " "), state)
}

// GoString is String, so that %#v masks passwords too.
func (c *Client) GoString() string { return c.String() }

// Format prints String for every verb (%v, %+v, %#v, %s, %q, %x...), so
// that no verb walks the struct.
func (c *Client) Format(f fmt.State, verb rune) { formatString(f, verb, c.String()) }

// formatString prints s for verb: quoted or in hex for %q, %x and %X, as
// it is for the others.
func formatString(f fmt.State, verb rune, s string) {
	switch verb {
	case 'q', 'x', 'X':
		fmt.Fprintf(f, fmt.FormatString(f, verb), s)
	default:
		io.WriteString(f, s)
	}
}

// Version is the version of the C library actually linked, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.redlock_version()) }
