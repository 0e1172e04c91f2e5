// SPDX-License-Identifier: BSD-3-Clause

// Benchmarks: lock/unlock cycles through the binding (one goroutine and
// parallel), and a comparison of cycle latency against the C core called
// directly and against go-redsync, on healthy nodes and with one paused.
// They print numbers and ratios; nothing here asserts timing.

package redlock_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"

	redlock "github.com/redlock-project/redlock/bindings/go"
	"github.com/redlock-project/redlock/bindings/go/internal/cbaseline"
)

func BenchmarkLockUnlock(b *testing.B) {
	c, err := redlock.NewClient(nodeURLs)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("serial", func(b *testing.B) {
		m := c.NewMutex(lockName(b))
		for i := 0; i < b.N; i++ {
			if err := m.TryLock(); err != nil {
				b.Fatal(err)
			}
			if _, err := m.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			m := c.NewMutex(lockName(b)) // one name per goroutine: no contention, just throughput
			for pb.Next() {
				if err := m.TryLock(); err != nil {
					b.Error(err)
					return
				}
				if _, err := m.Unlock(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkCompare times try-lock + unlock cycles four ways in one run,
// interleaved in blocks so that the machine's changing load falls on all of
// them alike: "c" (a loop inside C on one reused handle, no Go in between),
// "go" (this binding, one reused Mutex), "go-per-call" (this binding written
// the way go-redsync users write it: NewMutex with its options for every
// cycle) and "redsync" (go-redsync with go-redis, the same way), first on
// healthy nodes and then with node 0 paused. It prints p50/p99 and the
// ratios to "c" and to "redsync".
func BenchmarkCompare(b *testing.B) {
	const ttl = 10 * time.Second
	const warmup, block = 20, 25
	type impl struct {
		name  string
		setup func(b *testing.B, name string) (cycle func() error, done func())
	}
	impls := []impl{
		{"c", nil}, // timed inside C; see below
		{"go", func(b *testing.B, name string) (func() error, func()) {
			c, err := redlock.NewClient(nodeURLs) // C's timeouts, like the baseline
			if err != nil {
				b.Fatal(err)
			}
			m := c.NewMutex(name, redlock.WithExpiry(ttl))
			return func() error {
				err := m.TryLock()
				if err == nil {
					_, err = m.Unlock()
				}
				return err
			}, func() { c.Close() }
		}},
		{"go-per-call", func(b *testing.B, name string) (func() error, func()) {
			c, err := redlock.NewClient(nodeURLs)
			if err != nil {
				b.Fatal(err)
			}
			return func() error {
				m := c.NewMutex(name, redlock.WithExpiry(ttl), redlock.WithTries(1))
				err := m.Lock()
				if err == nil {
					_, err = m.Unlock()
				}
				return err
			}, func() { c.Close() }
		}},
		{"redsync", func(b *testing.B, name string) (func() error, func()) {
			rs := newRedsync(b)
			return func() error {
				m := rs.NewMutex(name, redsync.WithExpiry(ttl), redsync.WithTries(1))
				err := m.Lock()
				if err == nil {
					_, err = m.Unlock()
				}
				return err
			}, func() {}
		}},
	}
	results := map[string]sample{}
	for _, scenario := range []string{"healthy", "paused"} {
		if scenario == "paused" && os.Getenv(envHarness) == "" {
			break
		}
		if scenario == "paused" {
			ctl(b, "RESTART", "0")
			ctl(b, "PAUSE", "0")
		}
		b.Run(scenario, func(b *testing.B) {
			base, err := cbaseline.Open(nodeURLs, lockName(b))
			if err != nil {
				b.Fatal(err)
			}
			defer base.Close()
			base.Cycles(warmup, ttl)
			cycles := make([]func() error, len(impls))
			for k, im := range impls[1:] {
				cycle, done := im.setup(b, lockName(b))
				defer done()
				for range warmup {
					cycle()
				}
				cycles[k+1] = cycle
			}
			got := make([]sample, len(impls))
			b.ResetTimer()
			for n := 0; n < b.N; n += block {
				k := min(block, b.N-n)
				for i := range impls {
					if i == 0 {
						d, failed, _ := base.Cycles(k, ttl)
						got[0].d = append(got[0].d, d...)
						got[0].failed += failed
						continue
					}
					for range k {
						t0 := time.Now()
						if err := cycles[i](); err != nil {
							got[i].failed++
						}
						got[i].d = append(got[i].d, time.Since(t0))
					}
				}
			}
			b.StopTimer()
			for i, im := range impls {
				results[scenario+"/"+im.name] = got[i] // the last (largest) run is kept
				p50, _ := percentiles(got[i].d)
				b.ReportMetric(float64(p50.Microseconds()), im.name+"-p50-µs")
			}
		})
		if scenario == "paused" {
			ctl(b, "RESUME", "0")
		}
	}
	fmt.Printf("\n%-20s %10s %10s %7s %7s %9s %7s\n", "try-lock+unlock", "p50", "p99", "p50/c", "p99/c", "redsync/x", "failed")
	for _, scenario := range []string{"healthy", "paused"} {
		base50, base99 := percentiles(results[scenario+"/c"].d)
		rs50, _ := percentiles(results[scenario+"/redsync"].d)
		for _, im := range impls {
			s, ok := results[scenario+"/"+im.name]
			if !ok {
				continue
			}
			p50, p99 := percentiles(s.d)
			fmt.Printf("%-20s %10v %10v %7s %7s %9s %7d\n", scenario+"/"+im.name, p50.Round(time.Microsecond),
				p99.Round(time.Microsecond), ratio(p50, base50), ratio(p99, base99), ratio(rs50, p50), s.failed)
		}
	}
}

// sample is one implementation's cycle durations and failure count.
type sample struct {
	d      []time.Duration
	failed int
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*50/100], s[min(len(s)-1, len(s)*99/100)]
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
}
