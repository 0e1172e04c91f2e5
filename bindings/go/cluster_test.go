// SPDX-License-Identifier: BSD-3-Clause

// Redis/Valkey Clusters as Redlock nodes (docs/cluster.md): three
// independent clusters from tests/harness/rcluster.py (serve mode), one
// redis-cluster:// URL each, given to NewClient unchanged. And redsync over
// go-redis's ClusterClient on the same clusters: the lock key keeps its
// bare name on a cluster node, so each one's lock blocks the other.

package redlock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

type testClusters struct {
	URLs  []string `json:"urls"`
	Ports [][]int  `json:"ports"` // each cluster's master ports
}

// startClusters starts n independent clusters of `shards` shards (Redis and
// Valkey alternately) for the test's duration.
func startClusters(t *testing.T, n, shards int) testClusters {
	t.Helper()
	script := filepath.Join("..", "..", "tests", "harness", "rcluster.py")
	cmd := exec.Command("python3", script, "serve", "--clusters", fmt.Sprint(n), "--shards", fmt.Sprint(shards))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", script, err)
	}
	t.Cleanup(func() {
		stdin.Close() // the harness stops the clusters when its input closes
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s serve: %v: %s", script, err, stderr.String())
	}
	var c testClusters
	if err := json.Unmarshal([]byte(line), &c); err != nil || len(c.URLs) != n {
		t.Fatalf("%s serve said %q: %v", script, line, err)
	}
	return c
}

// clusterClient is go-redis's ClusterClient on cluster i's masters.
func clusterClient(t testing.TB, cl testClusters, i int) *goredislib.ClusterClient {
	var addrs []string
	for _, p := range cl.Ports[i] {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	cc := goredislib.NewClusterClient(&goredislib.ClusterOptions{Addrs: addrs, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestClusterNodes(t *testing.T) {
	cl := startClusters(t, 3, 3)
	ctx := context.Background()
	c, err := redlock.NewClient(cl.URLs, testOpts(redlock.WithFencing())...)
	if err != nil {
		t.Fatalf("NewClient on %v: %v", cl.URLs, err)
	}
	defer c.Close()
	other, err := redlock.NewClient(cl.URLs, tolerant...)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ccs := []*goredislib.ClusterClient{clusterClient(t, cl, 0), clusterClient(t, cl, 1), clusterClient(t, cl, 2)}

	t.Run("locks over every shard", func(t *testing.T) {
		base := lockName(t)
		shards := map[string]bool{}
		for k := 0; k < 40; k++ {
			name := fmt.Sprintf("%s:%d", base, k)
			m := c.NewMutex(name, redlock.WithExpiry(10*time.Second))
			if err := m.TryLock(); err != nil {
				t.Fatalf("%s: TryLock: %v %v", name, err, m.Nodes())
			}
			first := m.Token()
			// Each node that answered names the shard that owns the key's slot: a master of its cluster.
			for i, r := range m.Nodes() {
				if r.Outcome != redlock.NodeOK {
					continue
				}
				port := 0
				if _, err := fmt.Sscanf(r.Message, "shard 127.0.0.1:%d", &port); err != nil || !contains(cl.Ports[i], port) {
					t.Fatalf("node %d: %q is not one of its masters %v", i, r.Message, cl.Ports[i])
				}
				shards[fmt.Sprint(i, port)] = true
				if v, err := ccs[i].Exists(ctx, name).Result(); err != nil || v != 1 {
					t.Fatalf("node %d: the key %q is not on the cluster: %v %v", i, name, v, err)
				}
			}
			mustIs(t, other.NewMutex(name).TryLock(), redlock.ErrNotAcquired)
			if ok, err := m.Extend(); !ok || err != nil {
				t.Fatalf("%s: Extend: %v %v", name, ok, err)
			}
			if ok, err := m.Unlock(); !ok || err != nil {
				t.Fatalf("%s: Unlock: %v %v", name, ok, err)
			}
			if err := m.TryLock(); err != nil || m.Token() <= first {
				t.Fatalf("%s: again: %v, token %d after %d", name, err, m.Token(), first)
			}
			m.Unlock()
		}
		if len(shards) < 7 {
			t.Fatalf("the locks reached only %d of the 9 shards: %v", len(shards), shards)
		}
	})

	t.Run("redsync over ClusterClient", func(t *testing.T) {
		var pools []redsyncredis.Pool
		for _, cc := range ccs {
			pools = append(pools, goredis.NewPool(cc))
		}
		rs := redsync.New(pools...)
		name := lockName(t)

		theirs := rs.NewMutex(name, redsync.WithTries(1), redsync.WithExpiry(10*time.Second))
		if err := theirs.Lock(); err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, cc := range ccs {
			if v, _ := cc.Get(ctx, name).Result(); v == theirs.Value() {
				held++ // redsync's key: the bare name, its random value
			}
		}
		if held < 2 {
			t.Fatalf("redsync's key %q is on %d clusters", name, held)
		}
		ours := c.NewMutex(name)
		mustIs(t, ours.TryLock(), redlock.ErrNotAcquired)
		if ok, err := theirs.Unlock(); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if err := ours.TryLock(); err != nil {
			t.Fatalf("after redsync unlocked: %v", err)
		}
		// Ours blocks redsync: the same key on the same shards.
		again := rs.NewMutex(name, redsync.WithTries(1))
		if err := again.Lock(); err == nil {
			t.Fatal("redsync acquired a lock redlock holds")
		} else {
			var taken *redsync.ErrTaken
			if !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) {
				t.Fatalf("redsync: %v", err)
			}
		}
		if ok, err := ours.Unlock(); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if err := again.Lock(); err != nil {
			t.Fatalf("redsync after redlock unlocked: %v", err)
		}
		again.Unlock()
	})
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
