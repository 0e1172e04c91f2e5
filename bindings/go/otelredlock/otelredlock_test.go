// SPDX-License-Identifier: BSD-3-Clause

// The instruments read back through the SDK's ManualReader after a scripted
// scenario on real nodes from the harness (tests/harness/nodes.py): 10
// acquisitions (one woken from a wait, one then lost), 2 refusals, 1
// extension, and one node paused (CLIENT PAUSE) in a round that needs it.

package otelredlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	redlock "github.com/redlock-project/redlock/bindings/go"
	"github.com/redlock-project/redlock/bindings/go/otelredlock"
)

var (
	nodeURLs []string
	rdbs     []*redis.Client
)

func TestMain(m *testing.M) {
	if os.Getenv("REDLOCK_TEST_NODES") == "" {
		script := filepath.Join("..", "..", "..", "tests", "harness", "nodes.py")
		self, _ := os.Executable()
		cmd := exec.Command("python3", append([]string{script, "exec", "--count", "3", "--kind", "mixed", "--", self}, os.Args[1:]...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				os.Exit(ee.ExitCode())
			}
			fmt.Fprintf(os.Stderr, "running the node harness %s: %v\n", script, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	nodeURLs = strings.Split(os.Getenv("REDLOCK_TEST_NODES"), ",")
	for _, u := range nodeURLs {
		opt, err := redis.ParseURL(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		rdbs = append(rdbs, redis.NewClient(opt))
	}
	os.Exit(m.Run())
}

func TestOutcomes(t *testing.T) {
	for err, want := range map[error]string{nil: "acquired", redlock.ErrNotAcquired: "refused",
		redlock.ErrTimeout: "timeout", redlock.ErrCanceled: "canceled", redlock.ErrNoQuorum: "error"} {
		if got := otelredlock.AcquireOutcome(err); got != want {
			t.Errorf("AcquireOutcome(%v) = %q, want %q", err, got, want)
		}
	}
}

// keyOf finds the key of a held lock on node 0.
func keyOf(t *testing.T, name string) string {
	keys, err := rdbs[0].Keys(context.Background(), "*"+name).Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys of %s: %v %v", name, keys, err)
	}
	return keys[0]
}

func TestScenarioReadBack(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	evs := make(chan redlock.Event, 10000)
	m, err := otelredlock.New(provider, otelredlock.WithNext(func(e redlock.Event) { evs <- e }))
	if err != nil {
		t.Fatal(err)
	}
	c, err := redlock.NewClient(nodeURLs, redlock.WithTries(1), redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithRetryDelay(20*time.Millisecond),
		redlock.WithEventHandler(m.Handle))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other, err := redlock.NewClient(nodeURLs, redlock.WithTries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	prefix := fmt.Sprintf("otel-go:%d:", os.Getpid())

	// 8 plain acquisitions, the first one extended.
	for i := 0; i < 8; i++ {
		mu := c.NewMutex(prefix + "plain")
		if err := mu.Lock(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := mu.Extend(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mu.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	// The 9th: a wait, woken by the holder's release.
	holder := other.NewMutex(prefix + "wait")
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	// Its retry is far away (as in the wake tests): only the release's
	// wake-up gets it the lock.
	waited := c.NewMutex(prefix+"wait", redlock.WithRetryDelay(20*time.Second), redlock.WithRetryJitter(0),
		redlock.WithWake(true))
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		done <- waited.LockContext(wctx)
	}()
	// Release once the waiter listens on every node and is registered as a
	// waiter on a majority, which refused it.
	woken := 0
	ready := 0
	deadline := time.Now().Add(30 * time.Second) // a bound, not a timing check
	for {
		registered := 0
		for _, r := range rdbs {
			if n, _ := r.Keys(ctx, "*"+prefix+"wait:wq").Result(); len(n) > 0 {
				registered++
			}
		}
		for len(evs) > 0 {
			if e := <-evs; e.Resource == prefix+"wait" && e.Type == redlock.EventListener && e.ListenerState == redlock.ListenerReady {
				ready++
			}
		}
		if ready == len(nodeURLs) && registered >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter never registered: %d listeners ready, registered on %d nodes", ready, registered)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting Lock: %v", err)
	}
	if _, err := waited.Unlock(); err != nil {
		t.Fatal(err)
	}
	// The 10th, then lost: its key deleted on every node before the release.
	lost := c.NewMutex(prefix + "lost")
	if err := lost.Lock(); err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, prefix+"lost")
	for _, r := range rdbs {
		r.Del(ctx, key)
	}
	if _, err := lost.Unlock(); !errors.Is(err, redlock.ErrLost) {
		t.Fatalf("Unlock of a deleted lock: %v", err)
	}
	// 2 refusals.
	busy := other.NewMutex(prefix + "busy")
	if err := busy.Lock(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := c.NewMutex(prefix + "busy").TryLock(); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock while held: %v", err)
		}
	}
	if _, err := busy.Unlock(); err != nil {
		t.Fatal(err)
	}
	// A paused node in a round that needs its answer: node 1 holds the key
	// for another owner, node 2 is paused (CLIENT PAUSE), so only node 2
	// could make the quorum; it times out.
	pausedKey := strings.TrimSuffix(key, "lost") + "paused"
	rdbs[1].Set(ctx, pausedKey, "someone-else", 10*time.Second)
	if err := rdbs[2].Do(ctx, "CLIENT", "PAUSE", "3000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	pausedErr := c.NewMutex(prefix + "paused").TryLock()
	if pausedErr == nil {
		t.Fatal("acquired with a node paused and another holding the key")
	}
	time.Sleep(3200 * time.Millisecond) // the pause ends by itself

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelredlock.MeterName {
			t.Fatalf("scope %q", sm.Scope.Name)
		}
		for _, mt := range sm.Metrics {
			got[mt.Name] = mt
		}
	}
	units := map[string]string{"redlock.acquire.duration": "s", "redlock.acquire.attempts": "{attempt}",
		"redlock.lock.held.duration": "s", "redlock.lock.lost": "{lock}", "redlock.lock.extensions": "{extension}",
		"redlock.node.errors": "{error}", "redlock.node.rtt": "s", "redlock.wake.woken": "{waiter}",
		"redlock.listener.state_changes": "{change}"}
	for name, unit := range units {
		if got[name].Unit != unit {
			t.Errorf("%s: unit %q, want %q", name, got[name].Unit, unit)
		}
	}

	paused := otelredlock.AcquireOutcome(pausedErr)
	dur := floatHist(t, got["redlock.acquire.duration"])
	wantDur := map[string]uint64{"acquired": 10, "refused": 2}
	wantDur[paused]++
	if counts := countsBy(dur, "redlock.outcome"); !equal(counts, wantDur) {
		t.Errorf("acquire.duration counts by outcome %v, want %v", counts, wantDur)
	}
	att := got["redlock.acquire.attempts"].Data.(metricdata.Histogram[int64]).DataPoints
	if len(att) != 1 || att[0].Count != 13 || att[0].Sum < 14 {
		t.Errorf("acquire.attempts: %+v, want 13 samples summing to 14 or more", att)
	}
	held := floatHist(t, got["redlock.lock.held.duration"])
	if len(held) != 1 || held[0].Count != 10 {
		t.Errorf("lock.held.duration: %+v, want 10 samples", held)
	}
	if s := sums(t, got["redlock.lock.lost"], "redlock.reason"); !equalI(s, map[string]int64{"REDLOCK_ELOST": 1}) {
		t.Errorf("lock.lost %v", s)
	}
	if s := sums(t, got["redlock.lock.extensions"], "redlock.outcome"); !equalI(s, map[string]int64{"extended": 1}) {
		t.Errorf("lock.extensions %v", s)
	}
	pausedURL := nodeURLs[2]
	if s := sums(t, got["redlock.node.errors"], "redlock.node"); !equalI(s, map[string]int64{pausedURL: 1}) {
		t.Errorf("node.errors by node %v, want 1 on %s", s, pausedURL)
	}
	if s := sums(t, got["redlock.node.errors"], "error.type"); !equalI(s, map[string]int64{"REDLOCK_ETIMEDOUT": 1}) {
		t.Errorf("node.errors by type %v", s)
	}
	// One WOKEN per wake-up: a waiter woken by the first node's release
	// message may find the others not yet released, and be woken again.
	for len(evs) > 0 {
		if e := <-evs; e.Type == redlock.EventWoken {
			woken++
		}
	}
	if s := sums(t, got["redlock.wake.woken"], ""); woken < 1 || s[""] != int64(woken) {
		t.Errorf("wake.woken %v, want the %d WOKEN events (at least 1)", s, woken)
	}
	rtt := countsBy(floatHist(t, got["redlock.node.rtt"]), "redlock.node")
	if len(rtt) != 3 {
		t.Errorf("node.rtt by node %v, want the 3 nodes", rtt)
	}
	if n := sums(t, got["redlock.listener.state_changes"], "redlock.listener.state")["ready"]; n != int64(len(nodeURLs)) {
		t.Errorf("listener changes to ready: %d, want one per node", n)
	}
}

func floatHist(t *testing.T, m metricdata.Metrics) []metricdata.HistogramDataPoint[float64] {
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: not a float histogram: %T", m.Name, m.Data)
	}
	return h.DataPoints
}

func countsBy(dps []metricdata.HistogramDataPoint[float64], key string) map[string]uint64 {
	out := map[string]uint64{}
	for _, dp := range dps {
		v, _ := dp.Attributes.Value(attribute.Key(key))
		out[v.AsString()] += dp.Count
	}
	return out
}

func sums(t *testing.T, m metricdata.Metrics, key string) map[string]int64 {
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: not an int sum: %T", m.Name, m.Data)
	}
	out := map[string]int64{}
	for _, dp := range s.DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(key))
		out[v.AsString()] += dp.Value
	}
	return out
}

func equal(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equalI(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
