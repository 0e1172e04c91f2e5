// SPDX-License-Identifier: BSD-3-Clause

// Mutex: one named lock on a Client, backed by one reusable C lock handle;
// Lock/Extend/Unlock map one-to-one onto C calls. The tracker keeps what the
// auto-extension's loss callback updates too (autoextend.go).

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
//
// /* A new lock handle with its own acquisition policy when set is 1, in one
//  * call: the policy starts as the client's, and only the fields a Mutex
//  * can choose change. A refused name leaves *out NULL and says why in
//  * errbuf; on a refused policy the handle is kept, for its message, and
//  * the caller frees it. kind: 0 a mutex, 1 or 2 the read or write side of
//  * a read-write lock (rwmutex.go). */
// static int rl_go_lock_new(redlock_lock **out, redlock_client *c, const char *name, char *errbuf,
//                           size_t errbuf_size, int set, uint32_t retry_count, uint32_t delay_ms,
//                           uint32_t jitter_ms, double drift, uint32_t flags, int kind) {
//     int rc = kind == 0 ? redlock_lock_open(out, c, name, errbuf, errbuf_size)
//              : kind == 1 ? redlock_lock_open_read(out, c, name, errbuf, errbuf_size)
//              : redlock_lock_open_write(out, c, name, errbuf, errbuf_size);
//     if (rc != 0 || !set)
//         return rc;
//     redlock_lock_options o;
//     o.version = REDLOCK_LOCK_OPTIONS_VERSION;
//     redlock_lock_get_options(*out, &o);
//     o.retry_count = retry_count;
//     o.retry_delay_ms = delay_ms;
//     o.retry_jitter_ms = jitter_ms;
//     o.drift_factor = drift;
//     o.flags = flags;
//     return redlock_lock_set_options(*out, &o);
// }
//
// /* The handle's wake-up and fair-mode flags. */
// static uint32_t rl_go_lock_flags(const redlock_lock *l) {
//     redlock_lock_options o;
//     o.version = REDLOCK_LOCK_OPTIONS_VERSION;
//     return redlock_lock_get_options(l, &o) == 0 ? o.flags : 0;
// }
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Mutex is a distributed lock on one name. Lock it, do the work, Unlock
// it; it can be locked again afterwards. A Mutex is meant for one goroutine
// at a time: its methods take turns on an internal mutex, so overlapping
// calls wait for each other (and Lock on a Mutex already held fails with
// ErrState) rather than corrupt anything. Until, Token and LockedContext are
// the exceptions: they never wait for a call in progress. Two Mutexes on the
// same name are two contenders for one lock.
type Mutex struct {
	name   string
	client *Client
	h      *handle // nil when err != nil
	ttlMs  uint32
	err    error // why this Mutex cannot work (bad name or option); every operation returns it

	delayFunc DelayFunc // WithRetryDelayFunc: Lock's attempts are paced from Go
	tries     int       // attempts per Lock, for the delayFunc loop

	mu sync.Mutex // serialises calls on the C handle, which is single-threaded
	t  *tracker
}

// tracker is what is known about the Mutex's current acquisition, kept
// apart from the Mutex because the auto-extension's loss callback updates it
// too: it never points back at the Mutex, so a Mutex dropped while
// auto-extended can still be collected (its finalizer stops the extension).
type tracker struct {
	until atomic.Pointer[time.Time] // validity deadline as of the last call; nil before the first Lock

	mu      sync.Mutex // never held across a C call or user code
	ctxs    map[*heldCtx]struct{}
	autoGen uint64    // the running auto-extension's number; 0 when none runs
	gens    uint64    // numbers handed out so far
	lost    error     // why the auto-extension found the acquisition lost; nil once a new one is made
	atRisk  error     // the auto-extension's at-risk notice (ErrAtRisk); nil when none, or a new arming
	riskEnd time.Time // the validity's end as known at that notice
}

// NewMutex makes a Mutex for name; it does no I/O and never fails. A bad
// name (empty, longer than 4096 bytes) or option makes every operation on
// the Mutex return the error (matching ErrInvalid). The Mutex's own
// acquisition policy (WithExpiry, WithTries, WithRetryDelay,
// WithRetryJitter, WithRetryDelayFunc, WithDriftFactor, WithWake, WithFair)
// goes onto its C lock handle: it uses the client's connections whatever its options. Client
// options (WithKeyPrefix, WithNodeTimeout, ...) are refused here.
func (c *Client) NewMutex(name string, opts ...Option) *Mutex { return c.newMutex(name, 0, opts) }

// newMutex makes a Mutex over a C handle of the given kind (rl_go_lock_new).
func (c *Client) newMutex(name string, kind int, opts []Option) *Mutex {
	m := &Mutex{name: name, client: c, t: &tracker{}}
	cfg := c.cfg
	cfg.clientOnly = nil
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.err == nil && len(cfg.clientOnly) > 0 {
		cfg.fail("%s configures the client, not one mutex: give it to NewClient", strings.Join(cfg.clientOnly, ", "))
	}
	if cfg.err != nil {
		e := *cfg.err.(*Error)
		e.Resource = name
		m.err = &e
		return m
	}
	ttl := (cfg.expiry + time.Millisecond - 1) / time.Millisecond
	if ttl > math.MaxUint32 {
		m.err = &Error{Op: "new mutex", Resource: name, Code: int(C.REDLOCK_EINVAL),
			Detail: fmt.Sprintf("expiry %v is too long", cfg.expiry)}
		return m
	}
	m.ttlMs = uint32(ttl)                // 0 and > 1 day are left for C to refuse at Lock
	if strings.IndexByte(name, 0) >= 0 { // C would see a shorter name
		m.err = &Error{Op: "new mutex", Resource: name, Code: int(C.REDLOCK_EINVAL),
			Detail: "name contains a NUL byte"}
		return m
	}
	pol := cfg.s.effective().policy()
	m.delayFunc, m.tries = cfg.delayFunc, int(pol.retryCount)+1
	if m.delayFunc != nil {
		// Each pause is a C wait (lockPaced): no attempt of C's own inside
		// it but those a release or the holder's expiry calls for.
		pol.retryDelayMs, pol.retryJitterMs = uint32(C.REDLOCK_MAX_TTL_MS), 0
	}
	set := C.int(0)
	if pol != c.cfg.s.policy() {
		set = 1
	}

	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closing.Load() {
		m.err = closedErr("new mutex", name)
		return m
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var p *C.redlock_lock
	var errbuf [512]C.char
	rc := C.rl_go_lock_new(&p, c.p, cname, &errbuf[0], C.size_t(len(errbuf)), set, C.uint32_t(pol.retryCount),
		C.uint32_t(pol.retryDelayMs), C.uint32_t(pol.retryJitterMs), C.double(pol.driftFactor), C.uint32_t(pol.flags), C.int(kind))
	if rc != 0 {
		if p == nil {
			m.err = &Error{Op: "new mutex", Resource: name, Code: int(rc), Detail: C.GoString(&errbuf[0])}
			return m
		}
		m.err = &Error{Op: "new mutex", Resource: name, Code: int(rc), Detail: C.GoString(C.redlock_lock_errmsg(p))}
		C.redlock_lock_free(p)
		return m
	}
	m.h = &handle{p: p, t: m.t}
	c.register(m.h)
	// Memory only: a lock still held is left to expire on the nodes.
	runtime.SetFinalizer(m, (*Mutex).finalize)
	return m
}

func (m *Mutex) finalize() { m.client.unregister(m.h) }

// String describes the Mutex by its name and its client (whose String
// masks passwords).
func (m *Mutex) String() string {
	if m == nil {
		return "redlock.Mutex(nil)"
	}
	return fmt.Sprintf("redlock.Mutex{name: %s, client: %s}", quoteShort(m.name), m.client)
}

// GoString is String.
func (m *Mutex) GoString() string { return m.String() }

// Format prints String for every verb, as Client's does.
func (m *Mutex) Format(f fmt.State, verb rune) { formatString(f, verb, m.String()) }

// waitFlags says whether the C handle waits with wake-up (C's rule,
// redlock_flags_wake: fair mode implies it) and in fair mode (false, false
// for an invalid Mutex), for the tests.
func (m *Mutex) waitFlags() (wake, fair bool) {
	m.h.read(func(p *C.redlock_lock) {
		f := C.rl_go_lock_flags(p)
		wake = C.redlock_flags_wake(f) != 0
		fair = f&C.REDLOCK_OPT_FAIR != 0
	})
	return wake, fair
}

// Name is the mutex's name (the key on the nodes, after the client's prefix).
func (m *Mutex) Name() string { return m.name }

// Until is when the current acquisition stops being valid: the expiry
// minus the time the acquisition took and the drift allowance, moved on by
// each Extend, and while AutoExtend runs, by each of its extensions. It is
// the zero Time before the first Lock; after Unlock, or once an operation
// or the auto-extension finds the lock no longer held, it is no later than
// that moment. It never waits for a call in progress.
func (m *Mutex) Until() time.Time {
	m.t.mu.Lock()
	auto, lost := m.t.autoGen != 0, m.t.lost != nil
	m.t.mu.Unlock()
	now := time.Now() // before reading the validity, so Until errs early
	if auto {
		if v := m.h.validityMs(); v > 0 {
			return now.Add(time.Duration(v) * time.Millisecond)
		}
	}
	u := m.t.until.Load()
	switch {
	case u == nil:
		return time.Time{}
	case (auto || lost) && u.After(now): // the auto-extended lock is gone (or going: the loss callback is due)
		return now
	}
	return *u
}

// Token is the fencing token of the current acquisition: at least 1 while
// the lock is held by a client made with WithFencing, and 0 when the lock
// is not held (before Lock, after Unlock, once found lost) or the client
// does not mint tokens. Successive holders of a name get strictly
// increasing tokens, so a storage service that remembers the highest token
// it has seen can refuse a late write from a holder whose lock ran out (see
// docs/fencing.md). It never waits for a call in progress.
func (m *Mutex) Token() uint64 { return m.h.token() }

// Extensions is how many times the current (or last) acquisition was
// extended, by Extend or by the client's auto-extension: 0 after each Lock.
// It never waits for a call in progress.
func (m *Mutex) Extensions() uint32 { return m.h.extensions() }

// Extend pushes the expiry of the held lock out to the mutex's expiry from
// now, on a majority of nodes and within the current validity. It returns
// true on success; on failure false and an *Error (ErrExpired, ErrLost,
// ErrNoQuorum, ErrLimit...). An expired lock is never re-created.
func (m *Mutex) Extend() (bool, error) { return m.ExtendContext(context.Background()) }

// ExtendContext is Extend that does nothing if ctx is already done. Failures
// match ErrExtendFailed too, as go-redsync's do. Extend
// is a single round bounded by the client's node timeout, so ctx is not
// consulted during it.
func (m *Mutex) ExtendContext(ctx context.Context) (bool, error) {
	if ctx != nil && ctx.Err() != nil {
		return false, m.ctxErr(ctx, nil)
	}
	p, err := m.enter("extend")
	if err != nil {
		return false, err
	}
	defer m.leave()
	rc := C.redlock_lock_extend(p, C.uint32_t(m.ttlMs))
	runtime.KeepAlive(m)
	if rc != 0 {
		err := m.fail("extend", rc, p)
		m.observe(p, err)
		return false, err
	}
	m.observe(p, nil)
	return true, nil
}

// Unlock releases the lock on every node, with go-redsync's signature. It
// returns true, nil when the lock was still ours on a majority; false and an
// error matching ErrLost (and go-redsync's ErrLockAlreadyExpired) when it was
// not: it had expired, or another owner took it, so the critical section
// may have overlapped with theirs; false and ErrState when the Mutex is not
// locked.
func (m *Mutex) Unlock() (bool, error) { return m.UnlockContext(context.Background()) }

// UnlockContext is Unlock that does nothing if ctx is already done (the
// release is a single round bounded by the node timeout).
func (m *Mutex) UnlockContext(ctx context.Context) (bool, error) {
	err := m.unlock(ctx)
	return err == nil, err
}

func (m *Mutex) unlock(ctx context.Context) error {
	if ctx != nil && ctx.Err() != nil {
		return m.ctxErr(ctx, nil)
	}
	p, err := m.enter("unlock")
	if err != nil {
		return err
	}
	defer m.leave()
	rc := C.redlock_lock_release(p) // stops an auto-extension, waiting for one under way
	runtime.KeepAlive(m)
	if rc != 0 {
		err = m.fail("unlock", rc, p)
	}
	m.observe(p, errUnlocked(err))
	return err
}

// Locker adapts m to sync.Locker for code that wants one. Its Lock and
// Unlock panic with the *Error when Mutex.Lock or Mutex.Unlock fails,
// including an Unlock that finds the lock lost (ErrLost): sync.Locker has
// no way to report failure, and carrying on would be wrong.
func (m *Mutex) Locker() sync.Locker { return locker{m} }

type locker struct{ m *Mutex }

func (l locker) Lock() {
	if err := l.m.Lock(); err != nil {
		panic(err)
	}
}

func (l locker) Unlock() {
	if _, err := l.m.Unlock(); err != nil {
		panic(err)
	}
}

// Valid reports whether the current acquisition is still valid: whether
// Until is in the future. Unlike go-redsync's (deprecated there in favour of
// Until), it asks no node: the C library's validity already accounts for the
// time the acquisition took and for clock drift. The error is non-nil only
// for a Mutex that cannot work (bad name or option, closed client).
func (m *Mutex) Valid() (bool, error) { return m.ValidContext(context.Background()) }

// ValidContext is Valid; it returns ctx's error if ctx is already done.
func (m *Mutex) ValidContext(ctx context.Context) (bool, error) {
	if ctx != nil && ctx.Err() != nil {
		return false, ctx.Err()
	}
	if m.err != nil {
		return false, m.err
	}
	if m.client.closing.Load() {
		return false, closedErr("valid", m.name)
	}
	return time.Now().Before(m.Until()), nil
}

// Value is "" always. go-redsync returns the random value it stored on the
// nodes, mostly to hand ownership to another process (its WithValue); here
// the value is made by the C library for each acquisition and never leaves
// it, so that no log line or error can leak what would let another process
// release or extend the lock. Use Token (with WithFencing) to tell
// acquisitions apart.
func (m *Mutex) Value() string { return "" }

// enter takes the Mutex and the client's read side, in that order (Close
// takes only the client's write side, so this order cannot deadlock).
func (m *Mutex) enter(op string) (*C.redlock_lock, error) {
	if m.err != nil {
		return nil, m.err
	}
	m.mu.Lock()
	m.client.mu.RLock()
	if m.client.closing.Load() || m.h.p == nil {
		m.client.mu.RUnlock()
		m.mu.Unlock()
		return nil, closedErr(op, m.name)
	}
	return m.h.p, nil
}

func (m *Mutex) leave() {
	m.client.mu.RUnlock()
	m.mu.Unlock()
}

func (m *Mutex) fail(op string, rc C.int, p *C.redlock_lock) error {
	return &Error{Op: op, Resource: m.name, Code: int(rc), Detail: C.GoString(C.redlock_lock_errmsg(p))}
}

// read calls f with the handle's C lock under the read guard, for C's
// atomic reads (safe beside calls in progress); not at all once the handle
// is freed (or nil).
func (h *handle) read(f func(p *C.redlock_lock)) {
	if h == nil {
		return
	}
	h.guard.RLock()
	defer h.guard.RUnlock()
	if h.p != nil {
		f(h.p)
	}
}

// validityMs is C's validity of the handle's lock, or 0 once it is freed.
func (h *handle) validityMs() (ms int64) {
	h.read(func(p *C.redlock_lock) { ms = int64(C.redlock_lock_validity_ms(p)) })
	return ms
}

// extensions is C's count of the handle's lock's extensions, or 0.
func (h *handle) extensions() (n uint32) {
	h.read(func(p *C.redlock_lock) { n = uint32(C.redlock_lock_extensions(p)) })
	return n
}

// token is C's fencing token of the handle's lock, or 0.
func (h *handle) token() (t uint64) {
	h.read(func(p *C.redlock_lock) { t = uint64(C.redlock_lock_fencing_token(p)) })
	return t
}

// ctxErr reports a LockContext ended by its context (ctxError).
func (m *Mutex) ctxErr(ctx context.Context, base *Error) error {
	return ctxError(ctx, "lock", m.name, base)
}

func closedErr(op, name string) error {
	if name == "" {
		return fmt.Errorf("redlock: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("redlock: %s %s: %w", op, quoteShort(name), ErrClosed)
}

// errUnlocked is the cause given to LockedContext contexts by Unlock.
func errUnlocked(err error) error {
	if err != nil {
		return err
	}
	return context.Canceled
}

// observe records the handle's validity after a call (C owns it; Go only
// turns it into a time) and moves or ends the contexts from LockedContext.
// cause is why they end if the lock is not held any more.
func (m *Mutex) observe(p *C.redlock_lock, cause error) {
	now := time.Now() // before reading the validity, so Until errs early
	m.t.settle(now, int64(C.redlock_lock_validity_ms(p)), cause)
}

// settle is observe's bookkeeping, given the validity v (ms) read at now.
func (t *tracker) settle(now time.Time, v int64, cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v > 0 {
		u := now.Add(time.Duration(v) * time.Millisecond)
		t.until.Store(&u)
		if t.autoGen == 0 { // an auto-extended lock's contexts end on loss, not on a time
			for hc := range t.ctxs {
				hc.timer.Reset(time.Until(u))
			}
		}
		return
	}
	t.autoGen = 0 // C's auto-extension ends with the hold
	if old := t.until.Load(); old != nil && old.After(now) {
		t.until.Store(&now)
	}
	if cause == nil {
		cause = t.lostCause()
	}
	t.endAll(cause)
}

// newHold forgets the loss of an earlier acquisition.
func (t *tracker) newHold() {
	t.mu.Lock()
	t.lost, t.atRisk = nil, nil
	t.mu.Unlock()
}

// lostCause is why a lock not held is not: the auto-extension's loss, or
// its validity running out.
func (t *tracker) lostCause() error {
	if t.lost != nil {
		return t.lost
	}
	return ErrExpired
}

// endAll ends every context from LockedContext; t.mu is held.
func (t *tracker) endAll(cause error) {
	for hc := range t.ctxs {
		hc.timer.Stop()
		hc.cancel(cause)
		delete(t.ctxs, hc)
	}
}

type heldCtx struct {
	cancel context.CancelCauseFunc
	timer  *time.Timer // stopped while the lock is auto-extended
}

// LockedContext returns a context derived from parent that is done when
// the current acquisition is over: when its validity (Until) runs out,
// following Extend; while AutoExtend runs, when the auto-extension says the
// lock is at risk (not extended, its validity ending within the margin: the
// lock is still held, so that the work stops in time) or finds it lost;
// when Unlock or another operation finds the lock gone; or with parent.
// context.Cause tells which: ErrExpired when the validity ran out, the
// auto-extension's *Error (matching ErrAtRisk, or ErrLost, ErrExpired or
// ErrLimit when it lost the lock with no notice before), the operation's
// *Error when one found the lock lost, context.Canceled after Unlock.
// Without AutoExtend it tracks validity as known to this process, not loss
// found on the nodes by someone else; call cancel when done. If the Mutex is
// not held the context is done at once, with cause the auto-extension's loss
// if that is why, else ErrExpired; so it is while the lock is at risk (until
// an extension succeeds), with cause the at-risk notice.
func (m *Mutex) LockedContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	u := m.Until()
	// The closures below hold t, never m: see tracker.
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lost != nil || !time.Now().Before(u) {
		cancel(t.lostCause())
		return ctx, func() { cancel(context.Canceled) }
	}
	if risk := t.riskNow(u, time.Duration(m.ttlMs)*time.Millisecond); risk != nil {
		cancel(risk)
		return ctx, func() { cancel(context.Canceled) }
	}
	hc := &heldCtx{cancel: cancel}
	hc.timer = time.AfterFunc(time.Until(u), func() {
		cancel(ErrExpired)
		t.dropCtx(hc)
	})
	if t.autoGen != 0 {
		hc.timer.Stop()
	}
	if t.ctxs == nil {
		t.ctxs = map[*heldCtx]struct{}{}
	}
	t.ctxs[hc] = struct{}{}
	return ctx, func() {
		hc.timer.Stop()
		cancel(context.Canceled)
		t.dropCtx(hc)
	}
}

func (t *tracker) dropCtx(hc *heldCtx) {
	t.mu.Lock()
	delete(t.ctxs, hc)
	t.mu.Unlock()
}
