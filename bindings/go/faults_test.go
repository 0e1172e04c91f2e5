// SPDX-License-Identifier: BSD-3-Clause

// Node faults through the harness: a minority down, a majority down, a
// paused node. Each test restores the nodes it faulted.

package redlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func TestMinorityDown(t *testing.T) {
	down := len(nodeURLs) - quorum()
	if down == 0 {
		t.Skip("needs at least 3 nodes")
	}
	fault(t, "kill", lastNodes(down)...)
	c := newClient(t)
	m := c.NewMutex(lockName(t))
	if err := m.TryLock(); err != nil {
		t.Fatalf("TryLock with %d of %d nodes down: %v", down, len(nodeURLs), err)
	}
	if ok, err := m.Extend(); !ok {
		t.Fatalf("Extend with a minority down: %v", err)
	}
	mustIs(t, c.NewMutex(m.Name()).TryLock(), redlock.ErrNotAcquired)
	if _, err := m.Unlock(); err != nil {
		t.Fatalf("Unlock with a minority down: %v", err)
	}
}

func TestMajorityDown(t *testing.T) {
	down := len(nodeURLs) - quorum() + 1
	c := newClient(t)
	held := c.NewMutex(lockName(t))
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	fault(t, "kill", lastNodes(down)...)

	m := c.NewMutex(lockName(t))
	err := m.TryLock()
	mustIs(t, err, redlock.ErrNoQuorum)
	t.Logf("TryLock with %d of %d nodes down: %v", down, len(nodeURLs), err)
	ok, err := held.Extend()
	if ok || err == nil {
		t.Fatal("Extend succeeded without a majority")
	}
	t.Logf("Extend: %v", err)

	// Bring them back: the same client reconnects and works again.
	for _, i := range lastNodes(down) {
		ctl(t, "START", strconv.Itoa(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("LockContext after the nodes came back: %v", err)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestPausedNode(t *testing.T) {
	fault(t, "pause", 0)
	c := newClient(t)
	for i := 0; i < 3; i++ {
		m := c.NewMutex(lockName(t))
		if err := m.TryLock(); err != nil {
			t.Fatalf("TryLock with node 0 paused: %v", err)
		}
		if ok, err := m.Extend(); !ok {
			t.Fatalf("Extend with node 0 paused: %v", err)
		}
		if _, err := m.Unlock(); err != nil {
			t.Fatalf("Unlock with node 0 paused: %v", err)
		}
	}
}
