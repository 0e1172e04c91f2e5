// SPDX-License-Identifier: BSD-3-Clause

// Package redlock is the Go binding of libredlock: a Redlock distributed lock
// over N independent Redis or Valkey nodes, with the algorithm in C.
//
// A Client holds the node set and the retry settings; a Mutex is one named
// lock made by Client.NewMutex. The binding is deliberately thin: attempts,
// retries, quorum and validity are decided by the C library, and Go only
// turns its results into errors, contexts and times.
//
//	client, err := redlock.NewClient([]string{"redis://a:6379", "redis://b:6379", "redis://c:6379"})
//	if err != nil { ... }
//	defer client.Close()
//	m := client.NewMutex("invoices", redlock.WithExpiry(30*time.Second), redlock.WithTries(5))
//	if err := m.LockContext(ctx); err != nil { ... }
//	defer m.Unlock()
//
// The Mutex has go-redsync v4's methods and signatures, and the options
// its names and defaults (32 tries, 50-250 ms apart, an 8 s expiry), so
// code moves from go-redsync by changing the import and the constructor.
// A Mutex's own options go onto its C lock handle: it always uses its
// client's connections.
//
// Mutex.AutoExtend keeps a held lock alive from the C library's background
// thread, and Mutex.LockedContext gives a context that ends if it is lost.
// WithFencing makes each acquisition mint a fencing token (Mutex.Token);
// Mutex.Nodes reports what each node did in the last round; and
// WithEventHandler is a metrics hook called for every attempt, extension,
// loss, release and node failure. A waiting Lock polls by default, as
// redsync's does; WithWake(true) has it woken by the holder's Unlock rather
// than at its next retry (Client.Listeners shows the connections that hear
// releases), and WithFair serves waiters in arrival order.
//
// Errors are *Error values that match the sentinel errors (ErrNotAcquired,
// ErrNoQuorum, ErrLost, ...) with errors.Is, and carry the C library's
// per-node detail in their text.
//
// The package needs cgo. By default it compiles the C sources that come in
// the same module (github.com/redlock-project/redlock) into itself, so
// `go get` and a plain `go build` are enough, given pkg-config and the
// hiredis (>= 1.0, with hiredis_ssl) and OpenSSL development files; with
// -tags redlock_system it links an installed libredlock found by pkg-config
// instead. See docs/go.md.
package redlock
