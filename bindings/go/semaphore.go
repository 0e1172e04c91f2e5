// SPDX-License-Identifier: BSD-3-Clause

// Semaphore: a counting semaphore across the nodes in the shape of
// golang.org/x/sync/semaphore's Weighted. Each acquisition of n permits is
// one C semaphore handle (redlock_lock_open_semaphore) inside a Mutex, so a
// permit's Lock, Extend, Unlock, Until, Token and auto-extension are the
// Mutex's.

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
//
// /* A semaphore handle with the acquisition policy of `like` (a Mutex's
//  * handle made with the same options). On a refused policy the handle is
//  * kept, for its message, and the caller frees it. */
// static int rl_go_sem_open(redlock_lock **out, redlock_client *c, const char *name, uint32_t limit,
//                           uint32_t permits, const redlock_lock *like, char *errbuf, size_t errbuf_size) {
//     int rc = redlock_lock_open_semaphore(out, c, name, limit, permits, errbuf, errbuf_size);
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
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Semaphore is a counting semaphore of a fixed number of permits (its
// limit) on one name, shared by every client and process that uses the
// name with the same limit: at most limit permits are held at once
// (docs/algorithm.md, "Counting semaphore"). Its methods are those of
// golang.org/x/sync/semaphore's Weighted; unlike Weighted's, each permit is
// a lease of the Mutex's expiry (WithExpiry), which Permits gives access to
// (Extend, AutoExtend, Token, Until). Safe for concurrent use.
type Semaphore struct {
	name   string
	limit  int64
	client *Client
	opts   []Option
	err    error // why this Semaphore cannot work; every acquire returns it

	mu   sync.Mutex
	idle map[int64][]*Mutex // handles not held, by the permits each takes
	held []heldPermit       // held through this Semaphore, oldest first
}

type heldPermit struct {
	m *Mutex
	n int64
}

// NewSemaphore makes a Semaphore of limit permits on name; it does no I/O
// and never fails: a bad name, limit (1 to 1000) or option makes every
// acquire return the error (matching ErrInvalid). The options are
// NewMutex's and apply to each permit. Every user of a name must pass the
// same limit: while a permit is held, another limit fails with ErrInvalid,
// naming both.
func (c *Client) NewSemaphore(name string, limit int64, opts ...Option) *Semaphore {
	s := &Semaphore{name: name, limit: limit, client: c, opts: opts, idle: map[int64][]*Mutex{}}
	m, err := s.newPermit(1)
	if err != nil {
		s.err = err
		return s
	}
	s.idle[1] = []*Mutex{m}
	return s
}

// Name is the semaphore's name; Limit its number of permits.
func (s *Semaphore) Name() string { return s.name }

// Limit is the number of permits of the semaphore.
func (s *Semaphore) Limit() int64 { return s.limit }

func (s *Semaphore) invalid(detail string) error {
	return &Error{Op: "new semaphore", Resource: s.name, Code: int(C.REDLOCK_EINVAL), Detail: detail}
}

// newPermit is a Mutex whose C handle takes n permits of the semaphore.
func (s *Semaphore) newPermit(n int64) (*Mutex, error) {
	if s.limit < 1 || s.limit > int64(C.REDLOCK_MAX_SEM_LIMIT) {
		return nil, s.invalid(fmt.Sprintf("the semaphore's limit is %d: it must be 1 to %d", s.limit,
			int64(C.REDLOCK_MAX_SEM_LIMIT)))
	}
	if n < 1 || n > s.limit {
		return nil, s.invalid(fmt.Sprintf("%d permits asked for at once: it must be 1 to the limit, %d", n, s.limit))
	}
	m := s.client.NewMutex(s.name, s.opts...)
	if m.err != nil {
		return nil, m.err
	}
	c := s.client
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closing.Load() {
		return nil, closedErr("new semaphore", s.name)
	}
	cname := C.CString(s.name)
	defer C.free(unsafe.Pointer(cname))
	var p *C.redlock_lock
	var errbuf [512]C.char
	rc := C.rl_go_sem_open(&p, c.p, cname, C.uint32_t(s.limit), C.uint32_t(n), m.h.p, &errbuf[0],
		C.size_t(len(errbuf)))
	if rc != 0 {
		if p == nil {
			return nil, &Error{Op: "new semaphore", Resource: s.name, Code: int(rc), Detail: C.GoString(&errbuf[0])}
		}
		err := &Error{Op: "new semaphore", Resource: s.name, Code: int(rc), Detail: C.GoString(C.redlock_lock_errmsg(p))}
		C.redlock_lock_free(p)
		return nil, err
	}
	// The Mutex's own handle (a mutex, never used) gives way to the semaphore's.
	c.swapHandle(m, p)
	return m, nil
}

func (s *Semaphore) take(n int64) (*Mutex, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.mu.Lock()
	if idle := s.idle[n]; len(idle) > 0 {
		m := idle[len(idle)-1]
		s.idle[n] = idle[:len(idle)-1]
		s.mu.Unlock()
		return m, nil
	}
	s.mu.Unlock()
	return s.newPermit(n)
}

func (s *Semaphore) giveBack(m *Mutex, n int64) {
	s.mu.Lock()
	s.idle[n] = append(s.idle[n], m)
	s.mu.Unlock()
}

func (s *Semaphore) hold(m *Mutex, n int64) {
	s.mu.Lock()
	s.held = append(s.held, heldPermit{m, n})
	s.mu.Unlock()
}

// Acquire takes n permits at once (all or none), waiting until they are
// free or ctx is done (then an error matching ctx's, and ErrCanceled or
// ErrTimeout). With WithWake(true), a release anywhere wakes the wait. Unlike Weighted's, it
// can fail for reasons of the nodes (ErrNoQuorum, ErrUnreachable...), and n
// over the limit fails at once with ErrInvalid.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	m, err := s.take(n)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := m.lockCtx(ctx, C.REDLOCK_WAIT_FOREVER); err != nil {
		s.giveBack(m, n)
		return err
	}
	s.hold(m, n)
	return nil
}

// TryAcquire takes n permits at once without waiting: true if it did.
// TryAcquireErr says why not.
func (s *Semaphore) TryAcquire(n int64) bool { return s.TryAcquireErr(n) == nil }

// TryAcquireErr is TryAcquire with the reason of a failure: ErrNotAcquired
// when no n permits were free on a majority of the nodes.
func (s *Semaphore) TryAcquireErr(n int64) error {
	m, err := s.take(n)
	if err != nil {
		return err
	}
	if err := m.TryLock(); err != nil {
		s.giveBack(m, n)
		return err
	}
	s.hold(m, n)
	return nil
}

// Release gives back n permits, the ones acquired last through this
// Semaphore. It panics if that is more than are held through it, as
// Weighted's does; the nodes' answer is dropped: ReleaseErr has it.
func (s *Semaphore) Release(n int64) {
	if err := s.ReleaseErr(n); err != nil && errors.Is(err, errReleasedMore) {
		panic("redlock: semaphore: released more than held")
	}
}

var errReleasedMore = errors.New("released more than held")

// ReleaseErr is Release that returns the nodes' answer: an error matching
// ErrLost if a permit was no longer held on a majority (its lease ran out
// or the nodes lost it), so the limit may have been exceeded meanwhile.
// Releasing more than is held returns an error instead of panicking.
func (s *Semaphore) ReleaseErr(n int64) error {
	var first error
	for n > 0 {
		s.mu.Lock()
		if len(s.held) == 0 {
			s.mu.Unlock()
			return errReleasedMore
		}
		h := s.held[len(s.held)-1]
		if h.n > n {
			s.mu.Unlock()
			return fmt.Errorf("redlock: semaphore: the last acquisition took %d permits at once, "+
				"release them together: %w", h.n, errReleasedMore)
		}
		s.held = s.held[:len(s.held)-1]
		s.mu.Unlock()
		n -= h.n
		if _, err := h.m.Unlock(); err != nil && first == nil {
			first = err
		}
		s.giveBack(h.m, h.n)
	}
	return first
}

// Held is the number of permits held through this Semaphore (validity not
// looked at).
func (s *Semaphore) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t int64
	for _, h := range s.held {
		t += h.n
	}
	return t
}

// Permits are the Mutexes of the acquisitions held through this Semaphore,
// oldest first: their Until, Token, Extend and AutoExtend act on a
// permit's lease. Unlock them through Release, not directly.
func (s *Semaphore) Permits() []*Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Mutex, len(s.held))
	for i, h := range s.held {
		out[i] = h.m
	}
	return out
}

// String describes the Semaphore by its name, limit and client.
func (s *Semaphore) String() string {
	return fmt.Sprintf("redlock.Semaphore(%q, limit %d, %v)", s.name, s.limit, s.client)
}
