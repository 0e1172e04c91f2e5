// SPDX-License-Identifier: BSD-3-Clause

// Errors: every C error code has a sentinel for errors.Is, and failures come
// back as *Error, which carries the C library's detail text.

//go:build cgo

package redlock

// #include "redlock.h"
import "C"

import (
	"errors"
	"strconv"
	"strings"
)

// codeError is the sentinel for one C error code.
type codeError struct {
	code int
	text string
}

func (e *codeError) Error() string { return "redlock: " + e.text }

func newSentinel(code C.int) *codeError {
	return &codeError{code: int(code), text: C.GoString(C.redlock_strerror(code))}
}

// Sentinel errors, one per C error code, for use with errors.Is. The
// error an operation returns is an *Error wrapping one of them.
var (
	ErrInvalid      error = newSentinel(C.REDLOCK_EINVAL)       // bad argument: name, expiry, URL, option
	ErrNoMemory     error = newSentinel(C.REDLOCK_ENOMEM)       // the C library ran out of memory
	ErrNotAcquired  error = newSentinel(C.REDLOCK_ENOTACQUIRED) // another owner holds the lock
	ErrNoQuorum     error = newSentinel(C.REDLOCK_ENOQUORUM)    // too few nodes answered to decide
	ErrExpired      error = newSentinel(C.REDLOCK_EEXPIRED)     // the validity ran out
	ErrLost         error = newSentinel(C.REDLOCK_ELOST)        // the lock was no longer ours on a majority
	ErrTimeout      error = newSentinel(C.REDLOCK_ETIMEDOUT)    // the wait deadline passed
	ErrIO           error = newSentinel(C.REDLOCK_EIO)          // I/O error talking to nodes
	ErrServer       error = newSentinel(C.REDLOCK_ESERVER)      // error reply (READONLY, OOM...)
	ErrAuth         error = newSentinel(C.REDLOCK_EAUTH)        // authentication failed
	ErrTLS          error = newSentinel(C.REDLOCK_ETLS)         // TLS failure
	ErrNotSupported error = newSentinel(C.REDLOCK_ENOTSUP)      // not supported by this build or the nodes
	ErrCanceled     error = newSentinel(C.REDLOCK_ECANCELED)    // the wait was cancelled (context, Close)
	ErrLimit        error = newSentinel(C.REDLOCK_ELIMIT)       // WithMaxExtensions / WithMaxHold reached
	ErrState        error = newSentinel(C.REDLOCK_ESTATE)       // e.g. Unlock of a mutex not held
	// ErrUnreachable: a Lock gave up because no quorum of nodes could be
	// reached (connections refused, names that do not resolve, connects
	// timing out) for WithUnreachableTimeout. The detail names each node.
	ErrUnreachable error = newSentinel(C.REDLOCK_EUNREACHABLE)
	// ErrPermission: a node refused a command the lock needs: its ACL
	// user lacks it (NOPERM), or the command is disabled or renamed there.
	// The client finds out on connecting, before it takes a lock it could
	// not release. The detail names the node and the command.
	ErrPermission error = newSentinel(C.REDLOCK_EPERM)
	// ErrAtRisk is not a failure: it is the cause of the contexts from
	// Mutex.LockedContext that the auto-extension ended before the lock's
	// validity does, because no extension has succeeded and the validity
	// ends within the at-risk margin. The lock is still held then (Unlock
	// and Valid work as usual); stop the work guarded by the lock.
	ErrAtRisk error = newSentinel(C.REDLOCK_EATRISK)
	// ErrFenced: a store refused a fenced write because its token is
	// older than the resource's fence (docs/fencing.md, "Protecting your
	// store"): a later holder has written.
	ErrFenced error = newSentinel(C.REDLOCK_EFENCED)

	// ErrClosed is returned by every operation after Client.Close, and by
	// a LockContext that Close interrupted.
	ErrClosed = errors.New("redlock: client is closed")

	// go-redsync's error values, for code moving from it: every failed
	// Lock or TryLock (the lock held elsewhere, too few nodes, a deadline,
	// a node error; not a bad argument) matches ErrFailed, every failed
	// Extend matches ErrExtendFailed, and an Unlock that found the lock no
	// longer ours (ErrLost: expired, or taken by another owner) matches
	// ErrLockAlreadyExpired. Compare with errors.Is, not ==: the error
	// returned is an *Error that carries the detail.
	ErrFailed             = errors.New("redlock: failed to acquire lock")
	ErrExtendFailed       = errors.New("redlock: failed to extend lock")
	ErrLockAlreadyExpired = errors.New("redlock: failed to unlock, lock was already expired")
)

var sentinels = map[int]error{}

func init() {
	for _, e := range []error{ErrInvalid, ErrNoMemory, ErrNotAcquired, ErrNoQuorum, ErrExpired,
		ErrLost, ErrTimeout, ErrIO, ErrServer, ErrAuth, ErrTLS, ErrNotSupported, ErrCanceled,
		ErrLimit, ErrState, ErrUnreachable, ErrPermission, ErrAtRisk, ErrFenced} {
		sentinels[e.(*codeError).code] = e
	}
}

// Error is a failure reported by the C library (or found by the binding
// before calling it, for inputs C cannot see, such as a negative duration).
type Error struct {
	Op       string // "open", "lock", "extend" or "unlock"
	Resource string // the mutex name; "" for "open"
	Code     int    // the C library's error code (negative), e.g. -4 for REDLOCK_ENOQUORUM
	Detail   string // the C library's description of this failure (which nodes said what)
	also     []error
}

// Name is the C name of the error code, e.g. "REDLOCK_ENOQUORUM".
func (e *Error) Name() string { return C.GoString(C.redlock_error_name(C.int(e.Code))) }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("redlock: ")
	b.WriteString(e.Op)
	if e.Resource != "" {
		b.WriteString(" ")
		b.WriteString(quoteShort(e.Resource))
	}
	b.WriteString(": ")
	b.WriteString(C.GoString(C.redlock_strerror(C.int(e.Code))))
	b.WriteString(" (")
	b.WriteString(e.Name())
	b.WriteString(")")
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	for _, a := range e.also {
		b.WriteString(": ")
		b.WriteString(a.Error())
	}
	return b.String()
}

// Unwrap gives the sentinel of the code, then any context error (so that
// errors.Is(err, context.Canceled) holds for a cancelled LockContext) or
// ErrClosed.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 1+len(e.also))
	if s, ok := sentinels[e.Code]; ok {
		out = append(out, s)
	}
	switch {
	case e.Code == int(C.REDLOCK_EINVAL) || e.Code == int(C.REDLOCK_ESTATE) || e.Code == int(C.REDLOCK_ENOMEM):
	case e.Op == "lock":
		out = append(out, ErrFailed)
	case e.Op == "extend":
		out = append(out, ErrExtendFailed)
	case e.Op == "unlock" && e.Code == int(C.REDLOCK_ELOST):
		out = append(out, ErrLockAlreadyExpired)
	}
	return append(out, e.also...)
}

// quoteShort quotes a resource name for a message, shortened: names may be
// up to 4096 bytes and would drown the message.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
