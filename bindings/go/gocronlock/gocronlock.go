// SPDX-License-Identifier: BSD-3-Clause

// Package gocronlock is a go-co-op/gocron v2 distributed Locker on redlock:
// schedulers in several processes or hosts, each given the same Locker
// (gocron.WithDistributedLocker), run each job's tick once in all.
//
//	client, _ := redlock.NewClient(urls)
//	s, _ := gocron.NewScheduler(gocron.WithDistributedLocker(
//		gocronlock.New(client, gocronlock.WithMinHold(500*time.Millisecond))))
//
// It is its own Go module, so that the redlock module gains no gocron
// dependency for those who do not use it. See docs/go.md.
package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// DefaultTTL is the lock's expiry when WithTTL is not given: how long a
// crashed process's lock keeps the job from running elsewhere.
const DefaultTTL = 30 * time.Second

// Locker implements gocron.Locker on a redlock.Client.
type Locker struct {
	client  *redlock.Client
	ttl     time.Duration
	minHold time.Duration
	prefix  string
	opts    []redlock.Option
}

var _ gocron.Locker = (*Locker)(nil)

// Option configures a Locker.
type Option func(*Locker)

// WithTTL sets the lock's expiry (default DefaultTTL; ShedLock's
// lockAtMostFor). While the job runs the lock is auto-extended, so a job may
// run longer; the TTL bounds how long the lock of a process that died
// outlives it.
func WithTTL(d time.Duration) Option { return func(l *Locker) { l.ttl = d } }

// WithMinHold keeps each lock at least d from its acquisition (ShedLock's
// lockAtLeastFor): a job that returns sooner leaves the lock held until then,
// so the same tick fired by another scheduler a little later (clocks differ,
// schedulers wake at slightly different times) finds it taken. Choose d
// longer than the spread of the hosts' clocks and shorter than the job's
// interval. Default 0: released as soon as the job returns.
func WithMinHold(d time.Duration) Option { return func(l *Locker) { l.minHold = d } }

// WithKeyPrefix puts prefix before gocron's key (the job's name) in the lock
// name, e.g. the application's name. Default "gocron:".
func WithKeyPrefix(prefix string) Option { return func(l *Locker) { l.prefix = prefix } }

// WithMutexOptions passes options to each redlock Mutex (WithTries,
// WithRetryDelay, ...). By default a Lock makes one attempt (WithTries(1)):
// a scheduler whose job is running elsewhere skips the tick.
func WithMutexOptions(opts ...redlock.Option) Option {
	return func(l *Locker) { l.opts = append(l.opts, opts...) }
}

// New returns a Locker over client. The client stays the caller's to close.
func New(client *redlock.Client, opts ...Option) *Locker {
	l := &Locker{client: client, ttl: DefaultTTL, prefix: "gocron:"}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Lock takes the lock of key (gocron's job name) in one attempt. It fails,
// and gocron skips the run, when the lock is held elsewhere (an error
// matching redlock.ErrNotAcquired) or cannot be had (no quorum...).
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if key == "" {
		return nil, fmt.Errorf("gocronlock: empty key: give the job a name (gocron.WithName)")
	}
	if l.ttl <= 0 || l.minHold < 0 {
		return nil, fmt.Errorf("gocronlock: TTL %v must be positive and MinHold %v not negative", l.ttl, l.minHold)
	}
	opts := append([]redlock.Option{redlock.WithTries(1), redlock.WithExpiry(l.ttl)}, l.opts...)
	m := l.client.NewMutex(l.prefix+key, opts...)
	if err := m.TryLockContext(ctx); err != nil {
		return nil, err
	}
	if err := m.AutoExtend(0); err != nil {
		_, _ = m.Unlock()
		return nil, err
	}
	return &lock{m: m, start: time.Now(), minHold: l.minHold}, nil
}

type lock struct {
	m       *redlock.Mutex
	start   time.Time
	minHold time.Duration
}

// Unlock releases the lock, or, before MinHold has passed, stops extending it
// and releases it in the background once MinHold has passed. An error
// matching redlock.ErrLost says that the lock was lost while the job ran.
func (k *lock) Unlock(ctx context.Context) error {
	left := k.minHold - time.Since(k.start)
	if left <= 0 {
		_, err := k.m.UnlockContext(ctx)
		return err
	}
	if err := k.m.StopAutoExtend(); err != nil && !errors.Is(err, redlock.ErrState) {
		return err
	}
	if ok, err := k.m.Valid(); !ok || err != nil {
		if err == nil {
			err = redlock.ErrLost
		}
		return err
	}
	time.AfterFunc(left, func() { _, _ = k.m.Unlock() })
	return nil
}
