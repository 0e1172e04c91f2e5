// SPDX-License-Identifier: BSD-3-Clause

// The Redis/Valkey side on a Redis and a Valkey server: the edge cases of
// tests/python/test_fence.py, in Go.

package fence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
	"github.com/redlock-project/redlock/bindings/go/fence"
)

var seq atomic.Int64

// name is a resource name no other test (or run, on a reused node) uses.
func name(t *testing.T) string {
	return fmt.Sprintf("fence-go-%d-%d", time.Now().UnixNano(), seq.Add(1))
}

// eachStore runs f on the Redis server and on the Valkey server.
func eachStore(t *testing.T, f func(t *testing.T, rdb *redis.Client)) {
	for i, kind := range []string{"redis", "valkey"} {
		t.Run(kind, func(t *testing.T) { f(t, stores[i]) })
	}
}

func newFence(t *testing.T, rdb redis.Scripter, resource string, token uint64, opts ...fence.Option) *fence.Fence {
	t.Helper()
	f, err := fence.New(rdb, resource, token, opts...)
	if err != nil {
		t.Fatalf("fence.New(%q, %d): %v", resource, token, err)
	}
	return f
}

// refused checks that err is the refusal of token by fence.
func refused(t *testing.T, err error, token, seen uint64) {
	t.Helper()
	var st *fence.StaleTokenError
	if !errors.As(err, &st) || !errors.Is(err, redlock.ErrFenced) {
		t.Fatalf("want a *fence.StaleTokenError matching redlock.ErrFenced, got %T %v", err, err)
	}
	if st.Token != token || st.Fence != seen {
		t.Fatalf("refusal names token %d, fence %d; want %d, %d (%v)", st.Token, st.Fence, token, seen, err)
	}
}

func get(t *testing.T, rdb *redis.Client, key string) string {
	t.Helper()
	v, err := rdb.Get(context.Background(), key).Result()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return v
}

func TestFenceKeyName(t *testing.T) {
	for in, want := range map[string]string{"orders": "{orders}:fence", "{orders}": "{orders}:fence",
		"{orders}:17": "{orders}:17:fence", "a b": "{a b}:fence"} {
		if got, err := redlock.FenceKey(in); err != nil || got != want {
			t.Errorf("FenceKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a}b", "x\x00y"} {
		if _, err := redlock.FenceKey(bad); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("FenceKey(%q): want ErrInvalid, got %v", bad, err)
		}
	}
	if len(redlock.FenceScriptSHA1()) != 40 || redlock.FenceScript() == "" {
		t.Fatalf("script %d bytes, sha %q", len(redlock.FenceScript()), redlock.FenceScriptSHA1())
	}
}

func TestInvalidArguments(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		resource string
		token    uint64
		opts     []fence.Option
	}{{"r", 0, nil}, {"", 1, nil}, {"a}b", 1, nil}, {"r", 1, []fence.Option{fence.WithRetention(0)}},
		{"r", 1, []fence.Option{fence.WithRetention(time.Microsecond)}}} {
		if _, err := fence.New(stores[0], c.resource, c.token, c.opts...); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("New(%q, %d): want ErrInvalid, got %v", c.resource, c.token, err)
		}
	}
	if _, err := fence.New(nil, "r", 1); !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("New(nil store): want ErrInvalid, got %v", err)
	}
	f := newFence(t, stores[0], name(t), 1)
	if _, err := f.HSet(ctx, "k", "field"); !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("HSet with an odd count: want ErrInvalid, got %v", err)
	}
	if _, err := f.RPush(ctx, "k"); !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("RPush of nothing: want ErrInvalid, got %v", err)
	}
	if err := f.Set(ctx, "k", "v", -time.Second); !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("Set with px < 0: want ErrInvalid, got %v", err)
	}
	if err := f.Set(ctx, f.Key(), "v", 0); err == nil {
		t.Errorf("Set of the fence key itself: want the script's refusal, got nil")
	}
}

func TestFirstWriteEqualAndOlder(t *testing.T) {
	eachStore(t, func(t *testing.T, rdb *redis.Client) {
		ctx, r := context.Background(), name(t)
		data := "{" + r + "}:v"
		f10 := newFence(t, rdb, r, 10)
		if err := f10.Set(ctx, data, "a", 0); err != nil { // first write: no fence yet
			t.Fatal(err)
		}
		if got := get(t, rdb, f10.Key()); got != "10" {
			t.Fatalf("fence after the first write = %q, want 10", got)
		}
		if err := newFence(t, rdb, r, 10).Set(ctx, data, "b", 0); err != nil { // equal token
			t.Fatalf("equal token refused: %v", err)
		}
		// 9 < 10 although "9" > "10" as strings.
		refused(t, newFence(t, rdb, r, 9).Set(ctx, data, "late", 0), 9, 10)
		if got := get(t, rdb, data); got != "b" {
			t.Fatalf("data after a refused write = %q, want b", got)
		}
		if err := newFence(t, rdb, r, 11).Set(ctx, data, "c", 0); err != nil {
			t.Fatal(err)
		}
		refused(t, f10.Set(ctx, data, "late", 0), 10, 11)
	})
}

func TestTokensBeyondFloats(t *testing.T) {
	eachStore(t, func(t *testing.T, rdb *redis.Client) {
		ctx, r := context.Background(), name(t)
		const p53 = uint64(1) << 53 // a double cannot tell 2^53 from 2^53+1
		if err := newFence(t, rdb, r, p53+1).Set(ctx, r+":v", "a", 0); err != nil {
			t.Fatal(err)
		}
		refused(t, newFence(t, rdb, r, p53).Set(ctx, r+":v", "b", 0), p53, p53+1)
		top := uint64(math.MaxUint64)
		if err := newFence(t, rdb, r, top-1).Set(ctx, r+":v", "c", 0); err != nil {
			t.Fatal(err)
		}
		if err := newFence(t, rdb, r, top).Set(ctx, r+":v", "d", 0); err != nil {
			t.Fatal(err)
		}
		refused(t, newFence(t, rdb, r, top-1).Set(ctx, r+":v", "e", 0), top-1, top)
		refused(t, newFence(t, rdb, r, 9).Set(ctx, r+":v", "e", 0), 9, top)
		if got := get(t, rdb, r+":v"); got != "d" {
			t.Fatalf("data = %q, want d", got)
		}
		if got := get(t, rdb, "{"+r+"}:fence"); got != strconv.FormatUint(top, 10) {
			t.Fatalf("fence = %q, want 2^64-1", got)
		}
	})
}

func TestEveryOperation(t *testing.T) {
	eachStore(t, func(t *testing.T, rdb *redis.Client) {
		ctx, r := context.Background(), name(t)
		f, old := newFence(t, rdb, r, 5), newFence(t, rdb, r, 4)
		s, h, l, n := r+":s", r+":h", r+":l", r+":n"
		if err := f.Set(ctx, s, "v", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if ttl := rdb.PTTL(ctx, s).Val(); ttl <= 25*time.Second || ttl > 30*time.Second {
			t.Fatalf("Set PX 30s: PTTL %v", ttl)
		}
		if got, err := f.HSet(ctx, h, "a", 1, "b", "two"); err != nil || got != 2 {
			t.Fatalf("HSet = %d, %v; want 2", got, err)
		}
		if got, err := f.RPush(ctx, l, "x", "y", 3); err != nil || got != 3 {
			t.Fatalf("RPush = %d, %v; want 3", got, err)
		}
		if got, err := f.IncrBy(ctx, n, 7); err != nil || got != 7 {
			t.Fatalf("IncrBy = %d, %v; want 7", got, err)
		}
		if got, err := f.IncrBy(ctx, n, -2); err != nil || got != 5 {
			t.Fatalf("IncrBy -2 = %d, %v; want 5", got, err)
		}
		// The older token changes none of them.
		refused(t, old.Set(ctx, s, "late", 0), 4, 5)
		_, err := old.HSet(ctx, h, "a", "late")
		refused(t, err, 4, 5)
		_, err = old.RPush(ctx, l, "late")
		refused(t, err, 4, 5)
		_, err = old.IncrBy(ctx, n, 100)
		refused(t, err, 4, 5)
		_, err = old.Del(ctx, s)
		refused(t, err, 4, 5)
		if get(t, rdb, s) != "v" || rdb.HGet(ctx, h, "a").Val() != "1" || rdb.LLen(ctx, l).Val() != 3 || get(t, rdb, n) != "5" {
			t.Fatalf("a refused write changed the data: %q %v %v %q", get(t, rdb, s),
				rdb.HGetAll(ctx, h).Val(), rdb.LRange(ctx, l, 0, -1).Val(), get(t, rdb, n))
		}
		if got, err := f.Del(ctx, s); err != nil || got != 1 {
			t.Fatalf("Del = %d, %v; want 1", got, err)
		}
		if got, err := f.Del(ctx, s); err != nil || got != 0 {
			t.Fatalf("Del again = %d, %v; want 0", got, err)
		}
	})
}

func TestAdvance(t *testing.T) {
	eachStore(t, func(t *testing.T, rdb *redis.Client) {
		ctx, r := context.Background(), name(t)
		if prev, err := newFence(t, rdb, r, 3).Advance(ctx); err != nil || prev != 0 {
			t.Fatalf("first Advance = %d, %v; want 0", prev, err)
		}
		big := uint64(1)<<63 + 12345
		if prev, err := newFence(t, rdb, r, big).Advance(ctx); err != nil || prev != 3 {
			t.Fatalf("Advance = %d, %v; want 3", prev, err)
		}
		if prev, err := newFence(t, rdb, r, big).Advance(ctx); err != nil || prev != big {
			t.Fatalf("Advance with the same token = %d, %v; want %d", prev, err, big)
		}
		_, err := newFence(t, rdb, r, 3).Advance(ctx)
		refused(t, err, 3, big)
		// The old holder's write after the new holder's Advance: refused, nothing written.
		refused(t, newFence(t, rdb, r, 3).Set(ctx, r+":v", "late", 0), 3, big)
		if n := rdb.Exists(ctx, r+":v").Val(); n != 0 {
			t.Fatal("the refused write created the data key")
		}
	})
}

func TestRetentionAndAFenceGoneMidRun(t *testing.T) {
	eachStore(t, func(t *testing.T, rdb *redis.Client) {
		ctx, r := context.Background(), name(t)
		f := newFence(t, rdb, r, 8, fence.WithRetention(30*time.Second))
		if err := f.Set(ctx, r+":v", "a", 0); err != nil {
			t.Fatal(err)
		}
		if ttl := rdb.PTTL(ctx, f.Key()).Val(); ttl <= 25*time.Second || ttl > 30*time.Second {
			t.Fatalf("fence PTTL %v, want about 30s (no key left forever)", ttl)
		}
		if err := newFence(t, rdb, r, 9, fence.WithRetention(5*time.Second)).Set(ctx, r+":v", "b", 0); err != nil {
			t.Fatal(err)
		}
		if ttl := rdb.PTTL(ctx, f.Key()).Val(); ttl <= 25*time.Second {
			t.Fatalf("a shorter retention cut the fence's PTTL to %v", ttl)
		}
		if _, err := newFence(t, rdb, r, 10).Advance(ctx); err != nil { // the default: seven days
			t.Fatal(err)
		}
		if ttl := rdb.PTTL(ctx, f.Key()).Val(); ttl <= redlock.FenceRetention-time.Minute || ttl > redlock.FenceRetention {
			t.Fatalf("fence PTTL %v with the default retention, want about %v", ttl, redlock.FenceRetention)
		}
		// The fence key lost (evicted, flushed): the next write recreates it,
		// and what the store no longer knows is no longer refused.
		if err := rdb.Del(ctx, f.Key()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := f.Set(ctx, r+":v", "c", 0); err != nil {
			t.Fatalf("write after the fence key was deleted: %v", err)
		}
		if got := get(t, rdb, f.Key()); got != "8" {
			t.Fatalf("recreated fence = %q, want 8", got)
		}
		refused(t, newFence(t, rdb, r, 7).Set(ctx, r+":v", "d", 0), 7, 8)
	})
}

func TestNoScriptFallback(t *testing.T) {
	eachStore(t, func(t *testing.T, rdb *redis.Client) {
		ctx, r := context.Background(), name(t)
		sha := redlock.FenceScriptSHA1()
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if ok := rdb.ScriptExists(ctx, sha).Val(); len(ok) != 1 || ok[0] {
			t.Fatalf("SCRIPT EXISTS after SCRIPT FLUSH: %v", ok)
		}
		if err := newFence(t, rdb, r, 2).Set(ctx, r+":v", "a", 0); err != nil {
			t.Fatalf("write after SCRIPT FLUSH (NOSCRIPT, then EVAL): %v", err)
		}
		if ok := rdb.ScriptExists(ctx, sha).Val(); len(ok) != 1 || !ok[0] {
			t.Fatalf("EVAL did not load the script under the SHA the library gives: %v", ok)
		}
		rdb.ScriptFlush(ctx)
		refused(t, newFence(t, rdb, r, 1).Set(ctx, r+":v", "b", 0), 1, 2) // the refusal, too, after NOSCRIPT
		if got := get(t, rdb, r+":v"); got != "a" {
			t.Fatalf("data = %q, want a", got)
		}
	})
}

// A lock's tokens through the fence: the holder before a later one is refused.
func TestWithALocksToken(t *testing.T) {
	ctx, r := context.Background(), name(t)
	c, err := redlock.NewClient(nodeURLs, redlock.WithFencing(), redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store := stores[1]
	first := c.NewMutex(r, redlock.WithExpiry(10*time.Second))
	if err := first.Lock(); err != nil {
		t.Fatal(err)
	}
	t1 := first.Token()
	stale := newFence(t, store, r, t1)
	if _, err := stale.IncrBy(ctx, r+":n", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Unlock(); err != nil { // as if its validity had run out
		t.Fatal(err)
	}
	second := c.NewMutex(r, redlock.WithExpiry(10*time.Second))
	if err := second.Lock(); err != nil {
		t.Fatal(err)
	}
	defer second.Unlock()
	t2 := second.Token()
	if t2 <= t1 {
		t.Fatalf("tokens %d then %d do not increase", t1, t2)
	}
	f, err := fence.ForMutex(store, second)
	if err != nil || f.Token() != t2 || f.Resource() != r {
		t.Fatalf("ForMutex: %v, %v", f, err)
	}
	if _, err := fence.ForMutex(store, first); !errors.Is(err, redlock.ErrState) { // no longer held
		t.Fatalf("ForMutex of a released lock: want ErrState, got %v", err)
	}
	if prev, err := f.Advance(ctx); err != nil || prev != t1 {
		t.Fatalf("Advance = %d, %v; want %d", prev, err, t1)
	}
	_, err = stale.IncrBy(ctx, r+":n", 1)
	refused(t, err, t1, t2)
	if got, err := f.IncrBy(ctx, r+":n", 1); err != nil || got != 2 {
		t.Fatalf("IncrBy = %d, %v; want 2 (no lost or late update)", got, err)
	}
}
