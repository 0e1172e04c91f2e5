// SPDX-License-Identifier: BSD-3-Clause

// Options for NewClient and NewMutex, with go-redsync v4's names and
// defaults. One Option type serves both: a Mutex starts from its client's
// settings, and its own acquisition policy (tries, delays, drift) goes onto
// its C lock handle, never into a client of its own.

//go:build cgo

package redlock

// #include <stdlib.h>
// #include "redlock.h"
//
// /* redlock_options_init may be a function-like macro (it records the struct
//  * version of this header), which cgo cannot call; C code can. */
// static void rl_go_options_init(redlock_options *o) { redlock_options_init(o); }
import "C"

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unsafe"
)

// Defaults, go-redsync v4's: a Mutex lives 8 s on the nodes, Lock makes up
// to 32 attempts, and waits 50 ms plus a random 0-200 ms between them (its
// rand(50 ms, 250 ms)).
const (
	DefaultExpiry      = 8 * time.Second
	DefaultTries       = 32
	DefaultRetryDelay  = 50 * time.Millisecond
	DefaultRetryJitter = 200 * time.Millisecond
)

// A DelayFunc gives the pause before attempt number tries+1 of a Lock
// (tries counts the attempts made so far, from 1), as go-redsync's does.
type DelayFunc func(tries int) time.Duration

// settings are the client-level values that go into C's redlock_options.
// It is comparable, so NewMutex can tell whether a mutex's options differ
// from its client's.
type settings struct {
	retryCount       uint32
	retryDelayMs     uint32
	retryJitterMs    uint32
	delaySet         bool
	jitterSet        bool
	driftFactor      float64
	nodeTimeoutMs    uint32
	connectTimeoutMs uint32
	unreachableMs    uint32 // C's unreachable_ms: 0 = its default
	keyPrefix        string
	maxExtensions    uint32
	maxHoldMs        uint32
	functions        bool
	fencing          bool
	noQuarantine     bool       // WithQuarantine(false)
	quarantineTTLMs  uint32     // WithQuarantineTTL: 0 = what the markers record
	wake             bool       // WithWake(true): a release wakes a waiter
	fair             bool       // WithFair(true)
	hook             *eventHook // WithEventHandler; compared by identity
	tlsCAFile        string
	tlsCADir         string
	tlsCertFile      string
	tlsKeyFile       string
	tlsServerName    string
	tlsInsecure      bool
}

type config struct {
	s         settings
	expiry    time.Duration
	delayFunc DelayFunc // WithRetryDelayFunc: Go paces the attempts
	// timeoutFactor (WithTimeoutFactor) makes the node timeout this
	// fraction of the expiry; 0 when not given.
	timeoutFactor float64
	// clientOnly names the options given that C keeps per client; NewMutex
	// refuses them rather than open a client (and connections) per Mutex.
	clientOnly []string
	err        error // the first invalid option
}

// Option configures NewClient or NewMutex. The acquisition policy
// (WithExpiry, WithTries, WithRetryDelay, WithRetryJitter,
// WithRetryDelayFunc, WithDriftFactor, WithWake, WithFair) works on both: on NewClient it is the
// default of the client's mutexes, on NewMutex it is that Mutex's, carried
// by its C lock handle over the client's connections. The other options
// shape the client itself (connections, timeouts, key prefix, bounds, TLS,
// fencing, events) and belong on NewClient; a Mutex given one of them
// returns an error matching ErrInvalid from every operation.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func defaultConfig() config {
	var o C.redlock_options
	C.rl_go_options_init(&o)
	return config{
		s: settings{
			retryCount:       DefaultTries - 1,
			retryDelayMs:     uint32(DefaultRetryDelay / time.Millisecond),
			retryJitterMs:    uint32(DefaultRetryJitter / time.Millisecond),
			driftFactor:      float64(o.drift_factor),
			nodeTimeoutMs:    uint32(o.node_timeout_ms),
			connectTimeoutMs: uint32(o.connect_timeout_ms),
			maxExtensions:    uint32(o.max_extensions),
			maxHoldMs:        uint32(o.max_hold_ms),
		},
		expiry: DefaultExpiry,
	}
}

// client records that a client-level option was given.
func (c *config) client(name string) { c.clientOnly = append(c.clientOnly, name) }

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = &Error{Op: "option", Code: int(C.REDLOCK_EINVAL), Detail: fmt.Sprintf(format, args...)}
	}
}

// millis converts d to whole milliseconds, rounding up so that a small
// positive duration never becomes 0 (which C reads as "none" or rejects).
func (c *config) millis(name string, d time.Duration) uint32 {
	if d < 0 {
		c.fail("%s: negative duration %v", name, d)
		return 0
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxUint32 {
		c.fail("%s: duration %v is too long", name, d)
		return 0
	}
	return uint32(ms)
}

// WithTries sets the number of attempts Lock makes (go-redsync's meaning:
// the first attempt plus n-1 retries; default 32); n must be at least 1.
func WithTries(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 || uint64(n-1) > math.MaxUint32 {
			c.fail("WithTries: %d attempts (want at least 1)", n)
			return
		}
		c.s.retryCount = uint32(n - 1)
	})
}

// WithRetryDelay sets the fixed pause between attempts (go-redsync's
// meaning). It also turns the random part off unless WithRetryJitter is
// given too, and replaces a WithRetryDelayFunc given before it.
func WithRetryDelay(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.s.retryDelayMs = c.millis("WithRetryDelay", d)
		c.s.delaySet = true
		c.delayFunc = nil
	})
}

// WithRetryDelayFunc lets f choose the pause before each new attempt of
// Lock and LockContext: f(1) before the second, f(2) before the third, and
// so on, as in go-redsync. Each attempt and the pause after it are one C
// wait: as with WithRetryDelay, a release wakes the waiter (WithWake) and it
// tries again at once, and the pause is cut short when the context is done.
// A negative duration counts as 0. nil goes back to WithRetryDelay and
// WithRetryJitter's pauses.
func WithRetryDelayFunc(f DelayFunc) Option {
	return optionFunc(func(c *config) { c.delayFunc = f })
}

// WithRetryJitter sets the random part added to each pause between
// attempts: uniform in [0, d].
func WithRetryJitter(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.s.retryJitterMs = c.millis("WithRetryJitter", d)
		c.s.jitterSet = true
	})
}

// WithDriftFactor sets the clock drift allowance, a fraction of the expiry
// subtracted from the validity (default 0.01, as go-redsync's; C adds 2 ms).
func WithDriftFactor(f float64) Option {
	return optionFunc(func(c *config) { c.s.driftFactor = f })
}

// WithWake chooses how a waiting Lock or LockContext spends the pauses
// between its attempts. With false, the default, it polls, with
// WithRetryDelay and WithRetryJitter, as redsync does. With true it is
// woken as soon as the holder releases the lock: the nodes keep a queue of
// waiters per name, and each release wakes one, which tries again at once.
// The client listens for that on one more connection per node
// (Client.Listeners). Wake-up hands a lock over in about a millisecond and
// starves no waiter; under contention it costs the nodes more CPU per
// acquisition than polling (docs/performance.md). Releases wake other
// clients' waiters whatever this says, and elections wake their candidates.
// Where a node's listener is not ready (down, or the node refuses
// SUBSCRIBE: an ACL user without the channel &redlock:wake:*), waiters poll
// anyway. WithRetryDelayFunc's pauses are cut short by a release too.
func WithWake(on bool) Option {
	return optionFunc(func(c *config) { c.s.wake = on })
}

// WithFair turns fair mode on or off (default off). In fair mode the nodes
// refuse a lock that becomes free to anyone but the waiter that has waited
// longest, as Redisson's fair lock serves its queue. It holds only when
// every contender of a name uses it. Fair waiters are woken by releases
// (fair mode implies wake-up).
func WithFair(on bool) Option {
	return optionFunc(func(c *config) { c.s.fair = on })
}

// WithNodeTimeout sets how long one round waits for each node's reply.
func WithNodeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.client("WithNodeTimeout")
		c.s.nodeTimeoutMs = c.millis("WithNodeTimeout", d)
		c.timeoutFactor = 0
	})
}

// WithTimeoutFactor makes the per-node reply deadline of a round this
// fraction of the client's expiry (WithExpiry given to NewClient, else 8 s),
// as go-redsync's timeout factor does with each mutex's expiry. The C
// library keeps that deadline per client, so this is a client option:
// NewMutex refuses it. Without it the deadline is WithNodeTimeout's (50 ms by
// default), which is what keeps a slow node from slowing every lock.
func WithTimeoutFactor(f float64) Option {
	return optionFunc(func(c *config) {
		c.client("WithTimeoutFactor")
		if !(f > 0 && f < 1) {
			c.fail("WithTimeoutFactor: %v (want 0 < factor < 1)", f)
			return
		}
		c.timeoutFactor = f
	})
}

// WithFailFast is accepted for go-redsync compatibility and changes
// nothing: every round already ends as soon as a majority has said yes, or
// can no longer say it, whatever the other nodes are doing.
func WithFailFast(bool) Option { return optionFunc(func(*config) {}) }

// WithShufflePools is accepted for go-redsync compatibility and changes
// nothing: every round sends to all nodes at once, so their order does not
// matter.
func WithShufflePools(bool) Option { return optionFunc(func(*config) {}) }

// WithConnectTimeout sets the extra time allowed when a node's connection
// has to be made first.
func WithConnectTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.client("WithConnectTimeout")
		c.s.connectTimeoutMs = c.millis("WithConnectTimeout", d)
	})
}

// WithUnreachableTimeout bounds how long a waiting Lock goes on while no
// quorum of nodes can even be reached (connections refused, host names that
// do not resolve, connects timing out): then it fails with an error matching
// ErrUnreachable (and ErrFailed) that names each node. A lock held elsewhere,
// or a slow node, still waits as the tries and the context allow. 0 (the
// default) is the C library's default, five connect timeouts (1 s with the
// defaults); a negative d waits on.
func WithUnreachableTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.client("WithUnreachableTimeout")
		switch {
		case d < 0:
			c.s.unreachableMs = C.REDLOCK_UNREACHABLE_NEVER
		case d > 0:
			ms := c.millis("WithUnreachableTimeout", d)
			if ms > C.REDLOCK_MAX_WAIT_MS {
				c.fail("WithUnreachableTimeout: %v is longer than seven days (REDLOCK_MAX_WAIT_MS)", d)
				return
			}
			c.s.unreachableMs = ms
		default:
			c.s.unreachableMs = 0
		}
	})
}

// str records s for a C string option, refusing NUL bytes (C would see a
// shorter string).
func (c *config) str(name, s string, dst *string) {
	if strings.IndexByte(s, 0) >= 0 {
		c.fail("%s: contains a NUL byte", name)
		return
	}
	*dst = s
}

// WithKeyPrefix sets a prefix put before every mutex name to make the key
// on the nodes. go-redsync uses no prefix; keep it empty to share keys with it.
func WithKeyPrefix(p string) Option {
	return optionFunc(func(c *config) { c.client("WithKeyPrefix"); c.str("WithKeyPrefix", p, &c.s.keyPrefix) })
}

// WithFunctions makes release and extend call the "redlock" function
// library (FCALL) instead of EVALSHA/EVAL, so lock users need no EVAL
// permission. Load the library once per node with Client.LoadFunctions
// (Redis 7+, Valkey 7.2+).
func WithFunctions() Option {
	return optionFunc(func(c *config) { c.client("WithFunctions"); c.s.functions = true })
}

// WithFencing makes every acquisition mint a fencing token, read with
// Mutex.Token: successive holders of a name get strictly increasing tokens
// (docs/fencing.md). It costs one more round trip per acquisition, and
// keeps one more key per name on the nodes (the name plus ":fencing").
func WithFencing() Option {
	return optionFunc(func(c *config) { c.client("WithFencing"); c.s.fencing = true })
}

// WithQuarantine turns the quarantine on or off (default on): a node that
// may have lost its keys (restarted without persistence, wiped) or whose
// clock jumped forward does not vote for the longest TTL the nodes record
// (docs/algorithm.md, "Quarantine"); a failed acquisition names it
// (NodeQuarantined). Off, such a node votes at once, as in plain Redlock.
func WithQuarantine(on bool) Option {
	return optionFunc(func(c *config) { c.client("WithQuarantine"); c.s.noQuarantine = !on })
}

// WithQuarantineTTL states the longest TTL any client takes on these nodes,
// other libraries' included, when it is longer than what the nodes' markers
// record: a quarantine then lasts at least that long, plus the drift
// allowance (C's quarantine_ttl_ms; at most one day). 0: the markers' alone.
func WithQuarantineTTL(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.client("WithQuarantineTTL")
		c.s.quarantineTTLMs = c.millis("WithQuarantineTTL", d)
	})
}

// WithEventHandler calls fn for every acquire attempt, extension, loss,
// release and node failure of the client's mutexes: the metrics hook. fn
// runs synchronously, on the goroutine that called the Mutex method or on
// the library's auto-extension thread, so it may run concurrently with
// itself; it must be quick and must not call methods of the Client or of
// its Mutexes other than Until, Token and Name (the call it reports has
// the Mutex and the client in use). A panic in fn crashes the program. nil
// removes a handler set earlier. It is a client option (see Option).
func WithEventHandler(fn func(Event)) Option {
	return optionFunc(func(c *config) {
		c.client("WithEventHandler")
		c.s.hook = nil
		if fn != nil {
			c.s.hook = &eventHook{fn: fn}
		}
	})
}

// WithTLSCAFile trusts the CAs in this PEM file for rediss:// nodes (by
// default, the system's CAs). The TLS options are refused with redis://
// TCP nodes, so that a typo cannot send the lock in plain text.
func WithTLSCAFile(path string) Option {
	return optionFunc(func(c *config) { c.client("WithTLSCAFile"); c.str("WithTLSCAFile", path, &c.s.tlsCAFile) })
}

// WithTLSCADir trusts a directory of hashed CA certificates (openssl rehash).
func WithTLSCADir(dir string) Option {
	return optionFunc(func(c *config) { c.client("WithTLSCADir"); c.str("WithTLSCADir", dir, &c.s.tlsCADir) })
}

// WithTLSClientCert presents this certificate chain and its (unencrypted)
// private key, both PEM files, for mutual TLS.
func WithTLSClientCert(certFile, keyFile string) Option {
	return optionFunc(func(c *config) {
		c.client("WithTLSClientCert")
		c.str("WithTLSClientCert", certFile, &c.s.tlsCertFile)
		c.str("WithTLSClientCert", keyFile, &c.s.tlsKeyFile)
	})
}

// WithTLSServerName is the name (or IP) every node's certificate must
// carry, also sent as SNI; by default each URL's own host.
func WithTLSServerName(name string) Option {
	return optionFunc(func(c *config) {
		c.client("WithTLSServerName")
		c.str("WithTLSServerName", name, &c.s.tlsServerName)
	})
}

// WithTLSInsecureSkipVerify accepts ANY server certificate: no protection
// against a man in the middle. For tests only.
func WithTLSInsecureSkipVerify() Option {
	return optionFunc(func(c *config) { c.client("WithTLSInsecureSkipVerify"); c.s.tlsInsecure = true })
}

// WithMaxExtensions bounds the Extend calls per acquisition (0 = no bound);
// Extend beyond it fails with ErrLimit.
func WithMaxExtensions(n int) Option {
	return optionFunc(func(c *config) {
		c.client("WithMaxExtensions")
		if n < 0 || uint64(n) > math.MaxUint32 {
			c.fail("WithMaxExtensions: %d", n)
			return
		}
		c.s.maxExtensions = uint32(n)
	})
}

// WithMaxHold bounds the total time one acquisition can be held by
// extending it (0 = no bound); Extend beyond it fails with ErrLimit.
func WithMaxHold(d time.Duration) Option {
	return optionFunc(func(c *config) { c.client("WithMaxHold"); c.s.maxHoldMs = c.millis("WithMaxHold", d) })
}

// WithExpiry sets how long an acquired lock lives on the nodes, and what
// Extend extends it to (go-redsync's expiry; default DefaultExpiry). C
// rejects 0 and more than a day.
func WithExpiry(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < 0 {
			c.fail("WithExpiry: negative duration %v", d)
			return
		}
		c.expiry = d
	})
}

// policy is the part of settings that a lock handle can carry
// (redlock_lock_options); the rest is the client's.
type policy struct {
	retryCount, retryDelayMs, retryJitterMs uint32
	driftFactor                             float64
	flags                                   uint32 // REDLOCK_OPT_WAKE, REDLOCK_OPT_FAIR
}

func (s settings) policy() policy {
	return policy{s.retryCount, s.retryDelayMs, s.retryJitterMs, s.driftFactor, s.lockFlags()}
}

// lockFlags are the flags a lock handle can carry as well as the client.
func (s settings) lockFlags() uint32 {
	var f uint32
	if s.wake {
		f |= C.REDLOCK_OPT_WAKE
	}
	if s.fair {
		f |= C.REDLOCK_OPT_FAIR
	}
	return f
}

// effective resolves the delay/jitter rule, so two settings that give C the
// same options compare equal.
func (s settings) effective() settings {
	if s.delaySet && !s.jitterSet {
		s.retryJitterMs = 0
	}
	s.delaySet, s.jitterSet = false, false
	return s
}

// cOptions fills a C options struct from effective settings. The key prefix is C memory the caller
// frees with freeCOptions (C copies it).
func (s *settings) cOptions() C.redlock_options {
	var o C.redlock_options
	C.rl_go_options_init(&o)
	o.retry_count = C.uint32_t(s.retryCount)
	o.retry_delay_ms = C.uint32_t(s.retryDelayMs)
	o.retry_jitter_ms = C.uint32_t(s.retryJitterMs)
	o.drift_factor = C.double(s.driftFactor)
	o.node_timeout_ms = C.uint32_t(s.nodeTimeoutMs)
	o.connect_timeout_ms = C.uint32_t(s.connectTimeoutMs)
	o.unreachable_ms = C.uint32_t(s.unreachableMs)
	o.quarantine_ttl_ms = C.uint32_t(s.quarantineTTLMs)
	o.key_prefix = cstr(s.keyPrefix)
	o.max_extensions = C.uint32_t(s.maxExtensions)
	o.max_hold_ms = C.uint32_t(s.maxHoldMs)
	if s.functions {
		o.flags |= C.REDLOCK_OPT_FUNCTIONS
	}
	if s.fencing {
		o.flags |= C.REDLOCK_OPT_FENCING
	}
	if s.noQuarantine {
		o.flags |= C.REDLOCK_OPT_NO_QUARANTINE
	}
	o.flags |= C.uint32_t(s.lockFlags())
	o.tls_ca_file = cstr(s.tlsCAFile)
	o.tls_ca_dir = cstr(s.tlsCADir)
	o.tls_cert_file = cstr(s.tlsCertFile)
	o.tls_key_file = cstr(s.tlsKeyFile)
	o.tls_server_name = cstr(s.tlsServerName)
	if s.tlsInsecure {
		o.tls_insecure_skip_verify = 1
	}
	return o
}

// cstr is s in C memory, or NULL (C's "unset") for "".
func cstr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// freeCOptions frees the strings of cOptions (C copied them).
func freeCOptions(o *C.redlock_options) {
	for _, p := range []**C.char{&o.key_prefix, &o.tls_ca_file, &o.tls_ca_dir, &o.tls_cert_file,
		&o.tls_key_file, &o.tls_server_name} {
		C.free(unsafe.Pointer(*p))
		*p = nil
	}
}
