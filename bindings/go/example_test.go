// SPDX-License-Identifier: BSD-3-Clause

// Examples for the package documentation (compiled by go test, not run:
// they need real nodes).

package redlock_test

import (
	"context"
	"errors"
	"log"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func Example() {
	client, err := redlock.NewClient([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"},
		redlock.WithTries(5), redlock.WithRetryDelay(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := client.NewMutex("invoices", redlock.WithExpiry(30*time.Second))
	if err := m.LockContext(ctx); err != nil {
		log.Fatal(err) // errors.Is(err, redlock.ErrTimeout), redlock.ErrNoQuorum, ...
	}
	defer func() {
		if _, err := m.Unlock(); errors.Is(err, redlock.ErrLost) {
			log.Print("the lock expired before we were done: another process may have overlapped")
		}
	}()
	// ... the critical section; m.Until() is when the lock stops being valid.
}

func ExampleMutex_LockedContext() {
	client, err := redlock.NewClient([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m := client.NewMutex("reports", redlock.WithExpiry(10*time.Second))
	if err := m.Lock(); err != nil {
		log.Fatal(err)
	}
	defer m.Unlock()

	// Work under a context that ends when the lock's validity does; Extend
	// pushes that out.
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	for step := 0; step < 10; step++ {
		if ctx.Err() != nil {
			log.Printf("stopping: %v", context.Cause(ctx))
			return
		}
		// ... one step of work ...
		if ok, err := m.Extend(); !ok {
			log.Printf("could not extend: %v", err)
			return
		}
	}
}

func ExampleMutex_TryLock() {
	client, err := redlock.NewClient([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m := client.NewMutex("nightly-job")
	switch err := m.TryLock(); {
	case errors.Is(err, redlock.ErrNotAcquired):
		return // another instance runs it
	case err != nil:
		log.Fatal(err)
	}
	defer m.Unlock()
	// ... run the job ...
}

func ExampleMutex_AutoExtend() {
	client, err := redlock.NewClient([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"},
		redlock.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m := client.NewMutex("rebuild-index", redlock.WithExpiry(10*time.Second))
	if err := m.Lock(); err != nil {
		log.Fatal(err)
	}
	defer m.Unlock()
	// Kept alive in the background for as long as the work takes (up to an
	// hour); ctx ends if the lock is lost meanwhile.
	if err := m.AutoExtend(0); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := m.LockedContext(context.Background())
	defer cancel()
	token := m.Token() // pass it to the storage, which refuses tokens lower than one it has seen
	_ = token
	<-ctx.Done() // stands for work that honours ctx
	if cause := context.Cause(ctx); errors.Is(cause, redlock.ErrLost) || errors.Is(cause, redlock.ErrExpired) {
		log.Printf("lock lost while working: %v", cause)
	}
}

func ExampleWithEventHandler() {
	client, err := redlock.NewClient([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"},
		redlock.WithEventHandler(func(e redlock.Event) {
			// Runs during the lock call or on the auto-extension's thread: keep it quick.
			switch e.Type {
			case redlock.EventAcquired:
				log.Printf("acquired %s in %v (attempt %d)", e.Resource, e.Elapsed, e.Attempt)
			case redlock.EventLost:
				log.Printf("lost %s: %v", e.Resource, e.Err)
			case redlock.EventNodeError:
				log.Printf("node %s: %v: %s", e.NodeURL, e.NodeOutcome, e.Message)
			}
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}

func ExampleMutex_Nodes() {
	client, err := redlock.NewClient([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m := client.NewMutex("nightly-job")
	err = m.TryLock()
	for _, r := range m.Nodes() { // what each node did in that attempt
		log.Printf("%s: %v in %v %s", r.URL, r.Outcome, r.RTT, r.Message)
	}
	if err == nil {
		m.Unlock()
	}
}
