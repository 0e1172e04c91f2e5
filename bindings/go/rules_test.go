// SPDX-License-Identifier: BSD-3-Clause

// The rules the binding reads from C instead of copying them: why a name is
// refused, and waits paced by WithRetryDelayFunc that a release still wakes.

package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// NewMutex says what C says about a refused name, the fencing counter's
// suffix among them.
func TestNewMutexSaysWhyANameIsRefused(t *testing.T) {
	c := newClient(t, redlock.WithFencing())
	err := c.NewMutex("orders:fencing").Lock()
	mustIs(t, err, redlock.ErrInvalid)
	if !strings.Contains(err.Error(), ":fencing") {
		t.Fatalf("the error does not say why: %v", err)
	}
	err = c.NewMutex("").Lock()
	mustIs(t, err, redlock.ErrInvalid)
	if !strings.Contains(err.Error(), "empty") {
		t.Fatalf("the error does not say why: %v", err)
	}
	err = c.NewMutex(strings.Repeat("n", 4097)).Lock()
	mustIs(t, err, redlock.ErrInvalid)
	if !strings.Contains(err.Error(), "4096") {
		t.Fatalf("the error does not say why: %v", err)
	}
	// Without fencing the same name is an ordinary one.
	plain := newClient(t)
	m := plain.NewMutex(lockName(t) + ":fencing")
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// A waiter whose delay function asks for an hour's pause is woken by the
// holder's release and takes the lock, instead of sleeping the hour out.
func TestDelayFuncPauseIsWokenByARelease(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	holder := c.NewMutex(name, redlock.WithExpiry(30*time.Second))
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	calls := make(chan int, 8)
	waiter := c.NewMutex(name, redlock.WithExpiry(30*time.Second), redlock.WithTries(3), redlock.WithWake(true),
		redlock.WithRetryDelayFunc(func(n int) time.Duration { calls <- n; return time.Hour }))
	errc := make(chan error, 1)
	go func() { errc <- waiter.Lock() }()
	// The first attempt was refused once the first pause was asked for.
	select {
	case n := <-calls:
		if n != 1 {
			t.Fatalf("first pause asked with %d", n)
		}
	case <-time.After(30 * time.Second): // only keeps a hung test finite
		t.Fatal("the waiter never paused")
	}
	if _, err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("the woken waiter did not get the lock: %v", err)
		}
	case <-time.After(60 * time.Second): // an hour's pause not cut short would end here
		t.Fatal("the release did not end the pause")
	}
	if len(calls) != 0 {
		t.Fatalf("a second pause was asked for (%d): the waiter was not woken", <-calls)
	}
	if _, err := waiter.UnlockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
}
