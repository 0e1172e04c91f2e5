// SPDX-License-Identifier: BSD-3-Clause

package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// At most limit permits: the next TryAcquire fails, an Acquire waits until
// ctx ends it, and a Release lets it in.
func TestSemaphoreLimit(t *testing.T) {
	a, b := newClient(t), newClient(t)
	name := lockName(t)
	s1, s2 := a.NewSemaphore(name, 2), b.NewSemaphore(name, 2)
	if !s1.TryAcquire(1) || !s2.TryAcquire(1) {
		t.Fatalf("two permits of two not granted: %v", s1.TryAcquireErr(1))
	}
	if err := s1.TryAcquireErr(1); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("third permit: %v, want ErrNotAcquired", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s1.Acquire(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a full semaphore: %v, want DeadlineExceeded", err)
	}
	if s1.Held() != 1 || s2.Held() != 1 {
		t.Fatalf("held %d and %d, want 1 and 1", s1.Held(), s2.Held())
	}
	s2.Release(1)
	if err := s1.Acquire(context.Background(), 1); err != nil {
		t.Fatalf("Acquire after a release: %v", err)
	}
	if s1.Held() != 2 || len(s1.Permits()) != 2 || s1.Permits()[0].Until().IsZero() {
		t.Fatalf("held %d, permits %v", s1.Held(), s1.Permits())
	}
	if err := s1.ReleaseErr(2); err != nil {
		t.Fatal(err)
	}
}

// A release on another client wakes a waiting Acquire (a 15 s retry delay
// leaves the wake-up as the only quick way in).
func TestSemaphoreReleaseWakes(t *testing.T) {
	a := newClient(t)
	b := newClient(t, redlock.WithRetryDelay(15*time.Second), redlock.WithRetryJitter(0), redlock.WithWake(true))
	name := lockName(t)
	holder := a.NewSemaphore(name, 1, redlock.WithExpiry(30*time.Second))
	waiter := b.NewSemaphore(name, 1, redlock.WithExpiry(30*time.Second))
	if err := holder.TryAcquireErr(1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- waiter.Acquire(ctx, 1)
	}()
	// The waiter is registered in the queue on every node before the release:
	// a release that comes first finds nobody to wake.
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		registered := 0
		for i := range rdbs {
			if n, err := rdbs[i].ZCard(context.Background(), name+":wq").Result(); err == nil && n >= 1 {
				registered++
			}
		}
		ready := 0
		for i := range nodeURLs {
			if st, _ := b.ListenerState(i); st == redlock.ListenerReady {
				ready++
			}
		}
		if registered == len(rdbs) && ready == len(nodeURLs) {
			break
		}
	}
	start = time.Now()
	holder.Release(1)
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the waiter took %v: it polled instead of being woken", d)
	}
	waiter.Release(1)
}

func TestSemaphoreLimitMismatch(t *testing.T) {
	a, b := newClient(t), newClient(t)
	name := lockName(t)
	three, two := a.NewSemaphore(name, 3), b.NewSemaphore(name, 2)
	if err := three.TryAcquireErr(1); err != nil {
		t.Fatal(err)
	}
	err := two.TryAcquireErr(1)
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "limit of 3") ||
		!strings.Contains(err.Error(), "not 2") {
		t.Fatalf("another limit: %v, want ErrInvalid naming 3 and 2", err)
	}
	three.Release(1)
	if err := two.TryAcquireErr(1); err != nil {
		t.Fatalf("with no permit held, the new limit should replace the old: %v", err)
	}
	two.Release(1)
}

func TestSemaphoreWeighted(t *testing.T) {
	c := newClient(t)
	s := c.NewSemaphore(lockName(t), 5)
	if err := s.Acquire(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if s.TryAcquire(3) {
		t.Fatal("3 more of 5 granted with 3 held")
	}
	if !s.TryAcquire(2) || s.Held() != 5 {
		t.Fatalf("2 of the 2 left not granted (held %d)", s.Held())
	}
	if err := s.ReleaseErr(1); err == nil {
		t.Fatal("releasing 1 of an acquisition of 2 should fail")
	}
	if err := s.ReleaseErr(5); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Release of more than held did not panic")
		}
	}()
	s.Release(1)
}

func TestSemaphoreBadInput(t *testing.T) {
	c := newClient(t)
	for _, lim := range []int64{0, -1, 1001} {
		if err := c.NewSemaphore("x", lim).TryAcquireErr(1); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("limit %d: %v, want ErrInvalid", lim, err)
		}
	}
	s := c.NewSemaphore(lockName(t), 2)
	for _, n := range []int64{0, 3} {
		if err := s.Acquire(context.Background(), n); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("n %d: %v, want ErrInvalid", n, err)
		}
	}
	if err := c.NewSemaphore("", 2).TryAcquireErr(1); !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("empty name: %v", err)
	}
}
