// SPDX-License-Identifier: BSD-3-Clause

// RWMutex: the read-write lock on one name (docs/algorithm.md, "Read-write
// locks"), in sync.RWMutex's shape, over two Mutexes: one on the C library's
// write handle, one on its read handle. Every locking decision is C's; Go
// only shares one read lease among the goroutines that read.

//go:build cgo

package redlock

// #include "redlock.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RWMutex is a distributed read-write lock on one name: RLock is held by
// any number of readers at once (across processes and clients), Lock by one
// writer, excluding readers, other writers and Mutexes of the same name.
// Writers are preferred: once a waiting writer has been refused, new readers
// wait for it, so a stream of readers cannot starve it.
//
// Within one RWMutex, the goroutines that read share one read lease: the
// first RLock acquires it, the last RUnlock releases it (and only that one
// can report ErrLost; the others can check Reader().Until()). A goroutine
// calling Lock makes later RLocks of this RWMutex wait for it, as
// sync.RWMutex does. A reader does not join a lease whose validity has run
// out: it waits for the lease's holders to let it go.
type RWMutex struct {
	w, r   *Mutex // rw.mu guards them: Downgrade replaces both
	name   string
	client *Client
	opts   []Option // NewRWMutex's, for the writer that replaces a downgraded one

	wsem chan struct{} // this RWMutex's writers, one at a time

	mu        sync.Mutex
	readers   int           // goroutines holding the shared read lease
	writers   int           // goroutines in Lock or holding the write lock
	acquiring bool          // a goroutine is acquiring the read lease
	changed   chan struct{} // closed (and replaced) when the fields above change
}

// NewRWMutex makes the RWMutex for name; it does no I/O and never fails:
// as with NewMutex, a bad name or option makes every operation return the
// error (matching ErrInvalid). The options are NewMutex's, for both sides.
func (c *Client) NewRWMutex(name string, opts ...Option) *RWMutex {
	return &RWMutex{w: c.newMutex(name, 2, opts), r: c.newMutex(name, 1, opts), name: name, client: c, opts: opts,
		wsem: make(chan struct{}, 1), changed: make(chan struct{})}
}

// Name is the lock's name.
func (rw *RWMutex) Name() string { return rw.name }

// Downgrade turns the write lock this RWMutex holds into its read lease,
// with no writer in between (redlock_lock_downgrade): call RUnlock, not
// Unlock, from then on; other readers may join it. On failure (ErrLost,
// ErrExpired, ErrNoQuorum...) the lock is released and not held; ErrState
// when it is not write-locked. There is no upgrade: two readers upgrading
// would wait for each other for ever.
func (rw *RWMutex) Downgrade() error {
	m := rw.Writer()
	p, err := m.enter("downgrade")
	if err != nil {
		return err
	}
	rc := C.redlock_lock_downgrade(p)
	if rc != 0 {
		err = m.fail("downgrade", rc, p)
	}
	m.observe(p, err)
	m.leave()
	if err != nil && errors.Is(err, ErrState) {
		return err // not held: nothing changed
	}
	rw.mu.Lock()
	if err == nil {
		// The write handle holds the read lease now: it becomes the shared
		// lease's Mutex, and a new handle takes the write side.
		rw.r, rw.w = m, rw.client.newMutex(rw.name, 2, rw.opts)
		rw.readers = 1
	}
	rw.writers--
	rw.changedLocked()
	rw.mu.Unlock()
	<-rw.wsem
	return err
}

// Writer is the write side: its Until, Token, Extend, AutoExtend and
// LockedContext are the write lock's.
func (rw *RWMutex) Writer() *Mutex {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.w
}

// Reader is the shared read lease's Mutex: Until, Token (the last
// writer's token before it, with WithFencing), Extend and AutoExtend
// apply to the lease all readers of this RWMutex share. Lock and Unlock
// it only through RLock and RUnlock.
func (rw *RWMutex) Reader() *Mutex {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.r
}

// String describes the RWMutex by its name and client.
func (rw *RWMutex) String() string {
	return fmt.Sprintf("redlock.RWMutex(%q on %v)", rw.name, rw.client)
}

// changedLocked wakes the goroutines waiting for a change; rw.mu is held.
func (rw *RWMutex) changedLocked() {
	close(rw.changed)
	rw.changed = make(chan struct{})
}

// Lock acquires the write lock, waiting as Mutex.Lock does.
func (rw *RWMutex) Lock() error { return rw.LockContext(context.Background()) }

// TryLock makes one attempt at the write lock; ErrNotAcquired when it is
// held elsewhere (or by readers), ErrState when this RWMutex is write-locked.
func (rw *RWMutex) TryLock() error {
	select {
	case rw.wsem <- struct{}{}:
	default:
		return rw.Writer().TryLock() // held by this RWMutex: C's ErrState says so
	}
	return rw.lockWith(func() error { return rw.w.TryLock() })
}

// LockContext is Lock honouring ctx, as Mutex.LockContext.
func (rw *RWMutex) LockContext(ctx context.Context) error {
	select {
	case rw.wsem <- struct{}{}:
	case <-ctx.Done():
		return rw.Writer().ctxErr(ctx, nil)
	}
	return rw.lockWith(func() error { return rw.w.LockContext(ctx) })
}

func (rw *RWMutex) lockWith(lock func() error) error {
	rw.mu.Lock()
	rw.writers++
	rw.mu.Unlock()
	err := lock()
	if err != nil {
		rw.mu.Lock()
		rw.writers--
		rw.changedLocked()
		rw.mu.Unlock()
		<-rw.wsem
	}
	return err
}

// Unlock releases the write lock, as Mutex.Unlock: false and ErrLost when
// it was no longer ours on a majority.
func (rw *RWMutex) Unlock() (bool, error) { return rw.UnlockContext(context.Background()) }

// UnlockContext is Unlock that does nothing if ctx is already done.
func (rw *RWMutex) UnlockContext(ctx context.Context) (bool, error) {
	ok, err := rw.w.UnlockContext(ctx)
	if err != nil && (ctx.Err() != nil || errors.Is(err, ErrState)) {
		return ok, err // not locked, or nothing done: the write lock stays as it was
	}
	rw.mu.Lock()
	rw.writers--
	rw.changedLocked()
	rw.mu.Unlock()
	<-rw.wsem
	return ok, err
}

// RLock acquires a read lock, waiting as Mutex.Lock does.
func (rw *RWMutex) RLock() error { return rw.RLockContext(context.Background()) }

// TryRLock takes a read lock without waiting: it joins this RWMutex's
// valid read lease, or makes one attempt at one.
func (rw *RWMutex) TryRLock() error { return rw.rlock(nil) }

// RLockContext is RLock honouring ctx.
func (rw *RWMutex) RLockContext(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	return rw.rlock(ctx)
}

// rlock: ctx nil makes one attempt and does not wait for this RWMutex's
// writers or readers either.
func (rw *RWMutex) rlock(ctx context.Context) error {
	for {
		rw.mu.Lock()
		if rw.writers == 0 && !rw.acquiring {
			if rw.readers > 0 && time.Now().Before(rw.r.Until()) {
				rw.readers++
				rw.mu.Unlock()
				return nil
			}
			if rw.readers == 0 {
				r := rw.r
				rw.acquiring = true
				rw.mu.Unlock()
				var err error
				if ctx == nil {
					err = r.TryLock()
				} else {
					err = r.LockContext(ctx)
				}
				rw.mu.Lock()
				rw.acquiring = false
				switch {
				case err != nil:
				case r != rw.r:
					// A Downgrade made rw.r's lease meanwhile: join it,
					// and give back the one just taken.
					rw.readers++
					r.Unlock()
				default:
					rw.readers = 1
				}
				rw.changedLocked()
				rw.mu.Unlock()
				return err
			}
		}
		ch, r := rw.changed, rw.r
		rw.mu.Unlock()
		if ctx == nil {
			return r.TryLock() // held locally in a way a reader cannot join: C's ErrState says so
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return r.ctxErr(ctx, nil)
		}
	}
}

// RUnlock gives up a read lock. The last reader of this RWMutex releases
// the lease on the nodes: false and ErrLost when it was no longer ours on a
// majority; ErrState when no read lock is held.
func (rw *RWMutex) RUnlock() (bool, error) { return rw.RUnlockContext(context.Background()) }

// RUnlockContext is RUnlock that does nothing on the nodes if ctx is
// already done.
func (rw *RWMutex) RUnlockContext(ctx context.Context) (bool, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.readers == 0 {
		return rw.r.UnlockContext(ctx) // not held: ErrState
	}
	if rw.readers > 1 {
		rw.readers--
		return true, nil
	}
	ok, err := rw.r.UnlockContext(ctx)
	if err != nil && ctx.Err() != nil {
		return ok, err
	}
	rw.readers = 0
	rw.changedLocked()
	return ok, err
}

// RLocker adapts the read side to sync.Locker, as sync.RWMutex.RLocker:
// its Lock and Unlock panic with the *Error when RLock or RUnlock fails
// (an RUnlock that finds the lease lost included): sync.Locker cannot
// report a failure.
func (rw *RWMutex) RLocker() sync.Locker { return rlocker{rw} }

type rlocker struct{ rw *RWMutex }

func (l rlocker) Lock() {
	if err := l.rw.RLock(); err != nil {
		panic(err)
	}
}

func (l rlocker) Unlock() {
	if _, err := l.rw.RUnlock(); err != nil {
		panic(err)
	}
}

// Locker adapts the write side to sync.Locker (panicking as RLocker does).
func (rw *RWMutex) Locker() sync.Locker { return wlocker{rw} }

type wlocker struct{ rw *RWMutex }

func (l wlocker) Lock() {
	if err := l.rw.Lock(); err != nil {
		panic(err)
	}
}

func (l wlocker) Unlock() {
	if _, err := l.rw.Unlock(); err != nil {
		panic(err)
	}
}
