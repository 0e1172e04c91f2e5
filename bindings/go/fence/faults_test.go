// SPDX-License-Identifier: BSD-3-Clause

// The fence under the fault it is for, in one process (the SIGSTOP version
// is tests/python/test_fence_faults.py): holders increment a counter under
// one lock; now and then one stalls between its read and its write until
// its lock has expired and another holder has written. Through the fence
// every late write is refused and no update is lost; without it, in the
// same test, each stall loses one.

package fence_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
	"github.com/redlock-project/redlock/bindings/go/fence"
)

// counter is the protected value, in some store.
type counter struct {
	advance func(ctx context.Context, token uint64) error // before the read; nil when unfenced
	read    func(ctx context.Context) (int64, error)
	write   func(ctx context.Context, token uint64, v int64) error
}

const (
	faultCycles = 12 // of the holder that stalls
	stallEvery  = 3  // its every third cycle
	faultExpiry = 150 * time.Millisecond
)

// runHolders runs three holders of resource on c against s, and returns
// the writes applied and refused, and the counter's final value.
func runHolders(t *testing.T, c *redlock.Client, resource string, s counter) (applied, refused, final int64) {
	ctx := context.Background()
	var done atomic.Bool
	var wg sync.WaitGroup
	cycle := func(stall bool) {
		m := c.NewMutex(resource, redlock.WithExpiry(faultExpiry))
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := m.LockContext(lctx); err != nil {
			return // the others held it throughout: try again
		}
		defer m.Unlock()
		token := m.Token()
		if s.advance != nil {
			if err := s.advance(ctx, token); err != nil {
				if errors.Is(err, redlock.ErrFenced) { // this lock ran out already: a slow machine
					atomic.AddInt64(&refused, 1)
					return
				}
				t.Error(err)
				return
			}
		}
		v, err := s.read(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		if stall { // until the lock ran out and another holder wrote
			deadline := time.Now().Add(10 * time.Second)
			for now, _ := s.read(ctx); now == v; now, _ = s.read(ctx) {
				if time.Now().After(deadline) {
					t.Error("no other holder wrote during the stall")
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		switch err := s.write(ctx, token, v+1); {
		case err == nil:
			atomic.AddInt64(&applied, 1)
		case errors.Is(err, redlock.ErrFenced):
			atomic.AddInt64(&refused, 1)
		default:
			t.Error(err)
		}
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := 1; i <= faultCycles; i++ {
			cycle(i%stallEvery == 0)
		}
	}()
	for w := 0; w < 2; w++ {
		go func() {
			defer wg.Done()
			for !done.Load() {
				cycle(false)
				time.Sleep(10 * time.Millisecond) // let the staller in
			}
		}()
	}
	wg.Wait()
	final, err := s.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return applied, refused, final
}

func faultClient(t *testing.T) *redlock.Client {
	c, err := redlock.NewClient(nodeURLs, redlock.WithFencing(), redlock.WithRetryDelay(20*time.Millisecond),
		redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// checkFaults checks the fenced and unfenced runs' outcomes.
func checkFaults(t *testing.T, fenced bool, applied, refused, final int64) {
	t.Helper()
	stalls := int64(faultCycles / stallEvery)
	t.Logf("fenced=%v: %d writes applied, %d refused, counter %d", fenced, applied, refused, final)
	if fenced {
		if final != applied {
			t.Errorf("fenced: counter %d after %d applied writes: %d updates lost", final, applied, applied-final)
		}
		if refused < stalls {
			t.Errorf("fenced: %d late writes refused, want at least the %d stalls", refused, stalls)
		}
	} else if lost := applied - final; lost < stalls || refused != 0 {
		t.Errorf("unfenced: %d updates lost (%d refused), want at least the %d stalls' (the fault not reproduced?)",
			lost, refused, stalls)
	}
}

func TestFaultsRedis(t *testing.T) {
	c, rdb := faultClient(t), stores[0]
	for _, fenced := range []bool{true, false} {
		r := name(t)
		key := "{" + r + "}:n"
		s := counter{
			read: func(ctx context.Context) (int64, error) {
				v, err := rdb.Get(ctx, key).Int64()
				if err == redis.Nil {
					return 0, nil
				}
				return v, err
			},
			write: func(ctx context.Context, _ uint64, v int64) error { return rdb.Set(ctx, key, v, 0).Err() },
		}
		if fenced {
			s.advance = func(ctx context.Context, token uint64) error {
				f, err := fence.New(rdb, r, token)
				if err == nil {
					_, err = f.Advance(ctx)
				}
				return err
			}
			s.write = func(ctx context.Context, token uint64, v int64) error {
				f, err := fence.New(rdb, r, token)
				if err == nil {
					err = f.Set(ctx, key, strconv.FormatInt(v, 10), 0)
				}
				return err
			}
		}
		applied, refused, final := runHolders(t, c, r, s)
		checkFaults(t, fenced, applied, refused, final)
	}
}

func TestFaultsPostgres(t *testing.T) {
	c := faultClient(t)
	db, tbl := table(t)
	for i, fenced := range []bool{true, false} {
		id := i + 1
		if _, err := db.Exec(`INSERT INTO "`+tbl+`" (id, qty) VALUES ($1, 0)`, id); err != nil {
			t.Fatal(err)
		}
		key := fence.Cols("id", id)
		s := counter{
			read: func(ctx context.Context) (v int64, err error) {
				err = db.QueryRowContext(ctx, `SELECT qty FROM "`+tbl+`" WHERE id = $1`, id).Scan(&v)
				return v, err
			},
			write: func(ctx context.Context, _ uint64, v int64) error {
				_, err := db.ExecContext(ctx, `UPDATE "`+tbl+`" SET qty = $1 WHERE id = $2`, v, id)
				return err
			},
		}
		if fenced {
			s.advance = func(ctx context.Context, token uint64) error {
				return fence.Update(ctx, db, tbl, key, nil, token) // raise the fence before the read
			}
			s.write = func(ctx context.Context, token uint64, v int64) error {
				return fence.Update(ctx, db, tbl, key, fence.Cols("qty", v), token)
			}
		}
		applied, refused, final := runHolders(t, c, tbl+strconv.Itoa(id), s)
		checkFaults(t, fenced, applied, refused, final)
	}
}
