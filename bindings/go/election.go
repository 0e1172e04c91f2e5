// SPDX-License-Identifier: BSD-3-Clause

// Election: leader election over C's redlock_election_* (docs/algorithm.md,
// "Leader election"), on the model of go.etcd.io/etcd/client/v3/concurrency's
// Election: Campaign blocks until leader, Proclaim, Resign, Leader, Observe.
// The term is the leadership's fencing token.

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
import "C"

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// ErrNoLeader is returned by Election.Leader when no leader holds the
// election on a majority (etcd's ErrElectionNoLeader).
var ErrNoLeader = errors.New("redlock: election has no leader")

// Leader is what a read of an election found.
type Leader struct {
	Present  bool   // a leader holds the election on a majority
	Term     uint64 // its term (fencing token); with Present false, the last term recorded
	Revision uint64 // 1 when elected, +1 per Proclaim; 0 with no leader
	Value    string // the leader's value; "" with no leader
}

// observeRetry is the pause after a failed observe (the nodes failing) before the next one; a
// cancelled ctx ends it, as it ends the observe itself (waitFor).
const observeRetry = 500 * time.Millisecond

// Election is one campaigner (or observer) of the election name on a Client.
// Campaign, Proclaim and Resign are for one goroutine at a time; Leader,
// Observe, Term and IsLeader may be called from any goroutine.
type Election struct {
	name   string
	client *Client
	ttlMs  uint32
	mu     sync.Mutex // serialises Campaign, Proclaim and Resign
	p      *C.redlock_election
	done   chan struct{} // closed by Close: ends the Observe channels
}

// NewElection makes an Election on name, leaderships lasting ttl while not
// extended (they are auto-extended; 0: the client's expiry). No network I/O.
func (c *Client) NewElection(name string, ttl time.Duration) (*Election, error) {
	if ttl == 0 {
		ttl = c.cfg.expiry
	}
	e := &Election{name: name, client: c, ttlMs: uint32(ttl / time.Millisecond), done: make(chan struct{})}
	p, err := e.open()
	if err != nil {
		return nil, err
	}
	e.p = p
	runtime.SetFinalizer(e, func(e *Election) { C.redlock_election_free(e.p) })
	return e, nil
}

// open makes a C election handle on the client (which keeps the C client's
// memory alive as long as the handle lives, after Close too).
func (e *Election) open() (*C.redlock_election, error) {
	cname := C.CString(e.name)
	defer C.free(unsafe.Pointer(cname))
	e.client.mu.RLock()
	defer e.client.mu.RUnlock()
	if e.client.p == nil {
		return nil, ErrClosed
	}
	var p *C.redlock_election
	var errbuf [512]C.char
	if rc := C.redlock_election_open(&p, e.client.p, cname, &errbuf[0], C.size_t(len(errbuf))); rc != 0 {
		return nil, &Error{Op: "election", Resource: e.name, Code: int(rc), Detail: C.GoString(&errbuf[0])}
	}
	return p, nil
}

func (e *Election) err(op string, p *C.redlock_election, rc C.int) *Error {
	return &Error{Op: op, Resource: e.name, Code: int(rc), Detail: C.GoString(C.redlock_election_errmsg(p))}
}

// waitFor runs call (a C wait on p) with ctx's cancellation as
// redlock_election_cancel.
func waitFor(ctx context.Context, p *C.redlock_election, call func() C.int) C.int {
	C.redlock_election_cancel_reset(p)
	stop := context.AfterFunc(ctx, func() { C.redlock_election_cancel(p) })
	rc := call()
	stop()
	return rc
}

// Campaign blocks until this process leads (or ctx ends: an error matching
// ErrCanceled or ErrTimeout and ctx's error), writes value with the new
// term on a majority and keeps the leadership auto-extended.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cval := C.CString(value)
	defer C.free(unsafe.Pointer(cval))
	e.mu.Lock()
	defer e.mu.Unlock()
	wait, isCtx := ctxWaitMs(ctx, C.REDLOCK_WAIT_FOREVER)
	rc := waitFor(ctx, e.p, func() C.int {
		return C.redlock_election_campaign(e.p, cval, C.uint32_t(e.ttlMs), C.int64_t(wait))
	})
	runtime.KeepAlive(e)
	if rc == 0 {
		return nil
	}
	// ctx's error (Mutex.LockContext's rule): C's timeout on a wait that
	// was ctx's deadline is DeadlineExceeded even when C's clock ran out a
	// moment before ctx's timer.
	if ctxEnded(ctx, rc, isCtx) {
		return ctxError(ctx, "campaign", e.name, e.err("campaign", e.p, rc))
	}
	return e.err("campaign", e.p, rc)
}

// Proclaim lets the leader change its value without a new election.
// ErrState when not the leader, ErrLost when the election is no longer ours.
func (e *Election) Proclaim(value string) error {
	cval := C.CString(value)
	defer C.free(unsafe.Pointer(cval))
	e.mu.Lock()
	defer e.mu.Unlock()
	if rc := C.redlock_election_proclaim(e.p, cval); rc != 0 {
		return e.err("proclaim", e.p, rc)
	}
	return nil
}

// Resign gives leadership up and wakes the next campaigner at once. Not
// leading is not an error (as etcd's Resign).
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rc := C.redlock_election_resign(e.p)
	if rc != 0 && rc != C.REDLOCK_ESTATE {
		return e.err("resign", e.p, rc)
	}
	return nil
}

// IsLeader is true while this Election leads (its validity not run out).
func (e *Election) IsLeader() bool { return C.redlock_election_is_leader(e.p) != 0 }

// Term is the term of this Election's leadership (its fencing token), 0 when not leading.
func (e *Election) Term() uint64 { return uint64(C.redlock_election_term(e.p)) }

// Key is the election's name.
func (e *Election) Key() string { return e.name }

func leaderOf(l *C.redlock_leader) Leader {
	if l.present == 0 {
		return Leader{Term: uint64(l.term)}
	}
	return Leader{Present: true, Term: uint64(l.term), Revision: uint64(l.revision),
		Value: C.GoStringN(&l.value[0], C.int(l.value_len))}
}

// Leader reads the leader from a majority of the nodes: ErrNoLeader (with
// the last term in the Leader) when there is none. A hint: it may have
// changed by the time it returns; fence with the term.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	var out C.redlock_leader
	out.version = C.REDLOCK_LEADER_VERSION
	p, err := e.open() // its own handle: any goroutine may read
	if err != nil {
		return Leader{}, err
	}
	defer C.redlock_election_free(p)
	if rc := C.redlock_election_leader(p, &out); rc != 0 {
		return Leader{}, e.err("leader", p, rc)
	}
	l := leaderOf(&out)
	if !l.Present {
		return l, ErrNoLeader
	}
	return l, nil
}

// Observe sends the current state, then every change of leader or value in
// term order (never a term back), until ctx ends or the Election or its
// Client is closed; then the channel is closed. Changes replaced before a
// read can see them are coalesced.
//
// ctx is the way to stop it: context.WithTimeout bounds the whole watch,
// and cancel, from any goroutine, ends the wait under way at once (C's
// cancel). To stop after a quiet spell instead, select on the channel and
// time.After, then cancel. A consumer that stops reading must cancel ctx
// (or Close the Election), or the goroutine behind the channel waits on.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	if ctx == nil {
		ctx = context.Background()
	}
	ch := make(chan Leader)
	p, err := e.open()
	if err != nil {
		close(ch)
		return ch
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() { // Close of the Election or of its Client ends it too
		select {
		case <-e.done:
		case <-e.client.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	go func() {
		defer close(ch)
		defer cancel()
		defer C.redlock_election_free(p)
		var cur C.redlock_leader
		cur.version = C.REDLOCK_LEADER_VERSION
		rc := C.redlock_election_leader(p, &cur)
		for ctx.Err() == nil {
			if rc == 0 {
				select {
				case ch <- leaderOf(&cur):
				case <-ctx.Done():
					return
				}
			}
			// One C wait for the next change; ctx's end cancels it.
			rc = waitFor(ctx, p, func() C.int {
				return C.redlock_election_observe(p, &cur, C.REDLOCK_WAIT_FOREVER)
			})
			if rc != 0 && ctx.Err() == nil {
				// The nodes failing: try again after a pause that ctx ends.
				pause := time.NewTimer(observeRetry)
				select {
				case <-pause.C:
				case <-ctx.Done():
					pause.Stop()
				}
			}
		}
	}()
	return ch
}

// Close frees the Election's C handle and ends its Observe channels; a
// leadership is left to expire (Resign first to hand over at once).
// Idempotent.
func (e *Election) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.p != nil {
		runtime.SetFinalizer(e, nil)
		C.redlock_election_free(e.p)
		e.p = nil
		close(e.done)
	}
	return nil
}
