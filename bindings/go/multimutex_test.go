// SPDX-License-Identifier: BSD-3-Clause

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// {a, b} and {b, a} are one set: they exclude each other, and a Mutex on b
// excludes them; Extend and Unlock.
func TestMultiMutexAnyOrder(t *testing.T) {
	a, b := newClient(t, redlock.WithFencing()), newClient(t, redlock.WithFencing())
	name := lockName(t)
	na, nb := name+":a", name+":b"
	single := b.NewMutex(nb)
	x, y := a.NewMultiMutex(na, nb), b.NewMultiMutex(nb, na)
	if x.Name() != y.Name() || x.Name() != strings.Join([]string{na, nb}, ",") {
		t.Fatalf("names %q and %q, want the canonical %q", x.Name(), y.Name(), na+","+nb)
	}
	if err := x.TryLock(); err != nil {
		t.Fatal(err)
	}
	if tok := x.Token(); tok == 0 {
		t.Fatalf("token %d", tok)
	}
	if err := y.TryLock(); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("the same set in the other order: %v, want ErrNotAcquired", err)
	}
	if err := single.TryLock(); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a Mutex on one of the names: %v, want ErrNotAcquired", err)
	}
	if ok, err := x.Extend(); !ok || err != nil {
		t.Fatalf("Extend: %v %v", ok, err)
	}
	if ok, err := x.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
	if err := y.TryLock(); err != nil {
		t.Fatal(err)
	}
	defer y.Unlock()
}

// The fencing token of the set is above every name's counter.
func TestMultiMutexToken(t *testing.T) {
	c := newClient(t, redlock.WithFencing())
	name := lockName(t)
	single := c.NewMutex(name + ":b")
	var last uint64
	for i := 0; i < 3; i++ {
		if err := single.TryLock(); err != nil {
			t.Fatal(err)
		}
		last = single.Token()
		single.Unlock()
	}
	m := c.NewMultiMutex(name+":a", name+":b")
	if err := m.TryLock(); err != nil {
		t.Fatal(err)
	}
	tok := m.Token()
	m.Unlock()
	if tok <= last {
		t.Fatalf("the set's token %d is not above b's last %d", tok, last)
	}
	other := c.NewMutex(name + ":a")
	if err := other.TryLock(); err != nil {
		t.Fatal(err)
	}
	defer other.Unlock()
	if other.Token() <= tok {
		t.Fatalf("a's next token %d is not above the set's %d", other.Token(), tok)
	}
}

// Two clients lock {a, b} and {b, a} in a loop, each Lock waiting: both get
// their set every time (a deadlock would end a Lock with its wait's error).
func TestMultiMutexNoDeadlock(t *testing.T) {
	name := lockName(t)
	const rounds = 25
	var wg sync.WaitGroup
	got := make([]int, 2)
	errs := make(chan error, 2*rounds)
	for k, order := range [][]string{{name + ":a", name + ":b"}, {name + ":b", name + ":a"}} {
		wg.Add(1)
		go func(k int, order []string) {
			defer wg.Done()
			m := newClient(t).NewMultiMutexOpts(order, redlock.WithTries(1000), redlock.WithRetryDelay(5*time.Millisecond))
			for i := 0; i < rounds; i++ {
				if err := m.Lock(); err != nil {
					errs <- fmt.Errorf("%v round %d: %w", order, i, err)
					continue
				}
				got[k]++
				if _, err := m.Unlock(); err != nil {
					errs <- err
				}
			}
		}(k, order)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got[0] != rounds || got[1] != rounds {
		t.Fatalf("held %v times, want %d each", got, rounds)
	}
}

func TestMultiMutexAutoExtend(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMultiMutexOpts([]string{name + ":a", name + ":b"}, redlock.WithExpiry(600*time.Millisecond))
	if err := m.TryLock(); err != nil {
		t.Fatal(err)
	}
	if err := m.AutoExtend(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := c.NewMultiMutex(name+":b", name+":a").TryLock(); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("after two TTLs on auto-extend: %v, want ErrNotAcquired", err)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
}

func TestMultiMutexBadInput(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	many := make([]string, redlock.MaxMultiNames+1)
	for i := range many {
		many[i] = fmt.Sprintf("%s:%d", name, i)
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, "empty"},
		{[]string{name, name}, "twice"},
		{[]string{name, ""}, "resource 2 of 2"},
		{[]string{name, "a\x00b"}, "NUL"},
		{many, "limit"},
	} {
		m := c.NewMultiMutex(tc.names...)
		err := m.TryLock()
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d names: %v, want ErrInvalid saying %q", len(tc.names), err, tc.want)
		}
	}
	m := c.NewMultiMutex(many[:redlock.MaxMultiNames]...)
	if err := m.TryLock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
}

// TryLockMany: one attempt each, pipelined; what each TryLock would return.
func TestTryLockMany(t *testing.T) {
	a, b := newClient(t), newClient(t)
	name := lockName(t)
	ms := make([]*redlock.Mutex, 40)
	for i := range ms {
		ms[i] = a.NewMutex(fmt.Sprintf("%s:%d", name, i))
	}
	taken := b.NewMutex(name + ":7")
	if err := taken.TryLock(); err != nil {
		t.Fatal(err)
	}
	errs := a.TryLockMany(ms...)
	for i, err := range errs {
		if (i == 7) != (err != nil) {
			t.Fatalf("mutex %d: %v", i, err)
		}
	}
	if !errors.Is(errs[7], redlock.ErrNotAcquired) {
		t.Fatalf("the held one: %v, want ErrNotAcquired", errs[7])
	}
	for i, m := range ms {
		if i != 7 {
			if m.Until().IsZero() {
				t.Fatalf("mutex %d: no validity after TryLockMany", i)
			}
			if ok, err := m.Unlock(); !ok || err != nil {
				t.Fatalf("Unlock %d: %v %v", i, ok, err)
			}
		}
	}
	taken.Unlock()
	// a multi-resource Mutex takes part as any other
	multi := a.NewMultiMutex(name+":x", name+":y")
	for _, err := range a.TryLockMany(ms[0], multi) {
		if err != nil {
			t.Fatal(err)
		}
	}
	ms[0].Unlock()
	multi.Unlock()
	// bad input: every element an ErrInvalid, nothing acquired
	for _, bad := range [][]*redlock.Mutex{{ms[0], ms[0]}, {ms[0], b.NewMutex(name + ":z")}, {ms[0], nil},
		{ms[0], a.NewMutex(name+":w", redlock.WithExpiry(3*time.Second))}} {
		for _, err := range a.TryLockMany(bad...) {
			if !errors.Is(err, redlock.ErrInvalid) {
				t.Fatalf("bad input: %v, want ErrInvalid", err)
			}
		}
	}
	// the list's checks are the C library's, said in its words
	for _, c := range []struct {
		ms    []*redlock.Mutex
		words string
	}{
		{[]*redlock.Mutex{ms[1], ms[2], ms[1]}, "is given twice"},
		{[]*redlock.Mutex{ms[1], b.NewMutex(name + ":z2")}, "belongs to another client"},
	} {
		for _, err := range a.TryLockMany(c.ms...) {
			if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("bad input: %v, want ErrInvalid saying %q", err, c.words)
			}
		}
	}
	if err := ms[0].TryLock(); err != nil { // nothing was acquired above
		t.Fatal(err)
	}
	ms[0].Unlock()
}

// A set's waiter is woken by the Unlock of the set that held it, and the
// EventWoken names the set. Wake-up is opt-in: asked for here
// (WithWake(true)).
func TestMultiMutexWokenByUnlock(t *testing.T) {
	var rec recorder
	holderClient := newClient(t)
	c := newClient(t, slices.Concat(slowRetry, []redlock.Option{redlock.WithWake(true), redlock.WithEventHandler(rec.handle)})...)
	name := lockName(t)
	na, nb := name+":a", name+":b"
	holder := holderClient.NewMultiMutexOpts([]string{na, nb}, redlock.WithExpiry(30*time.Second))
	if err := holder.TryLock(); err != nil {
		t.Fatal(err)
	}
	waiter := c.NewMultiMutexOpts([]string{nb, na}, redlock.WithExpiry(10*time.Second))
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
	// With a 20 s retry delay, only the wake-up gets the set before the
	// waiter's next poll: a broken one shows as no EventWoken.
	if err := <-done; err != nil {
		t.Fatalf("woken LockContext: %v", err)
	}
	defer waiter.Unlock()
	seen = append(seen, rec.take()...)
	woken := only(seen, redlock.EventWoken)
	if len(woken) == 0 {
		t.Fatalf("no EventWoken; saw %+v", seen)
	}
	if w := woken[0]; w.Resource != na+","+nb || w.NodeURL != nodeURLs[w.Node] {
		t.Fatalf("EventWoken %+v, want the set %q", w, na+","+nb)
	}
}

// Mutex.Nodes of a set: per node, as for one resource. A node where one of
// its names is held by another owner refuses the whole set and sets none
// of its keys; the others grant it; the Unlock leaves the other owner's key.
func TestMultiMutexNodes(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	na, nb := name+":a", name+":b"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdbs[0].Set(ctx, nb, "someone-else", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	defer rdbs[0].Del(context.Background(), nb)
	m := c.NewMultiMutex(na, nb)
	for i, r := range m.Nodes() {
		if r.URL != nodeURLs[i] || r.Outcome != redlock.NodeNone {
			t.Fatalf("node %d before any round: %+v", i, r)
		}
	}
	// A round ends once a quorum has answered: node 0's refusal shows only
	// when its reply came before that (else it is "not waited for"), so
	// the set is taken again until it did.
	var rs []redlock.NodeResult
	for try := 1; ; try++ {
		if err := m.TryLock(); err != nil {
			t.Fatal(err)
		}
		rs = m.Nodes()
		if rs[0].Outcome == redlock.NodeRefused {
			break
		}
		if rs[0].Outcome != redlock.NodeNotWaited || try == 50 {
			t.Fatalf("node 0, where %s is held, did not refuse the set (try %d): %+v", nb, try, rs)
		}
		if ok, err := m.Unlock(); !ok || err != nil {
			t.Fatalf("Unlock: %v %v", ok, err)
		}
	}
	if v := keyOn(0, na); v != "" {
		t.Fatalf("node 0 refused the set but holds %s = %q", na, v)
	}
	ok := 0
	for i, r := range rs[1:] {
		switch r.Outcome {
		case redlock.NodeOK:
			ok++
			if r.Err != nil || r.RTT <= 0 {
				t.Fatalf("node %d OK: %+v", i+1, r)
			}
		case redlock.NodeNotWaited:
		default:
			t.Fatalf("node %d: %+v", i+1, r)
		}
	}
	if ok < quorum() {
		t.Fatalf("%d nodes granted the set: %+v", ok, rs)
	}
	if _, err := m.Extend(); err != nil {
		t.Fatal(err)
	}
	if r := m.Nodes()[0]; r.Outcome != redlock.NodeRefused && r.Outcome != redlock.NodeNotWaited {
		t.Fatalf("node 0 after Extend: %+v, want refused (or not waited for)", r)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
	released := 0
	for _, r := range m.Nodes() {
		if r.Outcome == redlock.NodeOK {
			released++
		}
	}
	if released < quorum() {
		t.Fatalf("the Unlock confirmed by %d nodes: %+v", released, m.Nodes())
	}
	if v := keyOn(0, nb); v != "someone-else" {
		t.Fatalf("the other owner's key on node 0 is %q after the Unlock", v)
	}
}
