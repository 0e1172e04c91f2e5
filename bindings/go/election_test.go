// SPDX-License-Identifier: BSD-3-Clause

// Election on real nodes: campaign, proclaim, resign and hand-over, Leader,
// Observe in order and ended by its context's deadline or cancel, by Close
// and by the client's Close, Campaign cancelled by its context.

package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// twoElections is the test's election under two candidates, each on a
// client of its own, closed when the test ends.
func twoElections(t *testing.T) (a, b *redlock.Election) {
	t.Helper()
	name := lockName(t)
	open := func() *redlock.Election {
		e, err := newClient(t).NewElection(name, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	return open(), open()
}

func TestElectionCampaignProclaimResign(t *testing.T) {
	a, b := twoElections(t)
	ctx := context.Background()
	if _, err := b.Leader(ctx); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v", err)
	}
	if err := a.Campaign(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	term := a.Term()
	if l, err := b.Leader(ctx); err != nil || l != (redlock.Leader{Present: true, Term: term, Revision: 1, Value: "alpha"}) {
		t.Fatalf("Leader = %+v, %v", l, err)
	}
	if err := b.Proclaim("beta"); !errors.Is(err, redlock.ErrState) {
		t.Fatalf("Proclaim by a non-leader: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := b.Campaign(short, "beta"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Campaign while alpha leads: %v", err)
	}
	if err := a.Proclaim("alpha-2"); err != nil {
		t.Fatal(err)
	}
	if l, _ := b.Leader(ctx); l.Value != "alpha-2" || l.Revision != 2 {
		t.Fatalf("after Proclaim: %+v", l)
	}
	done := make(chan error, 1)
	go func() { done <- b.Campaign(ctx, "beta") }()
	time.Sleep(50 * time.Millisecond)
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Term() <= term || !b.IsLeader() || a.IsLeader() {
		t.Fatalf("terms %d then %d", term, b.Term())
	}
	if err := a.Resign(ctx); err != nil { // not leading: no error, as etcd's
		t.Fatal(err)
	}
	b.Resign(ctx)
}

func TestElectionObserve(t *testing.T) {
	a, w := twoElections(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := w.Observe(ctx)
	next := func() redlock.Leader {
		select {
		case l := <-ch:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no change observed")
		}
		return redlock.Leader{}
	}
	if l := next(); l.Present {
		t.Fatalf("first state %+v", l)
	}
	a.Campaign(ctx, "v1")
	if l := next(); l.Value != "v1" || l.Term != a.Term() || l.Revision != 1 {
		t.Fatalf("%+v", l)
	}
	a.Proclaim("v2")
	if l := next(); l.Value != "v2" || l.Revision != 2 {
		t.Fatalf("%+v", l)
	}
	term := a.Term()
	a.Resign(ctx)
	if l := next(); l.Present || l.Term != term {
		t.Fatalf("%+v", l)
	}
	cancel()
	for range ch { // closed once ctx is done
	}
}

func TestElectionCampaignCanceled(t *testing.T) {
	a, b := twoElections(t)
	a.Campaign(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if err := b.Campaign(ctx, "b"); !errors.Is(err, redlock.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Campaign: %v", err)
	}
	if _, err := newClient(t).NewElection("", time.Second); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
	a.Resign(context.Background())
}

// lateTimer is a context whose deadline C's wait takes as wait_ms, but
// whose own timer never fires: the moment when C's wait has run out and
// ctx's timer has not yet, held for as long as the test needs.
type lateTimer struct {
	context.Context
	dl time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.dl, true }

func TestElectionCampaignDeadlineBeforeCtxTimer(t *testing.T) {
	a, b := twoElections(t)
	if err := a.Campaign(context.Background(), "alpha"); err != nil {
		t.Fatal(err)
	}
	ctx := lateTimer{context.Background(), time.Now().Add(150 * time.Millisecond)}
	err := b.Campaign(ctx, "beta")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, redlock.ErrTimeout) {
		t.Fatalf("Campaign past its deadline, ctx's timer not yet fired: %v", err)
	}
	if ctx.Err() != nil || b.IsLeader() {
		t.Fatalf("ctx.Err() = %v, IsLeader %v", ctx.Err(), b.IsLeader())
	}
	if err := a.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// observeMargin is how much later than asked an ended Observe may close its
// channel, on a loaded machine.
const observeMargin = 500 * time.Millisecond

// drain reads ch until it is closed, failing the test after limit; it
// returns what it read and when the channel was closed.
func drain(t *testing.T, ch <-chan redlock.Leader, limit time.Duration) ([]redlock.Leader, time.Time) {
	t.Helper()
	var seen []redlock.Leader
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				return seen, time.Now()
			}
			seen = append(seen, l)
		case <-deadline:
			t.Fatalf("Observe's channel still open after %v (read %+v)", limit, seen)
		}
	}
}

func TestElectionObserveDeadlineEndsTheLoop(t *testing.T) {
	_, w := twoElections(t)
	const wait = 400 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	seen, closed := drain(t, w.Observe(ctx), 10*time.Second)
	if len(seen) != 1 || seen[0].Present { // the current state (none), then no change
		t.Fatalf("seen %+v", seen)
	}
	if d := closed.Sub(start); d < wait-10*time.Millisecond || d > wait+observeMargin {
		t.Fatalf("the channel closed after %v, the deadline was %v", d, wait)
	}
}

func TestElectionObserveCancelFromAnotherGoroutine(t *testing.T) {
	_, w := twoElections(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := w.Observe(ctx)
	if l := <-ch; l.Present {
		t.Fatalf("first state %+v", l)
	}
	cancelled := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // Observe is in C's wait by now
		cancelled <- time.Now()
		cancel()
	}()
	seen, closed := drain(t, ch, 10*time.Second)
	// Prompt: C's wait is cancelled, not left to run out its 500 ms slice.
	if d := closed.Sub(<-cancelled); len(seen) != 0 || d > 250*time.Millisecond {
		t.Fatalf("closed %v after cancel (read %+v)", d, seen)
	}
}

func TestElectionObserveEndsOnClose(t *testing.T) {
	a, w := twoElections(t)
	ch := w.Observe(context.Background())
	if l := <-ch; l.Present {
		t.Fatalf("first state %+v", l)
	}
	if err := a.Campaign(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	// A change this consumer does not read: Close ends the goroutine
	// blocked on sending it too.
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	w.Close()
	seen, closed := drain(t, ch, 10*time.Second)
	if d := closed.Sub(start); d > 250*time.Millisecond || len(seen) > 1 {
		t.Fatalf("closed %v after Close, read %+v", d, seen)
	}
	// An Observe after Close: a closed channel at once.
	if _, ok := <-w.Observe(context.Background()); ok {
		t.Fatal("Observe after Close sent a state")
	}
	a.Resign(context.Background())
}

func TestElectionObserveEndsOnClientClose(t *testing.T) {
	c := newClient(t)
	e, err := c.NewElection(lockName(t), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ch := e.Observe(context.Background())
	<-ch
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	c.Close()
	if _, closed := drain(t, ch, 10*time.Second); closed.Sub(start) > 250*time.Millisecond {
		t.Fatalf("closed %v after the client's Close", closed.Sub(start))
	}
}
