// SPDX-License-Identifier: BSD-3-Clause

// Interoperation with go-redsync on the same nodes: both use SET NX PX on
// the bare name, so each one's lock blocks the other.

package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// newRedsync is redsync over the same nodes, with socket timeouts like the
// C client's defaults (50 ms per reply, 200 ms to connect) so the two are
// comparable in the benchmarks.
func newRedsync(t testing.TB) *redsync.Redsync {
	t.Helper()
	var pools []redsyncredis.Pool
	for _, u := range nodeURLs {
		opt, err := goredislib.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 200*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		opt.MaxRetries = -1
		cl := goredislib.NewClient(opt)
		t.Cleanup(func() { cl.Close() })
		pools = append(pools, goredis.NewPool(cl))
	}
	return redsync.New(pools...)
}

func TestInteropRedsyncBlocksUs(t *testing.T) {
	rs := newRedsync(t)
	name := lockName(t)
	theirs := rs.NewMutex(name, redsync.WithTries(1), redsync.WithExpiry(10*time.Second))
	if err := theirs.Lock(); err != nil {
		t.Fatal(err)
	}
	// redsync's key is the bare name, with its value.
	if holders(name) < quorum() || keyOn(0, name) != theirs.Value() {
		t.Fatalf("redsync's key %q not where expected", name)
	}
	c := newClient(t)
	ours := c.NewMutex(name)
	mustIs(t, ours.TryLock(), redlock.ErrNotAcquired)
	mustIs(t, ours.Lock(), redlock.ErrNotAcquired)
	if ok, err := theirs.Unlock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := ours.TryLock(); err != nil {
		t.Fatalf("after redsync unlocked: %v", err)
	}
	if _, err := ours.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestInteropWeBlockRedsync(t *testing.T) {
	rs := newRedsync(t)
	name := lockName(t)
	c := newClient(t)
	ours := c.NewMutex(name, redlock.WithExpiry(10*time.Second))
	if err := ours.Lock(); err != nil {
		t.Fatal(err)
	}
	theirs := rs.NewMutex(name, redsync.WithTries(1))
	err := theirs.TryLock()
	var taken *redsync.ErrTaken
	if err == nil || !(errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken)) {
		t.Fatalf("redsync TryLock while we hold it: %v", err)
	}
	// redsync must not be able to release or extend our lock either.
	if ok, _ := theirs.Unlock(); ok {
		t.Fatal("redsync released our lock")
	}
	if holders(name) < quorum() {
		t.Fatal("our key disappeared")
	}
	if _, err := ours.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := theirs.TryLock(); err != nil {
		t.Fatalf("redsync after we unlocked: %v", err)
	}
	// ...and we cannot release theirs.
	mustIs(t, unlockErr(ours), redlock.ErrState)
	if ok, err := theirs.Unlock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
}
