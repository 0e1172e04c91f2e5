// SPDX-License-Identifier: BSD-3-Clause

// go-redsync v4 compatibility: the Mutex has redsync's method set and
// signatures, redsync's option names and defaults work on NewMutex without
// a C client (or connections) per Mutex, and redsync's README examples run
// with only the import and the constructor changed.

package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// redsyncMutex is go-redsync v4's *Mutex method set; both types must have it.
type redsyncMutex interface {
	Lock() error
	LockContext(context.Context) error
	TryLock() error
	TryLockContext(context.Context) error
	Unlock() (bool, error)
	UnlockContext(context.Context) (bool, error)
	Extend() (bool, error)
	ExtendContext(context.Context) (bool, error)
	Valid() (bool, error)
	ValidContext(context.Context) (bool, error)
	Value() string
	Until() time.Time
	Name() string
}

var (
	_ redsyncMutex = (*redsync.Mutex)(nil)
	_ redsyncMutex = (*redlock.Mutex)(nil)
	// redsync's option names, with its argument types.
	_ = []redlock.Option{redlock.WithExpiry(time.Second), redlock.WithTries(1),
		redlock.WithRetryDelay(time.Millisecond), redlock.WithRetryDelayFunc(func(int) time.Duration { return 0 }),
		redlock.WithDriftFactor(0.01), redlock.WithTimeoutFactor(0.05), redlock.WithFailFast(true),
		redlock.WithShufflePools(true)}
)

// redsync's README "Usage" example; changed: the import (redsync is this
// package) and the constructor (redlock.NewClient over URLs instead of
// redsync.New over go-redis pools; with the quarantine off, as every client
// of this suite, whose nodes restart without persistence: see tolerant).
func TestRedsyncReadmeExample(t *testing.T) {
	rs, err := redlock.NewClient(nodeURLs, redlock.WithQuarantine(false))
	if err != nil {
		panic(err)
	}
	defer rs.Close()

	// Obtain a new mutex by using the same name for all instances wanting the
	// same lock.
	mutexname := "my-global-mutex" + lockName(t)
	mutex := rs.NewMutex(mutexname)

	// Obtain a lock for our given mutex. After this is successful, no one else
	// can obtain the same lock (the same mutex name) until we unlock it.
	if err := mutex.Lock(); err != nil {
		panic(err)
	}

	// Do your work that requires the lock.
	if holders(mutexname) < quorum() {
		t.Fatal("not held on a majority")
	}

	// Release the lock so other processes or threads can obtain a lock.
	if ok, err := mutex.Unlock(); !ok || err != nil {
		panic("unlock failed")
	}
	// Unlock returns once a majority confirmed; the other nodes' deletes
	// are on their way.
	for deadline := time.Now().Add(2 * time.Second); holders(mutexname) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("key left behind")
		}
	}
}

// redsync's examples/goredis/v9 example, the same two changes (and no
// tempredis: the harness's nodes).
func TestRedsyncGoredisExample(t *testing.T) {
	rs, err := redlock.NewClient(nodeURLs, redlock.WithQuarantine(false))
	if err != nil {
		panic(err)
	}
	defer rs.Close()

	mutex := rs.NewMutex("test-redsync" + lockName(t))
	ctx := context.Background()

	if err := mutex.LockContext(ctx); err != nil {
		panic(err)
	}

	if _, err := mutex.UnlockContext(ctx); err != nil {
		panic(err)
	}
}

// The rest of redsync's method set: Extend, Valid, Value, Until, Name, and
// its error values through errors.Is.
func TestRedsyncMethods(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(2*time.Second), redlock.WithTries(1))
	if ok, err := m.Valid(); ok || err != nil {
		t.Fatalf("Valid before Lock = %v, %v", ok, err)
	}
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Valid(); !ok || err != nil {
		t.Fatalf("Valid while held = %v, %v", ok, err)
	}
	if m.Name() != name || m.Value() != "" || time.Until(m.Until()) <= 0 {
		t.Fatalf("Name %q, Value %q, Until %v", m.Name(), m.Value(), m.Until())
	}
	other := c.NewMutex(name, redlock.WithTries(2), redlock.WithRetryDelay(10*time.Millisecond))
	err := other.Lock()
	mustIs(t, err, redlock.ErrFailed, redlock.ErrNotAcquired)
	mustIs(t, other.TryLock(), redlock.ErrFailed)
	ok, err := other.Extend()
	if ok {
		t.Fatal("Extend of a mutex not held succeeded")
	}
	t.Logf("Extend not held: %v", err)
	if ok, err := m.Extend(); !ok || err != nil {
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	for _, k := range []string{name} {
		rdbs[0].Del(context.Background(), k)
		rdbs[1].Del(context.Background(), k)
		rdbs[2].Del(context.Background(), k)
	}
	ok, err = m.Unlock()
	if ok {
		t.Fatal("Unlock of a lock deleted on a majority returned true")
	}
	mustIs(t, err, redlock.ErrLost, redlock.ErrLockAlreadyExpired)
	if ok, err := m.Valid(); ok || err != nil {
		t.Fatalf("Valid after Unlock = %v, %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, err := m.ValidContext(ctx); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("ValidContext(done) = %v, %v", ok, err)
	}
}

// redsync's defaults: 32 attempts, 50-250 ms apart, an 8 s expiry. The
// event hook counts the attempts of one Lock on a lock held elsewhere.
func TestRedsyncDefaults(t *testing.T) {
	var attempts, last atomic.Int32
	c := newClient(t, redlock.WithEventHandler(func(e redlock.Event) {
		if e.Type == redlock.EventAcquireFailed {
			attempts.Add(1)
			last.Store(int32(e.Attempt))
		}
	}))
	name := lockName(t)
	holder := c.NewMutex(name)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock()
	if d := time.Until(holder.Until()); d < 7*time.Second || d > 8*time.Second {
		t.Fatalf("default validity %v, want just under 8s", d)
	}
	attempts.Store(0)
	t0 := time.Now()
	mustIs(t, c.NewMutex(name).Lock(), redlock.ErrNotAcquired, redlock.ErrFailed)
	took := time.Since(t0)
	if attempts.Load() != 32 || last.Load() != 32 {
		t.Fatalf("%d attempts (last numbered %d), want 32", attempts.Load(), last.Load())
	}
	// 31 pauses of 50-250 ms.
	if took < 31*50*time.Millisecond || took > 31*250*time.Millisecond+5*time.Second {
		t.Fatalf("32 attempts took %v", took)
	}
	t.Logf("32 attempts in %v", took)
}

// A Mutex's own policy (tries, delays, drift) is honoured, over the
// client's connections: many such mutexes add no connections to the nodes.
func TestMutexOwnPolicy(t *testing.T) {
	c := newClient(t, redlock.WithTries(1))
	name := lockName(t)
	holder := c.NewMutex(name)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock()

	// WithTries + WithRetryDelay on the Mutex: 3 attempts, 2 pauses of 150 ms.
	t0 := time.Now()
	mustIs(t, c.NewMutex(name, redlock.WithTries(3), redlock.WithRetryDelay(150*time.Millisecond)).Lock(), redlock.ErrNotAcquired)
	if d := time.Since(t0); d < 300*time.Millisecond || d > 3*time.Second {
		t.Fatalf("3 tries 150 ms apart took %v", d)
	}
	// The client's own policy is still 1 attempt.
	t0 = time.Now()
	mustIs(t, c.NewMutex(name).Lock(), redlock.ErrNotAcquired)
	if d := time.Since(t0); d > time.Second { // 32 tries would take at least 1.55 s
		t.Fatalf("1 try took %v", d)
	}
	// WithRetryDelayFunc: called with 1, 2, 3 between 4 attempts.
	var calls []int
	f := func(n int) time.Duration { calls = append(calls, n); return 10 * time.Millisecond }
	mustIs(t, c.NewMutex(name, redlock.WithTries(4), redlock.WithRetryDelayFunc(f)).Lock(), redlock.ErrNotAcquired)
	if len(calls) != 3 || calls[0] != 1 || calls[2] != 3 {
		t.Fatalf("delay function calls %v, want [1 2 3]", calls)
	}
	// ... and cut short by the context.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 = time.Now()
	err := c.NewMutex(name, redlock.WithRetryDelayFunc(func(int) time.Duration { return time.Hour })).LockContext(ctx)
	mustIs(t, err, context.DeadlineExceeded)
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("LockContext with an hour's delay took %v past a 200 ms deadline", d)
	}
	// WithDriftFactor on the Mutex: 40% of 10 s off the validity.
	d := c.NewMutex(lockName(t), redlock.WithExpiry(10*time.Second), redlock.WithDriftFactor(0.4))
	if err := d.Lock(); err != nil {
		t.Fatal(err)
	}
	if v := time.Until(d.Until()); v > 6*time.Second || v < 5*time.Second {
		t.Fatalf("validity %v with drift factor 0.4 of 10 s", v)
	}
	d.Unlock()
	// A bad policy is C's to refuse, with its reason.
	bad := c.NewMutex(name, redlock.WithDriftFactor(0.7))
	mustIs(t, bad.Lock(), redlock.ErrInvalid)
	t.Logf("bad drift: %v", bad.Lock())

	// Connections: 60 mutexes with policies of their own, each locked and
	// unlocked, open (almost) nothing beyond what the client has.
	before := connectedClients(t)
	for i := range 60 {
		m := c.NewMutex(lockName(t), redlock.WithTries(2+i%3), redlock.WithRetryDelay(time.Millisecond),
			redlock.WithExpiry(time.Duration(5+i)*time.Second))
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	if after := connectedClients(t); after > before+3 {
		t.Fatalf("node 0 had %d clients before 60 mutexes with their own options, %d after", before, after)
	}
}

// connectedClients is node 0's connected_clients.
func connectedClients(t *testing.T) int {
	t.Helper()
	info, err := rdbs[0].Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no connected_clients in INFO")
	return 0
}

// Options that C keeps per client are refused by NewMutex, naming
// NewClient, instead of opening a client per Mutex.
func TestMutexRefusesClientOptions(t *testing.T) {
	c := newClient(t)
	for _, o := range []struct {
		name string
		opt  redlock.Option
	}{
		{"WithKeyPrefix", redlock.WithKeyPrefix("p:")},
		{"WithFencing", redlock.WithFencing()},
		{"WithEventHandler", redlock.WithEventHandler(func(redlock.Event) {})},
		{"WithNodeTimeout", redlock.WithNodeTimeout(time.Second)},
		{"WithConnectTimeout", redlock.WithConnectTimeout(time.Second)},
		{"WithTimeoutFactor", redlock.WithTimeoutFactor(0.05)},
		{"WithMaxExtensions", redlock.WithMaxExtensions(3)},
		{"WithMaxHold", redlock.WithMaxHold(time.Minute)},
		{"WithFunctions", redlock.WithFunctions()},
		{"WithTLSServerName", redlock.WithTLSServerName("x")},
	} {
		m := c.NewMutex(lockName(t), o.opt)
		err := m.Lock()
		mustIs(t, err, redlock.ErrInvalid)
		if !strings.Contains(err.Error(), o.name) || !strings.Contains(err.Error(), "NewClient") {
			t.Fatalf("%s: %v", o.name, err)
		}
	}
}

// WithTimeoutFactor on NewClient: the node timeout is that fraction of the
// client's expiry; out of range is refused.
func TestTimeoutFactor(t *testing.T) {
	c, err := redlock.NewClient(nodeURLs, redlock.WithExpiry(10*time.Second), redlock.WithTimeoutFactor(0.05),
		redlock.WithQuarantine(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.NewMutex(lockName(t))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	m.Unlock()
	for _, f := range []float64{0, -1, 1} {
		_, err := redlock.NewClient(nodeURLs, redlock.WithTimeoutFactor(f))
		mustIs(t, err, redlock.ErrInvalid)
	}
}

// Close ends a WithRetryDelayFunc pause at once.
func TestCloseEndsDelayFuncPause(t *testing.T) {
	c := newClient(t, redlock.WithTries(1))
	name := lockName(t)
	holder := c.NewMutex(name)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	m := c.NewMutex(name, redlock.WithTries(3), redlock.WithRetryDelayFunc(func(int) time.Duration { return time.Hour }))
	errc := make(chan error, 1)
	go func() { errc <- m.Lock() }()
	time.Sleep(200 * time.Millisecond)
	c.Close()
	select {
	case err := <-errc:
		mustIs(t, err, redlock.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the pause")
	}
}
