// SPDX-License-Identifier: BSD-3-Clause

// Election on real nodes: campaign, proclaim, resign and hand-over, Leader,
// Observe in order, Campaign cancelled by its context.

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
