// SPDX-License-Identifier: BSD-3-Clause

// Behaviour of Client and Mutex against healthy nodes: locking, contention,
// contexts, extension, expiry, Close, finalizers.

package redlock_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func TestLockUnlockCycle(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(10*time.Second))
	if !m.Until().IsZero() {
		t.Fatalf("Until before any Lock = %v, want zero", m.Until())
	}
	for round := 0; round < 3; round++ { // the C handle is reused across cycles
		start := time.Now()
		if err := m.Lock(); err != nil {
			t.Fatalf("round %d: Lock: %v", round, err)
		}
		if u := m.Until(); !u.After(start.Add(9*time.Second)) || u.After(start.Add(10*time.Second)) {
			t.Fatalf("Until = %v after a 10s lock taken at %v", u, start)
		}
		if n := holders(name); n < quorum() {
			t.Fatalf("key on %d nodes after Lock, want at least %d", n, quorum())
		}
		if _, err := m.Unlock(); err != nil {
			t.Fatalf("round %d: Unlock: %v", round, err)
		}
		checkReleased(t, m, name)
		// The nodes it did not wait for delete the key too (well within the 10s TTL).
		if !eventually(5*time.Second, func() bool { return holders(name) == 0 }) {
			t.Fatalf("key still on %d nodes after Unlock", holders(name))
		}
		if u := m.Until(); u.After(time.Now()) {
			t.Fatalf("Until = %v in the future after Unlock", u)
		}
	}
	_, err := m.Unlock()
	mustIs(t, err, redlock.ErrState)
	if !strings.Contains(err.Error(), "not held") {
		t.Fatalf("Unlock of an idle mutex: %q lacks the C detail", err)
	}
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	mustIs(t, m.Lock(), redlock.ErrState) // already held by this Mutex
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestTryLockContended(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	a, b := c.NewMutex(name), c.NewMutex(name)
	if a.Name() != name {
		t.Fatalf("Name = %q", a.Name())
	}
	if err := a.TryLock(); err != nil {
		t.Fatal(err)
	}
	err := b.TryLock()
	mustIs(t, err, redlock.ErrNotAcquired)
	var re *redlock.Error
	if !errors.As(err, &re) || re.Op != "lock" || re.Resource != name || re.Detail == "" ||
		re.Name() != "REDLOCK_ENOTACQUIRED" {
		t.Fatalf("error fields: %#v", re)
	}
	if !strings.Contains(err.Error(), re.Detail) {
		t.Fatalf("error text %q lacks the C detail %q", err, re.Detail)
	}
	// Lock retries per the client (default: 4 attempts) and still fails.
	mustIs(t, b.Lock(), redlock.ErrNotAcquired)
	if _, err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := b.TryLock(); err != nil {
		t.Fatalf("TryLock after the holder unlocked: %v", err)
	}
	if _, err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Many goroutines, each with its own Mutex on one name: never two holders.
func TestContentionOneHolder(t *testing.T) {
	c := newClient(t, redlock.WithRetryDelay(2*time.Millisecond), redlock.WithRetryJitter(8*time.Millisecond))
	name := lockName(t)
	const goroutines, rounds = 12, 8
	var inside, maxInside, acquired atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := c.NewMutex(name, redlock.WithExpiry(10*time.Second))
			for r := 0; r < rounds; r++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := m.LockContext(ctx)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for {
					old := maxInside.Load()
					if n <= old || maxInside.CompareAndSwap(old, n) {
						break
					}
				}
				acquired.Add(1)
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if _, err := m.Unlock(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("contender: %v", err)
	}
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders at once", maxInside.Load())
	}
	if acquired.Load() != goroutines*rounds {
		t.Fatalf("%d acquisitions, want %d", acquired.Load(), goroutines*rounds)
	}
}

// One Mutex used by several goroutines at once is misuse; it must give
// errors, not corrupt memory (run with -race).
func TestSharedMutexMisuse(t *testing.T) {
	c := newClient(t)
	m := c.NewMutex(lockName(t))
	var wg sync.WaitGroup
	var locked atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := m.TryLock(); err == nil {
					locked.Add(1)
				} else if !errors.Is(err, redlock.ErrState) {
					t.Errorf("TryLock: %v", err)
				}
				m.Until()
				if _, err := m.Extend(); err != nil && !errors.Is(err, redlock.ErrState) {
					t.Errorf("Extend: %v", err)
				}
				if _, err := m.Unlock(); err != nil && !errors.Is(err, redlock.ErrState) {
					t.Errorf("Unlock: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if locked.Load() == 0 {
		t.Fatal("no TryLock succeeded")
	}
}

// holdElsewhere locks name through a separate client for the test's length.
func holdElsewhere(t *testing.T, name string) {
	t.Helper()
	h := newClient(t).NewMutex(name, redlock.WithExpiry(60*time.Second))
	if err := h.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Unlock() })
}

// waiter is a client that would retry for a very long time on its own.
func waiter(t *testing.T) *redlock.Client {
	return newClient(t, redlock.WithTries(1<<30), redlock.WithRetryDelay(20*time.Millisecond))
}

func TestLockContextCancel(t *testing.T) {
	name := lockName(t)
	holdElsewhere(t, name)
	m := waiter(t).NewMutex(name)
	for _, withDeadline := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		if withDeadline {
			ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		}
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		err := m.LockContext(ctx)
		took := time.Since(start)
		mustIs(t, err, context.Canceled, redlock.ErrCanceled)
		// Without the cancel this wait lasts a minute or forever.
		if took > 10*time.Second {
			t.Fatalf("deadline=%v: LockContext returned %v after the cancel", withDeadline, took)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("shutting down")
	cancel(why)
	mustIs(t, m.LockContext(ctx), context.Canceled, redlock.ErrCanceled, why)
	mustIs(t, m.TryLockContext(ctx), context.Canceled)
	ok, err := m.ExtendContext(ctx)
	if ok {
		t.Fatal("ExtendContext with a done context succeeded")
	}
	mustIs(t, err, context.Canceled)
}

// A cancel that lands around the start of the C call must not be lost:
// the binding repeats it until the call returns.
func TestLockContextCancelRace(t *testing.T) {
	name := lockName(t)
	holdElsewhere(t, name)
	m := waiter(t).NewMutex(name)
	for i := 0; i < 40; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		delay := time.Duration(i%5) * 500 * time.Microsecond
		go func() { time.Sleep(delay); cancel() }()
		done := make(chan error, 1)
		go func() { done <- m.LockContext(ctx) }()
		select {
		case err := <-done:
			mustIs(t, err, context.Canceled, redlock.ErrCanceled)
		case <-time.After(20 * time.Second):
			t.Fatalf("iteration %d: cancel after %v was lost", i, delay)
		}
	}
}

func TestLockContextDeadline(t *testing.T) {
	name := lockName(t)
	holdElsewhere(t, name)
	m := waiter(t).NewMutex(name)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := m.LockContext(ctx)
	mustIs(t, err, redlock.ErrTimeout, context.DeadlineExceeded)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a 300ms deadline took %v", took)
	}
	// A context already past its deadline does nothing.
	mustIs(t, m.LockContext(ctx), redlock.ErrTimeout, context.DeadlineExceeded)
	// C's wait, which is ctx's deadline, ran out before ctx's timer fired
	// (lateTimer holds that moment): still ctx's DeadlineExceeded.
	late := lateTimer{context.Background(), time.Now().Add(150 * time.Millisecond)}
	mustIs(t, m.LockContext(late), redlock.ErrTimeout, context.DeadlineExceeded)
}

func TestLockContextSucceedsWhenFreed(t *testing.T) {
	c := newClient(t, redlock.WithRetryDelay(10*time.Millisecond))
	name := lockName(t)
	a := c.NewMutex(name)
	if err := a.Lock(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(150*time.Millisecond, func() { a.Unlock() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := c.NewMutex(name)
	if err := b.LockContext(ctx); err != nil {
		t.Fatalf("LockContext while the holder lets go: %v", err)
	}
	if _, err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestUnlockExpiredIsLost(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(150*time.Millisecond))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if m.Until().After(time.Now()) {
		t.Fatalf("Until %v still in the future", m.Until())
	}
	ok, err := m.Extend()
	if ok {
		t.Fatal("Extend of an expired lock succeeded")
	}
	mustIs(t, err, redlock.ErrExpired)
	if holders(name) != 0 {
		t.Fatal("Extend re-created the expired key")
	}
	mustIs(t, unlockErr(m), redlock.ErrLost)
}

func TestUnlockTakenOverIsLost(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	a := c.NewMutex(name, redlock.WithExpiry(150*time.Millisecond))
	b := c.NewMutex(name, redlock.WithExpiry(10*time.Second))
	if err := a.Lock(); err != nil {
		t.Fatal(err)
	}
	// Once a's keys have expired everywhere, b takes the lock over.
	if !eventually(10*time.Second, func() bool { return holders(name) == 0 }) {
		t.Fatalf("a's 150ms keys still on %d nodes", holders(name))
	}
	if err := b.TryLock(); err != nil {
		t.Fatal(err)
	}
	_, err := a.Unlock()
	mustIs(t, err, redlock.ErrLost)
	if !strings.Contains(err.Error(), "overlapped") && !strings.Contains(err.Error(), "majority") {
		t.Logf("ErrLost text: %v", err)
	}
	// a's Unlock must not have removed b's key.
	if n := holders(name); n < quorum() {
		t.Fatalf("b's key on %d nodes after a's late Unlock", n)
	}
	mustIs(t, c.NewMutex(name).TryLock(), redlock.ErrNotAcquired)
	if _, err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestExtend(t *testing.T) {
	c := newClient(t, redlock.WithMaxExtensions(2))
	m := c.NewMutex(lockName(t), redlock.WithExpiry(time.Second))
	ok, err := m.Extend()
	if ok {
		t.Fatal("Extend of a mutex never locked succeeded")
	}
	mustIs(t, err, redlock.ErrState)
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		before := m.Until()
		time.Sleep(50 * time.Millisecond)
		ok, err := m.Extend()
		if !ok || err != nil {
			t.Fatalf("Extend %d: %v %v", i, ok, err)
		}
		if !m.Until().After(before) {
			t.Fatalf("Until did not move: %v -> %v", before, m.Until())
		}
	}
	ok, err = m.Extend()
	if ok {
		t.Fatal("third Extend passed WithMaxExtensions(2)")
	}
	mustIs(t, err, redlock.ErrLimit)
	if m.Until().Before(time.Now()) {
		t.Fatal("a refused extension ended the hold")
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestMaxHold(t *testing.T) {
	c := newClient(t, redlock.WithMaxHold(1500*time.Millisecond))
	m := c.NewMutex(lockName(t), redlock.WithExpiry(time.Second))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if n := m.Extensions(); n != 0 {
		t.Fatalf("Extensions after Lock = %d, want 0", n)
	}
	if ok, err := m.Extend(); !ok { // 1s from now is within 1.5s of the start
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	ok, err := m.Extend()
	if ok {
		t.Fatal("Extend went past WithMaxHold")
	}
	mustIs(t, err, redlock.ErrLimit)
	if n := m.Extensions(); n != 1 {
		t.Fatalf("Extensions after one Extend and one refused = %d, want 1", n)
	}
	m.Unlock()
}

func TestLockedContext(t *testing.T) {
	c := newClient(t)
	m := c.NewMutex(lockName(t), redlock.WithExpiry(400*time.Millisecond))

	ctx, cancel := m.LockedContext(context.Background())
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), redlock.ErrExpired) {
		t.Fatalf("LockedContext of an unlocked Mutex: err %v cause %v", ctx.Err(), context.Cause(ctx))
	}
	cancel()

	// Ends with the validity...
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = m.LockedContext(context.Background())
	defer cancel()
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), redlock.ErrExpired) {
			t.Fatalf("cause %v", context.Cause(ctx))
		}
		if time.Now().Before(m.Until()) {
			t.Fatalf("done before Until %v", m.Until())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LockedContext outlived the lock's validity")
	}
	m.Unlock()

	// ...which Extend moves on...
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := m.LockedContext(context.Background())
	defer cancel2()
	first := m.Until()
	for time.Now().Before(first.Add(300 * time.Millisecond)) {
		time.Sleep(100 * time.Millisecond)
		if ok, err := m.Extend(); !ok {
			t.Fatal(err)
		}
	}
	if ctx2.Err() != nil {
		t.Fatalf("context ended at %v though Extend moved Until to %v", first, m.Until())
	}
	// ...and Unlock ends.
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx2.Done():
		if !errors.Is(context.Cause(ctx2), context.Canceled) {
			t.Fatalf("cause after Unlock: %v", context.Cause(ctx2))
		}
	case <-time.After(time.Second):
		t.Fatal("Unlock did not end the LockedContext")
	}
}

func TestLocker(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	var l sync.Locker = c.NewMutex(name).Locker()
	l.Lock()
	mustIs(t, c.NewMutex(name).TryLock(), redlock.ErrNotAcquired)
	l.Unlock()
	defer func() {
		r := recover()
		err, _ := r.(error)
		if !errors.Is(err, redlock.ErrState) {
			t.Fatalf("Locker.Unlock of an unlocked mutex: recovered %v", r)
		}
	}()
	l.Unlock()
}

// Closing the client ends its mutexes, whatever their own options.
func TestMutexOwnOptionsClosed(t *testing.T) {
	c := newClient(t, redlock.WithTries(1))
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithTries(3), redlock.WithRetryDelay(time.Millisecond))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	mustIs(t, m.Lock(), redlock.ErrClosed)
}

func TestCloseInterruptsWait(t *testing.T) {
	name := lockName(t)
	holdElsewhere(t, name)
	c, err := redlock.NewClient(nodeURLs, testOpts(redlock.WithTries(1<<30), redlock.WithRetryDelay(20*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	m := c.NewMutex(name)
	done := make(chan error, 1)
	go func() { done <- m.LockContext(context.Background()) }()
	time.Sleep(150 * time.Millisecond)
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not interrupt a waiting LockContext")
	}
	mustIs(t, <-done, redlock.ErrClosed, redlock.ErrCanceled)
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	mustIs(t, m.Lock(), redlock.ErrClosed)
	mustIs(t, unlockErr(m), redlock.ErrClosed)
	_, err = m.Extend()
	mustIs(t, err, redlock.ErrClosed)
	mustIs(t, c.NewMutex("after-close").TryLock(), redlock.ErrClosed)
}

// Close while goroutines use the client: no crash, no race; every
// operation succeeds or reports ErrClosed.
func TestCloseUnderLoad(t *testing.T) {
	for round := 0; round < 3; round++ {
		c, err := redlock.NewClient(nodeURLs, testOpts(redlock.WithRetryDelay(time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var ops atomic.Int64
		stop := make(chan struct{})
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, redlock.ErrClosed) {
				t.Errorf("%s during Close: %v", what, err)
			}
		}
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				name := lockName(t)
				for {
					select {
					case <-stop:
						return
					default:
					}
					m := c.NewMutex(name)
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err := m.LockContext(ctx)
					cancel()
					check("LockContext", err)
					if err == nil {
						_, err := m.Extend()
						check("Extend", err)
						m.Until()
						check("Unlock", unlockErr(m))
					}
					ops.Add(1)
				}
			}(g)
		}
		time.Sleep(time.Duration(50+round*50) * time.Millisecond)
		var cw sync.WaitGroup
		for i := 0; i < 3; i++ { // concurrent Close calls too
			cw.Add(1)
			go func() { defer cw.Done(); c.Close() }()
		}
		cw.Wait()
		mustIs(t, c.NewMutex("x").Lock(), redlock.ErrClosed)
		time.Sleep(20 * time.Millisecond)
		close(stop)
		wg.Wait()
		if ops.Load() == 0 {
			t.Fatal("no operation ran before Close")
		}
	}
}

// Finalizers free the C handles of Mutexes nobody references; Close frees the rest.
func TestFinalizersFreeHandles(t *testing.T) {
	c := newClient(t)
	keep := c.NewMutex(lockName(t))
	for i := 0; i < 500; i++ {
		c.NewMutex(lockName(t))
	}
	deadline := time.Now().Add(10 * time.Second)
	for redlock.LiveHandles(c) > 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := redlock.LiveHandles(c); n != 1 {
		t.Fatalf("%d C handles live, want 1 (the one still referenced)", n)
	}
	if err := keep.TryLock(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := redlock.LiveHandles(c); n != 0 {
		t.Fatalf("%d C handles live after Close", n)
	}
	mustIs(t, unlockErr(keep), redlock.ErrClosed)
}

func TestVersion(t *testing.T) {
	if v := redlock.Version(); strings.Count(v, ".") != 2 {
		t.Fatalf("Version() = %q", v)
	}
	t.Logf("libredlock %s, link mode %s, %d nodes", redlock.Version(), redlock.LinkMode, len(nodeURLs))
}

// WithFunctions: release and extend go through FCALL, which needs the
// library LoadFunctions puts on the nodes.
func TestFunctions(t *testing.T) {
	ctx := context.Background()
	for i, r := range rdbs {
		if err := r.Do(ctx, "FUNCTION", "DELETE", "redlock").Err(); err != nil && !strings.Contains(err.Error(), "not exist") &&
			!strings.Contains(err.Error(), "not found") {
			t.Fatalf("node %d: FUNCTION DELETE: %v", i, err)
		}
	}
	c := newClient(t, redlock.WithFunctions())
	m := c.NewMutex(lockName(t))
	// One attempt is a bare SET and needs no function (a waiting Lock registers in the
	// resource's wake-up queue through the acquire function, so it would).
	if err := m.TryLock(); err != nil {
		t.Fatal(err)
	}
	ok, err := m.Extend()
	if ok {
		t.Fatal("Extend through FCALL worked with no library on the nodes")
	}
	mustIs(t, err, redlock.ErrServer)
	t.Logf("Extend without the library: %v", err)

	if err := c.LoadFunctions(); err != nil {
		t.Fatalf("LoadFunctions: %v", err)
	}
	m2 := c.NewMutex(lockName(t))
	if err := m2.Lock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := m2.Extend(); !ok {
		t.Fatalf("Extend with the library loaded: %v", err)
	}
	if _, err := m2.Unlock(); err != nil {
		t.Fatalf("Unlock with the library loaded: %v", err)
	}
	checkReleased(t, m2, m2.Name()) // FCALL release deleted the key where it was confirmed
	c.Close()
	mustIs(t, c.LoadFunctions(), redlock.ErrClosed)
}
