// SPDX-License-Identifier: BSD-3-Clause
// Peer-benchmark driver for Go: runs one case (cycle or contend) with our
// binding ("ours-go") or go-redsync ("redsync") and prints one JSON line,
// with the same flags and fields as bench/drivers/common.py.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// Same per-node reply timeout as the C core's default, for every library.
const (
	nodeTimeout = 50 * time.Millisecond
	ttl         = 10 * time.Second
	manyTries   = 1 << 20 // contend: keep retrying with the library's own delays
)

type locker struct {
	acquire func() error
	release func() error
}

var (
	impl       = flag.String("impl", "", "ours-go or redsync")
	caseName   = flag.String("case", "cycle", "cycle or contend")
	urlList    = flag.String("urls", "", "comma-separated redis://host:port")
	workers    = flag.Int("workers", 1, "concurrent workers")
	iterations = flag.Int("iterations", 2000, "timed cycles in all (cycle)")
	seconds    = flag.Float64("seconds", 3, "time cap (cycle) or duration (contend)")
	warmup     = flag.Int("warmup", 20, "untimed cycles per worker")
	prefix     = flag.String("prefix", "bench", "key prefix")
)

// newFactory returns a function making a locker for a key; contend selects
// the blocking (retrying) form.
func newFactory(urls []string) func(key string, contend bool) locker {
	switch *impl {
	case "ours-go":
		c, err := redlock.NewClient(urls, redlock.WithNodeTimeout(nodeTimeout))
		if err != nil {
			fail(err)
		}
		return func(key string, contend bool) locker {
			// Unlock returns (bool, error) like redsync's; both drivers time the same call.
			if contend {
				m := c.NewMutex(key, redlock.WithExpiry(ttl), redlock.WithTries(manyTries))
				return locker{m.Lock, func() error { _, err := m.Unlock(); return err }}
			}
			m := c.NewMutex(key, redlock.WithExpiry(ttl))
			return locker{m.TryLock, func() error { _, err := m.Unlock(); return err }}
		}
	case "redsync":
		pl := make([]rsredis.Pool, 0, len(urls))
		for _, u := range urls {
			o, err := goredis.ParseURL(u)
			if err != nil {
				fail(err)
			}
			o.ReadTimeout, o.WriteTimeout, o.DialTimeout = nodeTimeout, nodeTimeout, 200*time.Millisecond
			o.PoolSize = max(10, 2**workers)
			pl = append(pl, rsgoredis.NewPool(goredis.NewClient(o)))
		}
		rs := redsync.New(pl...)
		return func(key string, contend bool) locker {
			tries := 1
			if contend {
				tries = manyTries
			}
			m := rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(tries))
			lock := m.TryLock
			if contend {
				lock = m.Lock
			}
			return locker{lock, func() error { _, err := m.Unlock(); return err }}
		}
	}
	fail(fmt.Errorf("unknown -impl %q", *impl))
	return nil
}

func main() {
	flag.Parse()
	urls := strings.Split(*urlList, ",")
	mk := newFactory(urls)
	if *caseName == "contend" {
		contend(urls, mk)
	} else {
		cycles(urls, mk)
	}
}

func cycles(urls []string, mk func(string, bool) locker) {
	for w := 0; w < *workers; w++ {
		for i := 0; i < *warmup; i++ {
			l := mk(fmt.Sprintf("%s:warm:%d:%d", *prefix, w, i), false)
			if l.acquire() == nil {
				l.release()
			}
		}
	}
	per := max(1, *iterations / *workers)
	lat := make([][]float64, *workers)
	errs := make([]int, *workers)
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	stopAt := start.Add(time.Duration(*seconds * float64(time.Second)))
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				t0 := time.Now()
				l := mk(fmt.Sprintf("%s:%d:%d", *prefix, w, i), false)
				err := l.acquire()
				if err == nil {
					err = l.release()
				}
				t1 := time.Now()
				if err != nil {
					errs[w]++
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
				lat[w] = append(lat[w], float64(t1.Sub(t0).Nanoseconds())/1000)
				if t1.After(stopAt) {
					break
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var all []float64
	total := 0
	for w := range lat {
		all = append(all, lat[w]...)
		total += errs[w]
	}
	emit(urls, all, total, elapsed, firstErr, nil)
}

func contend(urls []string, mk func(string, bool) locker) {
	var mu sync.Mutex
	var lastRelease time.Time
	var gaps []float64
	counts := make([]int, *workers)
	errs := 0
	var firstErr error
	start := time.Now()
	end := start.Add(time.Duration(*seconds * float64(time.Second)))
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		l := mk(*prefix+":contend", true)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(end) {
				if err := l.acquire(); err != nil {
					mu.Lock()
					errs++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				t := time.Now()
				mu.Lock()
				if !lastRelease.IsZero() {
					gaps = append(gaps, float64(t.Sub(lastRelease).Nanoseconds())/1000)
				}
				counts[w]++
				lastRelease = time.Now()
				mu.Unlock()
				if err := l.release(); err != nil {
					mu.Lock()
					errs++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	emit(urls, gaps, errs, time.Since(start).Seconds(), firstErr, counts)
}

func emit(urls []string, lat []float64, errs int, secs float64, firstErr error, perWorker []int) {
	sort.Float64s(lat)
	pct := func(q float64) any {
		if len(lat) == 0 {
			return nil
		}
		return lat[min(len(lat)-1, int(q*float64(len(lat))))]
	}
	ops := len(lat)
	if perWorker != nil {
		ops = 0
		for _, c := range perWorker {
			ops += c
		}
	}
	var fe any
	if firstErr != nil {
		fe = firstErr.Error()
	}
	row := map[string]any{
		"impl": *impl, "case": *caseName, "nodes": len(urls), "workers": *workers,
		"ops": ops, "errors": errs, "seconds": secs, "ops_per_s": float64(ops) / secs,
		"p50_us": pct(0.50), "p99_us": pct(0.99), "first_error": fe, "per_worker": perWorker,
	}
	json.NewEncoder(os.Stdout).Encode(row)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "go driver:", err)
	os.Exit(2)
}
