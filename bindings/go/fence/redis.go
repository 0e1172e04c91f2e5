// SPDX-License-Identifier: BSD-3-Clause

// Package fence makes writes that the protected resource checks against a
// lock's fencing token (docs/fencing.md, "Protecting your store"): to keys
// on a Redis or Valkey store through a go-redis client, and to SQL rows
// through database/sql. A write is applied only while its token is at
// least the highest the resource has seen, and records it, atomically in
// the store; an older token gets a *StaleTokenError (errors.Is
// redlock.ErrFenced) naming both tokens, and nothing is written.
//
// The Redis side runs the C library's one script (redlock.FenceScript),
// so the token comparison (64-bit integers, never floats), the fence key's
// name and its lifetime are the library's. It is a module of its own so
// that the redlock module gains no go-redis dependency; see docs/go.md.
package fence

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// StaleTokenError is the refusal of a fenced write: Token, the write's, is
// older than Fence, the highest the resource has seen (a later holder has
// written). errors.Is(err, redlock.ErrFenced) holds for it.
type StaleTokenError struct {
	Resource string // the Redis resource, or the SQL table and key
	Token    uint64 // the refused write's token
	Fence    uint64 // the resource's fence when the write was refused
	Detail   string // the store's reply
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("fence: %s: token %d is older than %d, the resource's fence: a later holder has written",
		e.Resource, e.Token, e.Fence)
}

// Unwrap makes errors.Is(err, redlock.ErrFenced) true.
func (e *StaleTokenError) Unwrap() error { return redlock.ErrFenced }

func invalid(format string, args ...any) error {
	return fmt.Errorf("fence: "+format+": %w", append(args, redlock.ErrInvalid)...)
}

// Option changes a Fence made by New.
type Option func(*Fence) error

// WithRetention sets how long the fence outlives the resource's last
// fenced write (default redlock.FenceRetention, seven days; at least 1ms):
// a holder stalled longer than that after it is not fenced, and a
// resource no longer written to leaves no key behind.
func WithRetention(d time.Duration) Option {
	return func(f *Fence) error {
		if d < time.Millisecond {
			return invalid("retention must be at least 1ms, got %v", d)
		}
		f.retention = d
		return nil
	}
}

// Fence writes to one resource on a Redis or Valkey store (not necessarily
// a lock node) with one token. Safe for concurrent use.
type Fence struct {
	rdb       redis.Scripter
	resource  string
	key       string
	token     uint64
	retention time.Duration
}

// New makes the Fence of resource with token (1 to 2^64-1: a Mutex's
// Token with redlock.WithFencing, or one handed to a worker). rdb is a
// go-redis client (*redis.Client, *redis.ClusterClient, *redis.Ring...).
// On a cluster store, name data keys with the resource's hash tag
// ("{orders}:17" for the resource "{orders}") or the store refuses the
// script (CROSSSLOT).
func New(rdb redis.Scripter, resource string, token uint64, opts ...Option) (*Fence, error) {
	if rdb == nil {
		return nil, invalid("nil store client")
	}
	if token == 0 {
		return nil, invalid("token must be from 1 to 2^64-1, got 0 (a lock made without WithFencing, or not held?)")
	}
	key, err := redlock.FenceKey(resource)
	if err != nil {
		return nil, err
	}
	f := &Fence{rdb: rdb, resource: resource, key: key, token: token, retention: redlock.FenceRetention}
	for _, o := range opts {
		if err := o(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Holder is what ForMutex takes: a *redlock.Mutex (also a Writer, a
// Reader, a MultiMutex's or a semaphore permit's Mutex).
type Holder interface {
	Name() string
	Token() uint64
}

// ForMutex is New for the resource named as the lock m and the token of
// its current acquisition. It fails with an error matching
// redlock.ErrState when m has no token: not held, or its client was made
// without redlock.WithFencing. The Fence keeps the token it was made
// with; make a new one after each acquisition.
func ForMutex(rdb redis.Scripter, m Holder, opts ...Option) (*Fence, error) {
	token := m.Token()
	if token == 0 {
		return nil, fmt.Errorf("fence: %q: no fencing token: the lock is not held, or its client was made "+
			"without WithFencing: %w", m.Name(), redlock.ErrState)
	}
	return New(rdb, m.Name(), token, opts...)
}

// Key is the store key holding the resource's fence (redlock.FenceKey).
func (f *Fence) Key() string { return f.key }

// Token is the token this Fence writes with.
func (f *Fence) Token() uint64 { return f.token }

// Resource is the resource this Fence protects.
func (f *Fence) Resource() string { return f.resource }

func (f *Fence) run(ctx context.Context, op, key string, args ...any) (any, error) {
	keys := []string{f.key}
	if op != "advance" {
		keys = append(keys, key)
	}
	argv := append([]any{strconv.FormatUint(f.token, 10), strconv.FormatInt(f.retention.Milliseconds(), 10), op}, args...)
	r, err := f.rdb.EvalSha(ctx, redlock.FenceScriptSHA1(), keys, argv...).Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		r, err = f.rdb.Eval(ctx, redlock.FenceScript(), keys, argv...).Result()
	}
	if err != nil && redis.HasErrorPrefix(err, "FENCED") {
		return nil, f.refusal(err)
	}
	return r, err
}

// refusal makes a *StaleTokenError of the script's "FENCED <token> <fence>
// ...", read by the C library (redlock.FenceRefusal); any other error is
// returned as it is.
func (f *Fence) refusal(err error) error {
	msg := err.Error()
	t, seen, ok := redlock.FenceRefusal(msg)
	if !ok {
		return err
	}
	return &StaleTokenError{Resource: f.resource, Token: t, Fence: seen, Detail: msg}
}

func asInt(r any, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, ok := r.(int64)
	if !ok {
		return 0, fmt.Errorf("fence: unexpected reply %T %v", r, r)
	}
	return n, nil
}

// Advance raises the fence to this token without writing data and returns
// the fence it had (0: none). A new holder calls it first, before it reads
// what it will write: from then on the previous holder's late writes are
// refused.
func (f *Fence) Advance(ctx context.Context) (uint64, error) {
	r, err := f.run(ctx, "advance", "")
	if err != nil {
		return 0, err
	}
	s, ok := r.(string)
	if !ok {
		return 0, fmt.Errorf("fence: unexpected reply %T %v to advance", r, r)
	}
	return strconv.ParseUint(s, 10, 64)
}

// Set is SET key value [PX px], fenced; px 0 sets no expiry.
func (f *Fence) Set(ctx context.Context, key string, value any, px time.Duration) error {
	args := []any{value}
	if px < 0 || (px > 0 && px < time.Millisecond) {
		return invalid("px must be 0 (none) or at least 1ms, got %v", px)
	}
	if px > 0 {
		args = append(args, strconv.FormatInt(px.Milliseconds(), 10))
	}
	_, err := f.run(ctx, "set", key, args...)
	return err
}

// Del is DEL key, fenced; it returns the number of keys removed.
func (f *Fence) Del(ctx context.Context, key string) (int64, error) {
	return asInt(f.run(ctx, "del", key))
}

// HSet is HSET key field value [field value ...], fenced; it returns the
// number of fields added.
func (f *Fence) HSet(ctx context.Context, key string, fieldsAndValues ...any) (int64, error) {
	if len(fieldsAndValues) == 0 || len(fieldsAndValues)%2 != 0 {
		return 0, invalid("hset needs field value pairs, got %d arguments", len(fieldsAndValues))
	}
	return asInt(f.run(ctx, "hset", key, fieldsAndValues...))
}

// RPush is RPUSH key value [value ...], fenced; it returns the list's length.
func (f *Fence) RPush(ctx context.Context, key string, values ...any) (int64, error) {
	if len(values) == 0 {
		return 0, invalid("rpush needs at least one value")
	}
	return asInt(f.run(ctx, "rpush", key, values...))
}

// IncrBy is INCRBY key n, fenced; it returns the value after it.
func (f *Fence) IncrBy(ctx context.Context, key string, n int64) (int64, error) {
	return asInt(f.run(ctx, "incrby", key, strconv.FormatInt(n, 10)))
}
