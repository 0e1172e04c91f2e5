// SPDX-License-Identifier: BSD-3-Clause

// Fencing tokens (WithFencing, Mutex.Token) against real nodes: strictly
// increasing across holders and clients, 0 when not held or not minted.

package redlock_test

import (
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func TestFencingTokensIncrease(t *testing.T) {
	name := lockName(t)
	a := newClient(t, redlock.WithFencing()).NewMutex(name)
	b := newClient(t, redlock.WithFencing()).NewMutex(name)
	if tok := a.Token(); tok != 0 {
		t.Fatalf("Token before any Lock = %d, want 0", tok)
	}
	var last uint64
	for i := 0; i < 6; i++ {
		m := a
		if i%2 == 1 {
			m = b
		}
		if err := m.Lock(); err != nil {
			t.Fatalf("round %d: Lock: %v", i, err)
		}
		tok := m.Token()
		if tok <= last {
			t.Fatalf("round %d: token %d after %d: not strictly increasing", i, tok, last)
		}
		last = tok
		if tok2 := m.Token(); tok2 != tok {
			t.Fatalf("round %d: token changed while held: %d then %d", i, tok, tok2)
		}
		if _, err := m.Unlock(); err != nil {
			t.Fatalf("round %d: Unlock: %v", i, err)
		}
		if tok := m.Token(); tok != 0 {
			t.Fatalf("round %d: Token after Unlock = %d, want 0", i, tok)
		}
	}
	// The counter lives next to the lock's key (name + ":fencing").
	if n := holders(name + ":fencing"); n < quorum() {
		t.Fatalf("fencing counter on %d nodes, want at least %d", n, quorum())
	}
}

// A holder whose lock ran out is followed by a holder with a higher token,
// and its own token reads 0 once it is no longer held.
func TestFencingTokenAfterExpiry(t *testing.T) {
	c := newClient(t, redlock.WithFencing())
	name := lockName(t)
	old := c.NewMutex(name, redlock.WithExpiry(200*time.Millisecond))
	if err := old.Lock(); err != nil {
		t.Fatal(err)
	}
	oldTok := old.Token()
	if oldTok == 0 {
		t.Fatal("Token = 0 while held with WithFencing")
	}
	time.Sleep(500 * time.Millisecond)
	if tok := old.Token(); tok != 0 {
		t.Fatalf("Token of an expired lock = %d, want 0", tok)
	}
	next := c.NewMutex(name)
	if err := next.Lock(); err != nil {
		t.Fatal(err)
	}
	if next.Token() <= oldTok {
		t.Fatalf("token %d after an expired holder's %d", next.Token(), oldTok)
	}
	mustIs(t, unlockErr(old), redlock.ErrLost)
	if _, err := next.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestNoFencingTokenWithoutOption(t *testing.T) {
	c := newClient(t)
	name := lockName(t)
	m := c.NewMutex(name)
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if tok := m.Token(); tok != 0 {
		t.Fatalf("Token without WithFencing = %d, want 0", tok)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	if holders(name+":fencing") != 0 {
		t.Fatal("a counter key was made without WithFencing")
	}
	// WithFencing is the client's: a Mutex given it reports ErrInvalid.
	mustIs(t, c.NewMutex(name, redlock.WithFencing()).Lock(), redlock.ErrInvalid)
}
