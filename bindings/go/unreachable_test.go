// SPDX-License-Identifier: BSD-3-Clause

// Nodes that cannot be reached end a wait with ErrUnreachable: ports nothing
// listens on, host names that do not resolve. A busy lock still waits.

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// guard bounds the waits that must end by themselves: reaching it fails the
// test with ErrTimeout (no wall-clock threshold is asserted).
const guard = 60 * time.Second

// closedPorts are loopback URLs nothing listens on: each port bound once, then closed.
func closedPorts(t *testing.T, n int) []string {
	t.Helper()
	var urls []string
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, fmt.Sprintf("redis://%s", l.Addr()))
		l.Close()
	}
	return urls
}

func clientOf(t *testing.T, urls []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.NewClient(urls, opts...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestUnreachablePorts(t *testing.T) {
	urls := closedPorts(t, 3)
	c := clientOf(t, urls)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	err := c.NewMutex("x").LockContext(ctx)
	mustIs(t, err, redlock.ErrUnreachable, redlock.ErrFailed)
	if errors.Is(err, redlock.ErrTimeout) {
		t.Fatalf("the wait ran to its guard: %v", err)
	}
	for _, u := range urls {
		if !strings.Contains(err.Error(), strings.TrimPrefix(u, "redis://")) {
			t.Errorf("%q is not named in %v", u, err)
		}
	}
	if !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("what the nodes said is missing: %v", err)
	}
	var e *redlock.Error
	if !errors.As(err, &e) || e.Name() != "REDLOCK_EUNREACHABLE" {
		t.Errorf("want an *Error named REDLOCK_EUNREACHABLE, got %#v", err)
	}
	// Lock, as go-redsync code calls it: its 32 tries, 50 ms apart at least,
	// outlast the default bound (five connect timeouts, 1 s).
	mustIs(t, c.NewMutex("x").Lock(), redlock.ErrUnreachable)
	// One attempt is not a wait: ErrNoQuorum, with the same detail.
	err = c.NewMutex("x").TryLock()
	mustIs(t, err, redlock.ErrNoQuorum, redlock.ErrFailed)
	if !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("TryLock's detail does not say why: %v", err)
	}
}

func TestUnreachableNames(t *testing.T) {
	urls := []string{"redis://no-such-host.invalid:6379", "redis://also-no-such-host.invalid:6379",
		"redis://third-no-such-host.invalid:6379"}
	c := clientOf(t, urls) // names are resolved when connecting
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	err := c.NewMutex("x").LockContext(ctx)
	mustIs(t, err, redlock.ErrUnreachable)
	for _, u := range urls {
		if !strings.Contains(err.Error(), strings.TrimPrefix(u, "redis://")) {
			t.Errorf("%q is not named in %v", u, err)
		}
	}
}

func TestUnreachableBusyLockStillWaits(t *testing.T) {
	name := lockName(t)
	holder := newClient(t)
	held := holder.NewMutex(name, redlock.WithExpiry(30*time.Second))
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	// The tightest bound: every node answers, so it never applies.
	waiter := newClient(t, redlock.WithUnreachableTimeout(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := waiter.NewMutex(name).LockContext(ctx)
	mustIs(t, err, redlock.ErrTimeout, context.DeadlineExceeded)
	if errors.Is(err, redlock.ErrUnreachable) {
		t.Fatalf("a busy lock counted as unreachable: %v", err)
	}
}

func TestUnreachableNegativeWaitsOn(t *testing.T) {
	c := clientOf(t, closedPorts(t, 3), redlock.WithUnreachableTimeout(-1))
	// Longer than the default bound (1 s): only the context ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	err := c.NewMutex("x").LockContext(ctx)
	mustIs(t, err, redlock.ErrTimeout, context.DeadlineExceeded)
	if errors.Is(err, redlock.ErrUnreachable) {
		t.Fatalf("want the wait to go on: %v", err)
	}
}

func TestUnreachableTimeoutOption(t *testing.T) {
	_, err := redlock.NewClient(nodeURLs, redlock.WithUnreachableTimeout(8*24*time.Hour))
	mustIs(t, err, redlock.ErrInvalid)
	if !strings.Contains(err.Error(), "WithUnreachableTimeout") {
		t.Errorf("the error does not name the option: %v", err)
	}
	// A client-level setting: a Mutex given it says so.
	m := newClient(t).NewMutex(lockName(t), redlock.WithUnreachableTimeout(time.Second))
	mustIs(t, m.TryLock(), redlock.ErrInvalid)
	// An explicit bound ends a wait on closed ports as the default does.
	c := clientOf(t, closedPorts(t, 3), redlock.WithUnreachableTimeout(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	mustIs(t, c.NewMutex("x").LockContext(ctx), redlock.ErrUnreachable)
}

// WithQuarantineTTL reaches C's quarantine_ttl_ms, which C bounds by a day.
func TestQuarantineTTLOption(t *testing.T) {
	_, err := redlock.NewClient(nodeURLs, redlock.WithQuarantineTTL(25*time.Hour))
	mustIs(t, err, redlock.ErrInvalid)
	if !strings.Contains(err.Error(), "quarantine_ttl_ms") {
		t.Errorf("the error does not name the option: %v", err)
	}
	c := newClient(t, redlock.WithQuarantineTTL(30*time.Second))
	m := c.NewMutex(lockName(t))
	if err := m.TryLock(); err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}
