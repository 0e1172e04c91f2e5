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

// BenchmarkCompare times try-lock + unlock cycles three ways in one run:
// "c" (a loop inside C, no Go in between), "go" (this binding) and
// "redsync" (go-redsync with go-redis), first on healthy nodes and then with
// node 0 paused, and prints p50/p99 and the ratios to "c".
func BenchmarkCompare(b *testing.B) {
	const ttl = 10 * time.Second
	const warmup = 20
	results := map[string]sample{}
	// Each impl does warm-up cycles first (connections), then b.N timed
	// cycles. A failed cycle (a loaded machine can push a node past the
	// 50 ms reply timeout) is timed and counted, not fatal.
	impls := []struct {
		name string
		run  func(b *testing.B, name string) sample
	}{
		{"c", func(b *testing.B, name string) sample {
			l, err := cbaseline.Open(nodeURLs, name)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			l.Cycles(warmup, ttl)
			b.ResetTimer()
			d, failed, err := l.Cycles(b.N, ttl)
			if err != nil {
				b.Logf("%d of %d C cycles failed, first: %v", failed, b.N, err)
			}
			return sample{d, failed}
		}},
		{"go", func(b *testing.B, name string) sample {
			c, err := redlock.NewClient(nodeURLs) // C's defaults, like the baseline
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			m := c.NewMutex(name, redlock.WithExpiry(ttl))
			cycle := func() error {
				err := m.TryLock()
				if err == nil {
					_, err = m.Unlock()
				}
				return err
			}
			return timeCycles(b, warmup, cycle)
		}},
		{"redsync", func(b *testing.B, name string) sample {
			m := newRedsync(b).NewMutex(name, redsync.WithExpiry(ttl), redsync.WithTries(1))
			cycle := func() error {
				err := m.TryLock()
				if err == nil {
					_, err = m.Unlock()
				}
				return err
			}
			return timeCycles(b, warmup, cycle)
		}},
	}
	for _, scenario := range []string{"healthy", "paused"} {
		if scenario == "paused" && os.Getenv(envHarness) == "" {
			break
		}
		for _, impl := range impls {
			key := scenario + "/" + impl.name
			if scenario == "paused" {
				// A fresh node for each implementation: connections the
				// previous one left in the paused node's listen backlog
				// would otherwise change what the next one meets.
				ctl(b, "RESTART", "0")
				ctl(b, "PAUSE", "0")
			}
			b.Run(key, func(b *testing.B) {
				s := impl.run(b, lockName(b))
				b.StopTimer()
				p50, p99 := percentiles(s.d)
				b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
				b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
				b.ReportMetric(float64(s.failed), "failed")
				results[key] = s // the last (largest) run is kept
			})
			if scenario == "paused" {
				ctl(b, "RESUME", "0")
			}
		}
	}
	fmt.Printf("\n%-18s %12s %12s %8s %8s %7s\n", "lock+unlock", "p50", "p99", "p50/c", "p99/c", "failed")
	for _, scenario := range []string{"healthy", "paused"} {
		base50, base99 := percentiles(results[scenario+"/c"].d)
		for _, impl := range impls {
			s, ok := results[scenario+"/"+impl.name]
			if !ok {
				continue
			}
			p50, p99 := percentiles(s.d)
			fmt.Printf("%-18s %12v %12v %8s %8s %7d\n", scenario+"/"+impl.name, p50.Round(time.Microsecond),
				p99.Round(time.Microsecond), ratio(p50, base50), ratio(p99, base99), s.failed)
		}
	}
}

// sample is one implementation's cycle durations and failure count.
type sample struct {
	d      []time.Duration
	failed int
}

// timeCycles runs warmup untimed cycles, then b.N timed ones.
func timeCycles(b *testing.B, warmup int, cycle func() error) sample {
	for i := 0; i < warmup; i++ {
		cycle()
	}
	d := make([]time.Duration, b.N)
	failed := 0
	var first error
	b.ResetTimer()
	for i := range d {
		t0 := time.Now()
		if err := cycle(); err != nil {
			if failed++; first == nil {
				first = err
			}
		}
		d[i] = time.Since(t0)
	}
	if first != nil {
		b.Logf("%d of %d cycles failed, first: %v", failed, b.N, first)
	}
	return sample{d, failed}
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
