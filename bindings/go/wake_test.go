// SPDX-License-Identifier: BSD-3-Clause

// Wake-up and fair mode: WithWake and WithFair reach the C lock handle (per
// client and per Mutex), a waiting Lock is woken by the holder's Unlock, the
// listeners' states and the EventWoken / EventListener events.

package redlock_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// slowRetry makes a waiter's next poll far away, so that only a wake-up
// gets it the lock soon: a broken wake-up shows as a missing EventWoken.
// Wake-up is opt-in.
var slowRetry = []redlock.Option{redlock.WithRetryDelay(20 * time.Second), redlock.WithRetryJitter(0),
	redlock.WithWake(true)}

func allReady(c *redlock.Client) bool {
	ls := c.Listeners()
	return len(ls) == len(nodeURLs) && !slices.ContainsFunc(ls, func(l redlock.Listener) bool {
		return l.State != redlock.ListenerReady
	})
}

// waitUntil polls cond; the bound only stops a hung test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWakeOptions(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	check := func(m *redlock.Mutex, wantWake, wantFair bool) {
		t.Helper()
		if wake, fair := redlock.WaitFlags(m); wake != wantWake || fair != wantFair {
			t.Fatalf("%v: wake %v fair %v, want %v %v", m, wake, fair, wantWake, wantFair)
		}
	}
	check(c.NewMutex(name), false, false) // polling by default
	m := c.NewMutex(name, redlock.WithWake(true), redlock.WithFair(true), redlock.WithTries(2))
	check(m, true, true)
	if err := m.TryLock(); err != nil { // a policy option, not refused as a client one
		t.Fatal(err)
	}
	m.Unlock()

	cf := newClient(t, redlock.WithWake(false), redlock.WithFair(true))
	check(cf.NewMutex(name), true, true) // fair implies wake-up: C's redlock_flags_wake
	check(cf.NewMutex(name, redlock.WithWake(true)), true, true)
	check(cf.NewMutex(name, redlock.WithFair(false)), false, false)
	check(cf.NewMutex(name, redlock.WithWake(true), redlock.WithFair(false)), true, false)

	// Before any waiting Lock, no listener; bad indexes and a closed client say so.
	ls := c.Listeners()
	if len(ls) != len(nodeURLs) {
		t.Fatalf("%d listeners for %d nodes", len(ls), len(nodeURLs))
	}
	for i, l := range ls {
		if l.State != redlock.ListenerOff || l.Detail != "" || l.URL != nodeURLs[i] {
			t.Fatalf("listener %d before any wait: %+v", i, l)
		}
	}
	for _, i := range []int{-1, len(nodeURLs)} {
		if st, detail := c.ListenerState(i); st != redlock.ListenerOff || !strings.Contains(detail, "out of range") {
			t.Fatalf("ListenerState(%d) = %v, %q", i, st, detail)
		}
	}
	if s := redlock.ListenerRefused.String(); s != "refused" {
		t.Fatalf("ListenerRefused.String() = %q", s)
	}
	if s := redlock.EventWoken.String(); s != "woken" {
		t.Fatalf("EventWoken.String() = %q", s)
	}
	c2, err := redlock.NewClient(nodeURLs)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if ls := c2.Listeners(); ls != nil {
		t.Fatalf("Listeners after Close: %+v", ls)
	}
	if st, detail := c2.ListenerState(0); st != redlock.ListenerOff || detail != "client closed" {
		t.Fatalf("ListenerState after Close = %v, %q", st, detail)
	}
}

func TestWakeWokenByUnlock(t *testing.T) {
	var rec recorder
	holderClient := newClient(t)
	c := newClient(t, slices.Concat(slowRetry, []redlock.Option{redlock.WithEventHandler(rec.handle)})...)
	name := lockName(t)
	holder := holderClient.NewMutex(name, redlock.WithExpiry(30*time.Second))
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	// A one-attempt Lock does not wait, so it opens no listener.
	mustIs(t, c.NewMutex(name).TryLock(), redlock.ErrNotAcquired)
	if l := c.Listeners(); l[0].State != redlock.ListenerOff {
		t.Fatalf("listener after TryLock: %+v", l[0])
	}
	rec.take()

	waiter := c.NewMutex(name, redlock.WithExpiry(10*time.Second))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- waiter.LockContext(ctx)
	}()
	var seen []redlock.Event
	waitUntil(t, "the waiter's listeners and first attempt", func() bool {
		seen = append(seen, rec.take()...)
		return allReady(c) && len(only(seen, redlock.EventAcquireFailed)) > 0
	})
	if _, err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("woken LockContext: %v", err)
	}
	defer waiter.Unlock()
	seen = append(seen, rec.take()...)
	woken := only(seen, redlock.EventWoken)
	if len(woken) == 0 {
		t.Fatalf("no EventWoken; saw %+v", seen)
	}
	if w := woken[0]; w.Resource != name || w.NodeURL != nodeURLs[w.Node] {
		t.Fatalf("EventWoken %+v", w)
	}
	var ready []int
	for _, e := range only(seen, redlock.EventListener) {
		if e.Resource != name || e.NodeURL != nodeURLs[e.Node] { // told to the waiting Lock
			t.Fatalf("EventListener %+v", e)
		}
		if e.ListenerState == redlock.ListenerReady {
			ready = append(ready, e.Node)
		}
	}
	slices.Sort(ready)
	if len(ready) != len(nodeURLs) || ready[0] != 0 || ready[len(ready)-1] != len(nodeURLs)-1 {
		t.Fatalf("ListenerReady events for nodes %v", ready)
	}
	if !allReady(c) { // kept for the client's next waits
		t.Fatalf("listeners after the wait: %+v", c.Listeners())
	}
}

func TestWakeOffPolls(t *testing.T) {
	var rec recorder
	holderClient := newClient(t)
	c := newClient(t, redlock.WithWake(false), redlock.WithRetryDelay(10*time.Millisecond),
		redlock.WithEventHandler(rec.handle))
	name := lockName(t)
	holder := holderClient.NewMutex(name, redlock.WithExpiry(30*time.Second))
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	waiter := c.NewMutex(name)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- waiter.LockContext(ctx)
	}()
	rec.wait(t, "second failed attempt", func(e redlock.Event) bool {
		return e.Type == redlock.EventAcquireFailed && e.Attempt >= 2
	})
	if _, err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("polling LockContext: %v", err)
	}
	waiter.Unlock()
	evs := rec.take()
	if len(only(evs, redlock.EventWoken)) > 0 || len(only(evs, redlock.EventListener)) > 0 {
		t.Fatalf("wake-up events with WithWake(false): %+v", evs)
	}
	for _, l := range c.Listeners() {
		if l.State != redlock.ListenerOff {
			t.Fatalf("listener with WithWake(false): %+v", l)
		}
	}
}

func TestFairServesArrivalOrder(t *testing.T) {
	holderClient := newClient(t, redlock.WithFair(true))
	name := lockName(t)
	holder := holderClient.NewMutex(name, redlock.WithExpiry(30*time.Second))
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	recs := make([]*recorder, 2)
	for i := range recs {
		recs[i] = &recorder{}
		c := newClient(t, slices.Concat(slowRetry, []redlock.Option{
			redlock.WithFair(true), redlock.WithEventHandler(recs[i].handle)})...)
		m := c.NewMutex(name, redlock.WithExpiry(10*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := m.LockContext(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			m.Unlock()
		}()
		// Waiter 0 is queued before waiter 1 starts.
		recs[i].wait(t, "first failed attempt", func(e redlock.Event) bool { return e.Type == redlock.EventAcquireFailed })
		waitUntil(t, "the waiter's listeners", func() bool { return allReady(c) })
	}
	if _, err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !slices.Equal(order, []int{0, 1}) {
		t.Fatalf("fair waiters got the lock in the order %v", order)
	}
}
