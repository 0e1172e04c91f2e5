// SPDX-License-Identifier: BSD-3-Clause

// The per-node report (Mutex.Nodes) and the metrics hook (WithEventHandler)
// against real nodes, healthy and with one node killed.

package redlock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func TestNodesReport(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name)
	rs := m.Nodes()
	if len(rs) != len(nodeURLs) {
		t.Fatalf("%d results for %d nodes", len(rs), len(nodeURLs))
	}
	for i, r := range rs {
		if r.URL != nodeURLs[i] || r.Outcome != redlock.NodeNone || r.Err != nil || r.RTT != 0 {
			t.Fatalf("node %d before any round: %+v", i, r)
		}
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"Lock", m.Lock},
		{"Extend", func() error { _, err := m.Extend(); return err }},
		{"Unlock", func() error { return unlockErr(m) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		ok := 0
		for i, r := range m.Nodes() {
			switch {
			case r.URL != nodeURLs[i] || r.Err != nil:
				t.Fatalf("after %s, node %d: %+v", s.name, i, r)
			case r.Outcome == redlock.NodeOK:
				ok++
				if r.Message != "" || r.RTT <= 0 {
					t.Fatalf("after %s, node %d: %+v", s.name, i, r)
				}
			case r.Outcome == redlock.NodeNotWaited:
				// Every round is decided once a majority agrees; a node
				// slower than that (one just restarted by another test) is
				// not waited for, and its reply is read later.
			default:
				t.Fatalf("after %s, node %d: %+v", s.name, i, r)
			}
		}
		if ok < quorum() {
			t.Fatalf("after %s, %d nodes OK: %+v", s.name, ok, m.Nodes())
		}
	}

	// Held elsewhere: the nodes refuse, and say why.
	other := c.NewMutex(name)
	if err := other.Lock(); err != nil {
		t.Fatal(err)
	}
	defer other.Unlock()
	mustIs(t, m.TryLock(), redlock.ErrNotAcquired)
	refused := 0
	for _, r := range m.Nodes() {
		if r.Outcome == redlock.NodeRefused {
			refused++
			if r.Message == "" {
				t.Fatalf("refused without a message: %+v", r)
			}
		}
	}
	if refused < quorum() {
		t.Fatalf("%d nodes refused, want at least %d: %+v", refused, quorum(), m.Nodes())
	}
	if s := redlock.NodeRefused.String(); s != "refused" {
		t.Fatalf("NodeRefused.String() = %q", s)
	}
}

func TestNodesReportNodeKilled(t *testing.T) {
	if len(nodeURLs) < 3 {
		t.Skip("needs at least 3 nodes")
	}
	dead := len(nodeURLs) - 1
	fault(t, "kill", dead)
	c := newClient(t)
	m := c.NewMutex(lockName(t))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	// Decided at quorum, the acquire may not have waited for the dead node.
	if r := m.Nodes()[dead]; r.Outcome != redlock.NodeError && r.Outcome != redlock.NodeNotWaited {
		t.Fatalf("dead node after Lock: %+v", r)
	}
	// A refused connection fails at once, before the release is decided.
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	rs := m.Nodes()
	r := rs[dead]
	if r.Outcome != redlock.NodeError && r.Outcome != redlock.NodeDown {
		t.Fatalf("dead node after Unlock: %+v", r)
	}
	mustIs(t, r.Err, redlock.ErrIO)
	if r.Message == "" || r.URL != nodeURLs[dead] {
		t.Fatalf("dead node after Unlock: %+v", r)
	}
	t.Logf("dead node: %v %v %q", r.Outcome, r.Err, r.Message)
	ok := 0
	for i, r := range rs[:dead] {
		switch {
		case r.Outcome == redlock.NodeOK && r.RTT > 0:
			ok++
		case r.Outcome == redlock.NodeNotWaited: // decided at quorum without it
		default:
			t.Fatalf("live node %d after Unlock: %+v", i, r)
		}
	}
	if ok < quorum() {
		t.Fatalf("%d live nodes confirmed the release: %+v", ok, rs)
	}
}

// recorder collects events; the handler runs on the caller's goroutine or
// on the library's thread.
type recorder struct {
	mu  sync.Mutex
	evs []redlock.Event
}

func (r *recorder) handle(e redlock.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

// take returns the events so far and forgets them.
func (r *recorder) take() []redlock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs = nil
	return out
}

// wait returns the events once one of them matches ok, failing after a
// generous bound.
func (r *recorder) wait(t *testing.T, what string, ok func(redlock.Event) bool) []redlock.Event {
	t.Helper()
	var seen []redlock.Event
	deadline := time.Now().Add(20 * time.Second)
	for {
		seen = append(seen, r.take()...)
		if slices.ContainsFunc(seen, ok) {
			return seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event; saw %+v", what, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func only(evs []redlock.Event, typ redlock.EventType) []redlock.Event {
	var out []redlock.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestEvents(t *testing.T) {
	rec := &recorder{}
	c := newClient(t, redlock.WithFencing(), redlock.WithEventHandler(rec.handle))
	name := lockName(t)
	m := c.NewMutex(name, redlock.WithExpiry(shortTTL))

	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	acq := only(rec.take(), redlock.EventAcquired)
	if len(acq) != 1 {
		t.Fatalf("%d acquired events for one Lock", len(acq))
	}
	if e := acq[0]; e.Resource != name || e.Err != nil || e.Attempt != 1 || e.Automatic ||
		e.NodesOK < e.Quorum || e.Quorum != quorum() || e.NodeCount != len(nodeURLs) ||
		e.Validity <= 0 || e.Validity > shortTTL || e.Token == 0 || e.Token != m.Token() || e.Elapsed <= 0 {
		t.Fatalf("acquired event: %+v (token %d)", e, m.Token())
	}
	if s := redlock.EventAcquired.String(); s != "acquired" {
		t.Fatalf("EventAcquired.String() = %q", s)
	}

	// Contended: a failed attempt, with its reason.
	mustIs(t, c.NewMutex(name).TryLock(), redlock.ErrNotAcquired)
	failed := only(rec.take(), redlock.EventAcquireFailed)
	if len(failed) != 1 || !errors.Is(failed[0].Err, redlock.ErrNotAcquired) || failed[0].Attempt != 1 {
		t.Fatalf("acquire failed events: %+v", failed)
	}

	if ok, err := m.Extend(); !ok {
		t.Fatal(err)
	}
	ext := only(rec.take(), redlock.EventExtended)
	if len(ext) != 1 || ext[0].Automatic || ext[0].Validity <= 0 {
		t.Fatalf("extended events after Extend: %+v", ext)
	}

	// Extensions by the auto-extension's thread are marked Automatic.
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "automatic extended", func(e redlock.Event) bool {
		return e.Type == redlock.EventExtended && e.Automatic && e.Resource == name
	})

	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	rel := only(rec.take(), redlock.EventReleased)
	if len(rel) != 1 || rel[0].Err != nil || rel[0].NodesOK < quorum() {
		t.Fatalf("released events: %+v", rel)
	}

	// A loss found by the auto-extension.
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	rec.take()
	for _, r := range rdbs {
		r.Del(context.Background(), name)
	}
	evs := rec.wait(t, "lost", func(e redlock.Event) bool { return e.Type == redlock.EventLost })
	lost := only(evs, redlock.EventLost)
	if len(lost) != 1 || !errors.Is(lost[0].Err, redlock.ErrLost) || !lost[0].Automatic || lost[0].Resource != name {
		t.Fatalf("lost events: %+v", lost)
	}
	mustIs(t, unlockErr(m), redlock.ErrLost)
	if n := len(only(rec.take(), redlock.EventNodeError)); n != 0 {
		t.Fatalf("%d node errors with every node up", n)
	}
}

func TestEventsNodeError(t *testing.T) {
	if len(nodeURLs) < 3 {
		t.Skip("needs at least 3 nodes")
	}
	dead := len(nodeURLs) - 1
	fault(t, "kill", dead)
	rec := &recorder{}
	c := newClient(t, redlock.WithEventHandler(rec.handle))
	m := c.NewMutex(lockName(t))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	errs := only(rec.take(), redlock.EventNodeError)
	if len(errs) == 0 {
		t.Fatal("no node error event with a node killed")
	}
	for _, e := range errs {
		if e.Node != dead || e.NodeURL != nodeURLs[dead] || !errors.Is(e.Err, redlock.ErrIO) ||
			(e.NodeOutcome != redlock.NodeError && e.NodeOutcome != redlock.NodeDown) || e.Message == "" {
			t.Fatalf("node error event: %+v", e)
		}
	}
	t.Logf("node error: %+v", errs[0])
}

// C lets a handler go (its cgo.Handle deleted) once the C client it was
// given to and that client's last lock are freed, and not before: the
// client's handler goes with the closed Client.
func TestEventHandlersLetGo(t *testing.T) {
	var n atomic.Int32
	count := func(e redlock.Event) {
		if e.Type != redlock.EventNodeError { // a slow node on a loaded machine may add some
			n.Add(1)
		}
	}
	clientFn, clientGone := witnessed(count)
	c, err := redlock.NewClient(nodeURLs, testOpts(redlock.WithEventHandler(clientFn))...)
	if err != nil {
		t.Fatal(err)
	}
	clientFn = nil
	shared := c.NewMutex(lockName(t)) // on the client's C client
	if err := shared.Lock(); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("%d events in all, want 3 (acquired, acquire done, released)", got)
	}
	c.Close()
	c, shared = nil, nil
	if !collected(clientGone, 500) {
		t.Fatal("the client's handler was not let go after Close")
	}
}

// witnessed returns fn wrapped in a handler holding an object of its own,
// and a flag set once that object is collected: once nothing (a cgo.Handle
// included) refers to the handler any more.
func witnessed(fn func(redlock.Event)) (func(redlock.Event), *atomic.Bool) {
	gone := new(atomic.Bool)
	w := new([64]byte) // not a tiny allocation: collected on its own
	runtime.SetFinalizer(w, func(*[64]byte) { gone.Store(true) })
	return func(e redlock.Event) { runtime.KeepAlive(w); fn(e) }, gone
}

// collected runs the GC until gone is set, for at most rounds rounds.
func collected(gone *atomic.Bool, rounds int) bool {
	for i := 0; i < rounds && !gone.Load(); i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	return gone.Load()
}

// A panicking handler crashes the program with the panic, from a goroutine
// of its own rather than through the C frames of the call. Checked in a
// child process running only the helper below.
func TestEventHandlerPanicCrashes(t *testing.T) {
	if os.Getenv("REDLOCK_GO_PANIC_HELPER") != "" {
		t.Skip("inside the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEventHandlerPanicHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REDLOCK_GO_PANIC_HELPER=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("the child did not crash (%v):\n%s", err, out)
	}
	for _, want := range []string{"WithEventHandler handler panicked", "boom from the handler"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the child's output lacks %q:\n%s", want, out)
		}
	}
}

func TestEventHandlerPanicHelper(t *testing.T) {
	if os.Getenv("REDLOCK_GO_PANIC_HELPER") == "" {
		t.Skip("run by TestEventHandlerPanicCrashes")
	}
	c := newClient(t, redlock.WithEventHandler(func(redlock.Event) { panic("boom from the handler") }))
	m := c.NewMutex(lockName(t))
	m.Lock()
	time.Sleep(20 * time.Second) // the crash comes first
	t.Fatal("still running after the handler panicked")
}
