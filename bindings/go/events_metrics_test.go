// SPDX-License-Identifier: BSD-3-Clause

// The events that metrics need (docs/observability.md): one EventAcquireDone
// per acquire call, the held time at the end of a hold, the nodes' round trips.

package redlock_test

import (
	"errors"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func TestEventsAcquireDoneHeldRTTs(t *testing.T) {
	rec := &recorder{}
	c := newClient(t, redlock.WithEventHandler(rec.handle))
	other := newClient(t)
	name := lockName(t)

	m := c.NewMutex(name)
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	evs := rec.take()
	done := only(evs, redlock.EventAcquireDone)
	if len(done) != 1 || done[0].Err != nil || done[0].Attempt != 1 || done[0].Resource != name || done[0].NodeRTTs != nil {
		t.Fatalf("acquire done after a Lock: %+v", done)
	}
	if s := redlock.EventAcquireDone.String(); s != "acquire done" {
		t.Fatalf("EventAcquireDone.String() = %q", s)
	}
	rel := only(evs, redlock.EventReleased)
	if len(rel) != 1 || rel[0].Held < 50*time.Millisecond {
		t.Fatalf("released: %+v", rel)
	}
	acq := only(evs, redlock.EventAcquired)
	if len(acq) != 1 || len(acq[0].NodeRTTs) != len(nodeURLs) {
		t.Fatalf("acquired: %+v", acq)
	}
	answered := 0
	for i, d := range acq[0].NodeRTTs {
		if d.URL != nodeURLs[i] {
			t.Fatalf("node %d: URL %q, want %q", i, d.URL, nodeURLs[i])
		}
		if d.RTT >= 0 {
			answered++
		}
	}
	if answered < quorum() { // a round decided at quorum waits for no more
		t.Fatalf("%d nodes with a round trip, want at least %d: %v", answered, quorum(), acq[0].NodeRTTs)
	}

	holder := other.NewMutex(name)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock()
	if err := c.NewMutex(name, redlock.WithTries(3), redlock.WithRetryDelay(time.Millisecond)).Lock(); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock while held elsewhere: %v", err)
	}
	done = only(rec.take(), redlock.EventAcquireDone)
	if len(done) != 1 || !errors.Is(done[0].Err, redlock.ErrNotAcquired) || done[0].Attempt != 3 {
		t.Fatalf("acquire done after three refused attempts: %+v", done)
	}
}
