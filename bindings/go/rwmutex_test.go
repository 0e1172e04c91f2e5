// SPDX-License-Identifier: BSD-3-Clause

// RWMutex: readers share (across clients and within one RWMutex), a writer
// excludes readers, writers and Mutexes, contexts, RLocker, bad input. The
// algorithm's own cases are the C tests' (tests/c/test_rwlock.c).

package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func TestRWMutexReadersShareWriterExcludes(t *testing.T) {
	a, b := newClient(t), newClient(t)
	name := lockName(t)
	ra, rb := a.NewRWMutex(name, redlock.WithExpiry(10*time.Second)), b.NewRWMutex(name)
	if err := ra.RLock(); err != nil {
		t.Fatal(err)
	}
	if err := rb.RLock(); err != nil { // another client's reader
		t.Fatal(err)
	}
	mustIs(t, rb.TryLock(), redlock.ErrNotAcquired)
	mustIs(t, b.NewMutex(name).TryLock(), redlock.ErrNotAcquired) // a Mutex of the name too
	if _, err := ra.RUnlock(); err != nil {
		t.Fatal(err)
	}
	mustIs(t, rb.TryLock(), redlock.ErrNotAcquired) // rb's reader still holds
	if _, err := rb.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.RUnlock(); err == nil { // no read lock held
		t.Fatal("RUnlock without RLock succeeded")
	}
	if err := rb.TryLock(); err != nil {
		t.Fatal(err)
	}
	mustIs(t, ra.TryRLock(), redlock.ErrNotAcquired)
	mustIs(t, ra.TryLock(), redlock.ErrNotAcquired)
	if _, err := rb.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := ra.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := ra.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// Goroutines of one RWMutex share its read lease; the last RUnlock releases
// it; a writer of the same RWMutex waits for them, and RLocks after it wait
// for the writer.
func TestRWMutexLocalReaders(t *testing.T) {
	c := newClient(t, redlock.WithRetryDelay(5*time.Millisecond))
	name := lockName(t)
	rw := c.NewRWMutex(name, redlock.WithExpiry(10*time.Second))
	var wg sync.WaitGroup
	var mu sync.Mutex
	held, most := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rw.RLock(); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			held++
			most = max(most, held)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			held--
			mu.Unlock()
			if _, err := rw.RUnlock(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most < 2 {
		t.Fatalf("at most %d readers at once: the read lease was not shared", most)
	}
	if !eventually(5*time.Second, func() bool { return holders(name) == 0 }) {
		t.Fatalf("the lease is still on %d nodes after the last RUnlock", holders(name))
	}

	if err := rw.RLock(); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	go func() { locked <- rw.LockContext(wctx) }()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	mustIs(t, rw.RLockContext(ctx), redlock.ErrTimeout) // behind the waiting writer
	cancel()
	select {
	case err := <-locked:
		t.Fatalf("Lock returned %v while a reader held", err)
	default:
	}
	if _, err := rw.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestRWMutexRLockerAndSides(t *testing.T) {
	c := newClient(t, redlock.WithFencing())
	name := lockName(t)
	rw := c.NewRWMutex(name)
	if err := rw.Lock(); err != nil {
		t.Fatal(err)
	}
	tok := rw.Writer().Token()
	if tok == 0 {
		t.Fatal("a writer got no fencing token")
	}
	if _, err := rw.Unlock(); err != nil {
		t.Fatal(err)
	}
	var l sync.Locker = rw.RLocker()
	l.Lock()
	if got := rw.Reader().Token(); got != tok {
		t.Fatalf("a reader's token is %d, want the last writer's %d", got, tok)
	}
	if !rw.Reader().Until().After(time.Now()) {
		t.Fatal("the read lease has no validity")
	}
	l.Unlock()
	defer func() {
		if recover() == nil {
			t.Fatal("RLocker's Unlock without a read lock did not panic")
		}
	}()
	l.Unlock()
}

func TestRWMutexBadInput(t *testing.T) {
	c := newClient(t)
	for _, name := range []string{"", "a\x00b", string(make([]byte, 5000))} {
		rw := c.NewRWMutex(name)
		mustIs(t, rw.RLock(), redlock.ErrInvalid)
		mustIs(t, rw.Lock(), redlock.ErrInvalid)
	}
	rw := c.NewRWMutex(lockName(t), redlock.WithExpiry(0))
	mustIs(t, rw.TryRLock(), redlock.ErrInvalid)
}

func TestRWMutexDowngrade(t *testing.T) {
	a, b := newClient(t), newClient(t)
	name := lockName(t)
	rw, other := a.NewRWMutex(name), b.NewRWMutex(name)
	mustIs(t, rw.Downgrade(), redlock.ErrState) // not write-locked
	if err := rw.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := rw.Downgrade(); err != nil {
		t.Fatal(err)
	}
	if err := other.TryRLock(); err != nil { // readers join now
		t.Fatal(err)
	}
	mustIs(t, other.TryLock(), redlock.ErrNotAcquired)
	if err := rw.TryRLock(); err != nil { // this RWMutex's goroutines share the downgraded lease
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := rw.RUnlock(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.RUnlock(); err != nil {
		t.Fatal(err)
	}
	if err := rw.TryLock(); err != nil { // the new writer handle works
		t.Fatal(err)
	}
	if _, err := rw.Unlock(); err != nil {
		t.Fatal(err)
	}
}
