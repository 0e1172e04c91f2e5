// SPDX-License-Identifier: BSD-3-Clause

// A C wait run for a context: its deadline as C's wait_ms, and C's failure
// reported as the context's when the context ended it (Mutex.LockContext,
// Election.Campaign).

//go:build cgo

package redlock

// #include "redlock.h"
import "C"

import (
	"context"
	"errors"
	"time"
)

// ctxWaitMs is ctx's deadline as C's wait_ms, rounded up so that C does not
// give up before ctx does, and at least 1 (0 means "one attempt"); isCtx
// then. Without a deadline it is otherwise; with one beyond C's longest
// finite wait it is REDLOCK_WAIT_FOREVER, which ctx's cancellation ends.
func ctxWaitMs(ctx context.Context, otherwise int64) (wait int64, isCtx bool) {
	dl, has := ctx.Deadline()
	if !has {
		return otherwise, false
	}
	wait = max(int64((time.Until(dl)+time.Millisecond-1)/time.Millisecond), 1)
	if wait > maxWaitMs {
		return C.REDLOCK_WAIT_FOREVER, false
	}
	return wait, true
}

// ctxEnded says whether ctx ended C's wait that failed with rc: cancelled by
// ctx's watcher, or out of time where wait_ms was ctx's deadline (waitIsCtx;
// C's clock may run out a moment before ctx's timer fires).
func ctxEnded(ctx context.Context, rc C.int, waitIsCtx bool) bool {
	return rc == C.REDLOCK_ECANCELED && ctx.Err() != nil || rc == C.REDLOCK_ETIMEDOUT && waitIsCtx
}

// ctxError reports a wait ended by its context. base is C's error, or nil
// if the context was done before C was called (then a new one for op on
// resource). The code says what the caller asked for (a deadline is a
// timeout, a cancel a cancel) whichever of the two C happened to see first,
// and the error matches ctx's error and its cause.
func ctxError(ctx context.Context, op, resource string, base *Error) error {
	e := &Error{Op: op, Resource: resource, Code: int(C.REDLOCK_ECANCELED)}
	if base != nil {
		e = base
	}
	cerr := ctx.Err()
	if cerr == nil {
		// C's wait, which is ctx's deadline, ran out a moment before ctx's timer.
		cerr = context.DeadlineExceeded
	}
	if errors.Is(cerr, context.DeadlineExceeded) {
		e.Code = int(C.REDLOCK_ETIMEDOUT)
	} else {
		e.Code = int(C.REDLOCK_ECANCELED)
	}
	e.also = []error{cerr}
	if cause := context.Cause(ctx); cause != nil && cause != cerr {
		e.also = append(e.also, cause)
	}
	return e
}
