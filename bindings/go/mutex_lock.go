// SPDX-License-Identifier: BSD-3-Clause

// Acquiring a Mutex: Lock, TryLock and their Context forms, each one C
// acquire (redlock_lock_acquire) with the wait that ctx or the Mutex's
// policy gives; WithRetryDelayFunc's pauses as C waits (lockPaced).

//go:build cgo

package redlock

// #include "redlock.h"
import "C"

import (
	"context"
	"errors"
	"runtime"
	"time"
)

// Lock acquires the lock, retrying per WithTries, WithRetryDelay and
// WithRetryJitter (or WithRetryDelayFunc). It fails with an error matching
// ErrFailed and, more precisely, ErrNotAcquired (held elsewhere),
// ErrNoQuorum (too few nodes answered) or another sentinel.
func (m *Mutex) Lock() error { return m.LockContext(context.Background()) }

// TryLock makes exactly one attempt; ErrNotAcquired if the lock is held elsewhere.
func (m *Mutex) TryLock() error { return m.acquire(nil, C.REDLOCK_WAIT_NONE, false) }

// TryLockContext is TryLock that gives up early if ctx is done.
func (m *Mutex) TryLockContext(ctx context.Context) error {
	return m.lockCtx(ctx, C.REDLOCK_WAIT_NONE)
}

// LockContext acquires the lock, honouring ctx. With a deadline it keeps
// retrying (with the client's delay and jitter) until the deadline, then
// fails with an error matching both ErrTimeout and context.DeadlineExceeded;
// without one it retries per the client's WithTries. When ctx is cancelled
// the wait stops within the attempt in flight, with an error matching both
// ErrCanceled and context.Canceled.
func (m *Mutex) LockContext(ctx context.Context) error {
	return m.lockCtx(ctx, C.REDLOCK_WAIT_DEFAULT)
}

func (m *Mutex) lockCtx(ctx context.Context, wait int64) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return m.ctxErr(ctx, nil)
	}
	if m.delayFunc != nil && wait == C.REDLOCK_WAIT_DEFAULT {
		return m.lockPaced(ctx)
	}
	if wait == C.REDLOCK_WAIT_NONE {
		return m.acquire(ctx, wait, false)
	}
	wait, isCtx := ctxWaitMs(ctx, wait)
	return m.acquire(ctx, wait, isCtx)
}

// lockPaced is LockContext with WithRetryDelayFunc: attempt i, then the
// function's pause i, and so on. Each attempt and the pause after it are one
// C wait of that length, in which the handle's retry delay (set by NewMutex)
// is longer than any pause: C attempts again only when a release wakes it or
// the holder's key is due to expire, so wake-up and fair mode work as with
// C's own loop. With a deadline it goes on until ctx ends it; without one,
// the last of m.tries attempts has no pause after it.
func (m *Mutex) lockPaced(ctx context.Context) error {
	_, hasDeadline := ctx.Deadline()
	for i := 1; ; i++ {
		wait := int64(C.REDLOCK_WAIT_NONE)
		if hasDeadline || i < m.tries {
			wait = pauseMs(m.delayFunc(i))
		}
		err := m.acquire(ctx, wait, false)
		var e *Error
		if wait != C.REDLOCK_WAIT_NONE && errors.As(err, &e) && C.int(e.Code) == C.REDLOCK_ETIMEDOUT && len(e.also) == 0 {
			continue // the pause is over: the next attempt
		}
		if err == nil || !retryable(err) || (!hasDeadline && i >= m.tries) {
			return err
		}
	}
}

// pauseMs is a DelayFunc's pause as C's wait_ms: at least the one attempt
// (REDLOCK_WAIT_NONE for no pause), and no deadline for pauses beyond C's
// longest finite wait.
func pauseMs(d time.Duration) int64 {
	ms := int64((max(d, 0) + time.Millisecond - 1) / time.Millisecond)
	if ms > maxWaitMs {
		return C.REDLOCK_WAIT_FOREVER
	}
	return ms
}

// retryable are the failures C's own retry loop tries again after.
func retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) || len(e.also) > 0 {
		return false
	}
	return C.redlock_error_is_retryable(C.int(e.Code)) != 0
}

// maxWaitMs is the longest finite wait_ms C accepts (seven times its
// longest TTL); a later deadline is ctx's alone.
const maxWaitMs = int64(C.REDLOCK_MAX_WAIT_MS)

// acquire runs C's acquire; waitIsCtx says wait is ctx's deadline, so that
// C's ETIMEDOUT is ctx's DeadlineExceeded.
func (m *Mutex) acquire(ctx context.Context, wait int64, waitIsCtx bool) error {
	p, err := m.enter("lock")
	if err != nil {
		return err
	}
	defer m.leave()

	// C's cancel is sticky until reset: clear whatever an earlier call left,
	// then look at closing again (Close sets it before cancelling, so a
	// Close that our reset raced with is seen here or cancels us after),
	// and only then arm the ctx watcher, which cancels once.
	C.redlock_lock_cancel_reset(p)
	if m.client.closing.Load() {
		return closedErr("lock", m.name)
	}
	var stop func() bool
	var stopped chan struct{}
	if ctx != nil && ctx.Done() != nil {
		stopped = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			defer close(stopped)
			C.redlock_lock_cancel(p)
		})
	}
	rc := C.redlock_lock_acquire(p, C.uint32_t(m.ttlMs), C.int64_t(wait))
	// Disarm, and wait out a watcher already running: it must be done with
	// p before anything (Close, a finalizer) may free it.
	if stop != nil && !stop() {
		<-stopped
	}
	runtime.KeepAlive(m)

	if rc == 0 {
		m.t.newHold()
		m.observe(p, nil)
		return nil
	}
	err = m.fail("lock", rc, p)
	if ctx != nil && ctxEnded(ctx, rc, waitIsCtx) {
		err = m.ctxErr(ctx, err.(*Error))
	} else if rc == C.REDLOCK_ECANCELED && m.client.closing.Load() {
		err.(*Error).also = []error{ErrClosed}
	}
	m.observe(p, err)
	return err
}
