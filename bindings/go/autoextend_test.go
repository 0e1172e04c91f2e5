// SPDX-License-Identifier: BSD-3-Clause

// Auto-extension (Mutex.AutoExtend) against real nodes: a short-lived lock
// held across many expiries, the at-risk notice and each kind of loss ending
// LockedContext.

package redlock_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// shortTTL is the expiry of the auto-extended locks below: several of them
// pass during each test.
const shortTTL = 600 * time.Millisecond

// waitDone waits for ctx to end, failing the test if it has not after a
// bound far beyond anything expected (the point is "ends", not "how fast").
func waitDone(t *testing.T, ctx context.Context, what string) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the context did not end", what)
		return nil
	}
}

func TestAutoExtendKeepsLock(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(shortTTL))
	mustIs(t, m.AutoExtend(0), redlock.ErrState) // not held
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	ctxBefore, cancelBefore := m.LockedContext(context.Background()) // made before AutoExtend: follows it too
	defer cancelBefore()
	if err := m.AutoExtend(0); err != nil {
		t.Fatalf("AutoExtend: %v", err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	first := m.Until()
	time.Sleep(5 * shortTTL)
	for _, c := range []context.Context{ctxBefore, ctx} {
		if c.Err() != nil {
			t.Fatalf("LockedContext ended while auto-extended: %v", context.Cause(c))
		}
	}
	if !m.Until().After(first) {
		t.Fatalf("Until did not follow the extensions: %v, then %v", first, m.Until())
	}
	if n := holders(name); n < quorum() {
		t.Fatalf("key on %d nodes after %v of a %v lock", n, 5*shortTTL, shortTTL)
	}
	mustIs(t, c.NewMutex(name).TryLock(), redlock.ErrNotAcquired)
	if _, err := m.Unlock(); err != nil {
		t.Fatalf("Unlock of an auto-extended lock: %v", err)
	}
	if cause := waitDone(t, ctx, "Unlock"); !errors.Is(cause, context.Canceled) {
		t.Fatalf("cause after Unlock: %v", cause)
	}
	checkReleased(t, m, name)
	mustIs(t, m.StopAutoExtend(), redlock.ErrState) // Unlock ended it
}

func TestAutoExtendStop(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(shortTTL))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(time.Hour); err != nil { // again: restarts it
		t.Fatalf("second AutoExtend: %v", err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	time.Sleep(2 * shortTTL)
	if err := m.StopAutoExtend(); err != nil {
		t.Fatalf("StopAutoExtend: %v", err)
	}
	mustIs(t, m.StopAutoExtend(), redlock.ErrState)
	// Now nothing extends it: the context follows the validity again.
	if cause := waitDone(t, ctx, "after StopAutoExtend"); !errors.Is(cause, redlock.ErrExpired) {
		t.Fatalf("cause after StopAutoExtend: %v", cause)
	}
	// The nodes' keys expire a little after the local validity (the drift
	// allowance): wait for that, then the release finds nothing of ours.
	if !eventually(10*time.Second, func() bool { return holders(name) == 0 }) {
		t.Fatalf("key still on %d nodes long after the validity ran out", holders(name))
	}
	mustIs(t, unlockErr(m), redlock.ErrLost)
}

// Deleting the key on every node behind the holder's back: the
// auto-extension finds the lock lost and says so.
func TestAutoExtendLost(t *testing.T) {
	c := newClient(t, redlock.WithFencing())
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(shortTTL))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	if m.Token() == 0 {
		t.Fatal("no fencing token while held")
	}
	for i, r := range rdbs {
		if err := r.Del(context.Background(), name).Err(); err != nil {
			t.Fatalf("DEL on node %d: %v", i, err)
		}
	}
	cause := waitDone(t, ctx, "key deleted on every node")
	mustIs(t, cause, redlock.ErrLost)
	var re *redlock.Error
	if !errors.As(cause, &re) || re.Op != "auto-extend" || re.Resource != name {
		t.Fatalf("cause %#v", cause)
	}
	t.Logf("loss: %v", cause)
	if tok := m.Token(); tok != 0 {
		t.Fatalf("Token after the loss = %d", tok)
	}
	if u := m.Until(); u.After(time.Now()) {
		t.Fatalf("Until %v in the future after the loss", u)
	}
	// A context asked for afterwards is done at once, for the same reason.
	late, cancelLate := m.LockedContext(context.Background())
	defer cancelLate()
	if late.Err() == nil || !errors.Is(context.Cause(late), redlock.ErrLost) {
		t.Fatalf("LockedContext after the loss: err %v cause %v", late.Err(), context.Cause(late))
	}
	mustIs(t, unlockErr(m), redlock.ErrLost)

	// The Mutex works again afterwards.
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := m.LockedContext(context.Background())
	defer cancel2()
	if ctx2.Err() != nil {
		t.Fatalf("LockedContext of the new hold is done: %v", context.Cause(ctx2))
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// waitCause polls LockedContext until a context made now is done with the
// auto-extension's loss, matching target (after an at-risk notice, a new
// context is done at once with it until the loss; right after the validity's
// end, with a bare ErrExpired until the C thread tells the loss), and
// returns that cause.
func waitCause(t *testing.T, m *redlock.Mutex, target error, what string) error {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := m.LockedContext(context.Background())
		cause := context.Cause(ctx)
		cancel()
		var re *redlock.Error
		if ctx.Err() != nil && errors.Is(cause, target) && errors.As(cause, &re) && re.Op == "auto-extend" {
			return cause
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: no LockedContext ended with %v", what, target)
	return nil
}

// The at-risk notice (issue 38): with a majority of nodes paused no
// extension succeeds, and LockedContext contexts end with ErrAtRisk a margin
// before the validity ends, while the lock is still held (Valid, Until and
// Token unchanged); the loss (ErrExpired) comes after the validity's end.
func TestAutoExtendAtRisk(t *testing.T) {
	// The margin: max(3 s / 10, 2 x 100 ms) = 300 ms.
	const ttl, margin = 3 * time.Second, 300 * time.Millisecond
	c := newClient(t, redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithFencing())
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(ttl))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	token := m.Token()
	fault(t, "pause", lastNodes(quorum())...) // long before the first extension, due at 1 s

	cause := waitDone(t, ctx, "majority paused")
	now, until := time.Now(), m.Until()
	mustIs(t, cause, redlock.ErrAtRisk)
	var re *redlock.Error
	if !errors.As(cause, &re) || re.Op != "auto-extend" || re.Resource != name || re.Name() != "REDLOCK_EATRISK" {
		t.Fatalf("cause %#v", cause)
	}
	if errors.Is(cause, redlock.ErrExpired) || errors.Is(cause, redlock.ErrLost) {
		t.Fatalf("the at-risk cause matches a loss: %v", cause)
	}
	t.Logf("at risk: %v (validity left %v)", cause, until.Sub(now))
	left := until.Sub(now)
	if left <= 50*time.Millisecond || left > margin+50*time.Millisecond {
		t.Fatalf("at-risk notice with %v of validity left, want about %v", left, margin)
	}
	// Not lost yet: the lock is still ours, and still auto-extended.
	if ok, err := m.Valid(); !ok || err != nil {
		t.Fatalf("Valid at the notice = %v, %v", ok, err)
	}
	if m.Token() != token || token == 0 {
		t.Fatalf("Token at the notice = %d, was %d", m.Token(), token)
	}
	// A context asked for while at risk is done at once, for the same reason.
	late, cancelLate := m.LockedContext(context.Background())
	defer cancelLate()
	if late.Err() == nil || !errors.Is(context.Cause(late), redlock.ErrAtRisk) {
		t.Fatalf("LockedContext while at risk: err %v cause %v", late.Err(), context.Cause(late))
	}

	loss := waitCause(t, m, redlock.ErrExpired, "the loss after the notice")
	lostAt := time.Now()
	if !lostAt.After(until) {
		t.Fatalf("lost at %v, before the validity's end %v known at the notice", lostAt, until)
	}
	if lostAt.Sub(now) < margin/2 {
		t.Fatalf("lost %v after the notice: the notice came too late", lostAt.Sub(now))
	}
	t.Logf("loss: %v (%v after the notice)", loss, lostAt.Sub(now))
	if ok, _ := m.Valid(); ok {
		t.Fatal("Valid after the loss")
	}
	mustIs(t, m.StopAutoExtend(), redlock.ErrState) // the loss ended it
}

// An at-risk episode that ends with an extension: contexts made after it
// live again, and a later episode is told again.
func TestAutoExtendAtRiskRecovers(t *testing.T) {
	// The margin: max(2 s / 10, 2 x 500 ms), at most half the expiry: 1 s,
	// time enough for the nodes to come back. Extensions every 667 ms.
	const ttl = 2 * time.Second
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(ttl))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock()
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	paused := lastNodes(quorum())
	for _, i := range paused {
		ctl(t, "PAUSE", strconv.Itoa(i))
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, i := range paused {
				ctl(t, "RESUME", strconv.Itoa(i))
			}
		}
	}
	defer resume()
	mustIs(t, waitDone(t, ctx, "majority paused"), redlock.ErrAtRisk)
	resume() // the thread keeps trying: an extension succeeds within the validity left
	if !eventually(5*time.Second, func() bool {
		ctx2, cancel2 := m.LockedContext(context.Background())
		defer cancel2()
		return ctx2.Err() == nil
	}) {
		t.Fatal("LockedContext still done after the nodes came back")
	}
	if ok, _ := m.Valid(); !ok {
		t.Fatal("the lock was lost although the nodes came back within the margin")
	}
	ctx3, cancel3 := m.LockedContext(context.Background())
	defer cancel3()
	select {
	case <-ctx3.Done():
		t.Fatalf("LockedContext ended with the nodes up: %v", context.Cause(ctx3))
	case <-time.After(ttl):
	}
}

// The hold bound: extensions stop, and the lock is lost when its validity
// runs out, with ErrLimit; the at-risk notice comes first.
func TestAutoExtendMaxHold(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(300*time.Millisecond))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(900 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	start := time.Now()
	cause := waitDone(t, ctx, "past maxHold")
	mustIs(t, cause, redlock.ErrAtRisk) // the bound stops the extensions: at risk, not lost yet
	if ok, _ := m.Valid(); !ok {
		t.Fatal("not valid at the at-risk notice")
	}
	mustIs(t, waitCause(t, m, redlock.ErrLimit, "past maxHold"), redlock.ErrLimit)
	if took := time.Since(start); took < 600*time.Millisecond {
		// Less than maxHold minus one expiry: it was not extended at all.
		t.Fatalf("lost after %v: the lock was not kept until near its bound", took)
	}
	mustIs(t, m.AutoExtend(0), redlock.ErrState) // not held any more
	// (Unlock may still find the keys: they outlive the validity by the
	// drift allowance.)
	m.Unlock()
}

// With a majority of nodes down, extensions fail until the validity runs
// out: ErrExpired.
func TestAutoExtendExpired(t *testing.T) {
	c := newClient(t, redlock.WithNodeTimeout(100*time.Millisecond))
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(shortTTL))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	fault(t, "kill", lastNodes(len(nodeURLs)-quorum()+1)...)
	mustIs(t, waitDone(t, ctx, "majority down"), redlock.ErrAtRisk) // told first, while held
	cause := waitCause(t, m, redlock.ErrExpired, "majority down")
	t.Logf("loss: %v", cause)
}

// A Mutex dropped while auto-extended is still collected: its finalizer
// stops the extension and the key expires.
func TestAutoExtendDroppedMutex(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	func() {
		m := c.NewMutex(name, redlock.WithExpiry(shortTTL))
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		if err := m.AutoExtend(0); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for redlock.LiveHandles(c) > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if n := redlock.LiveHandles(c); n != 0 {
		t.Fatalf("the auto-extended Mutex nobody references was not collected (%d handles live)", n)
	}
	for holders(name) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := holders(name); n != 0 {
		t.Fatalf("key still on %d nodes: the extension outlived the Mutex", n)
	}
}

// Close stops the extension; contexts then end with the validity left.
func TestAutoExtendClose(t *testing.T) {
	c, err := redlock.NewClient(nodeURLs, testOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(shortTTL))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	time.Sleep(shortTTL)
	c.Close()
	if cause := waitDone(t, ctx, "after Close"); !errors.Is(cause, redlock.ErrExpired) {
		t.Fatalf("cause after Close: %v", cause)
	}
	mustIs(t, m.AutoExtend(0), redlock.ErrClosed)
	mustIs(t, m.StopAutoExtend(), redlock.ErrClosed)
	if m.Token() != 0 || m.Nodes() != nil {
		t.Fatal("Token or Nodes of a closed client's Mutex")
	}
}

func TestAutoExtendBadBound(t *testing.T) {
	c := newClient(t)
	m := c.NewMutex(lockName(t))
	mustIs(t, m.AutoExtend(-time.Second), redlock.ErrInvalid)
}
