// Options for NewClient and NewMutex, named after go-redsync's. One Option
// type serves both: a Mutex starts from its client's settings.

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

// DefaultExpiry is a Mutex's expiry (the lock's time to live) when
// WithExpiry is not given; it is go-redsync's default.
const DefaultExpiry = 8 * time.Second

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
	keyPrefix        string
	maxExtensions    uint32
	maxHoldMs        uint32
	functions        bool
	fencing          bool
	hook             *eventHook // WithEventHandler; compared by identity
	tlsCAFile        string
	tlsCADir         string
	tlsCertFile      string
	tlsKeyFile       string
	tlsServerName    string
	tlsInsecure      bool
}

type config struct {
	s      settings
	expiry time.Duration
	err    error // the first invalid option
}

// Option configures NewClient or NewMutex. Options that shape the node
// conversation (tries, delays, timeouts, prefix, bounds) belong on
// NewClient; given to NewMutex they still work, but that Mutex then gets a
// C client of its own, with its own connections. WithExpiry given to
// NewClient sets the default for the client's mutexes.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func defaultConfig() config {
	var o C.redlock_options
	C.rl_go_options_init(&o)
	return config{
		s: settings{
			retryCount:       uint32(o.retry_count),
			retryDelayMs:     uint32(o.retry_delay_ms),
			retryJitterMs:    uint32(o.retry_jitter_ms),
			driftFactor:      float64(o.drift_factor),
			nodeTimeoutMs:    uint32(o.node_timeout_ms),
			connectTimeoutMs: uint32(o.connect_timeout_ms),
			maxExtensions:    uint32(o.max_extensions),
			maxHoldMs:        uint32(o.max_hold_ms),
		},
		expiry: DefaultExpiry,
	}
}

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
// the first attempt plus n-1 retries); n must be at least 1.
func WithTries(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 || uint64(n-1) > math.MaxUint32 {
			c.fail("WithTries: %d attempts (want at least 1)", n)
			return
		}
		c.s.retryCount = uint32(n - 1)
	})
}

// WithRetryDelay sets the fixed pause between attempts. It also turns the
// random part off unless WithRetryJitter is given too.
func WithRetryDelay(d time.Duration) Option {
	return optionFunc(func(c *config) {
		c.s.retryDelayMs = c.millis("WithRetryDelay", d)
		c.s.delaySet = true
	})
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
// subtracted from the validity (C default 0.01).
func WithDriftFactor(f float64) Option {
	return optionFunc(func(c *config) { c.s.driftFactor = f })
}

// WithNodeTimeout sets how long one round waits for each node's reply.
func WithNodeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.s.nodeTimeoutMs = c.millis("WithNodeTimeout", d) })
}

// WithConnectTimeout sets the extra time allowed when a node's connection
// has to be made first.
func WithConnectTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.s.connectTimeoutMs = c.millis("WithConnectTimeout", d) })
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
	return optionFunc(func(c *config) { c.str("WithKeyPrefix", p, &c.s.keyPrefix) })
}

// WithFunctions makes release and extend call the "redlock" function
// library (FCALL) instead of EVALSHA/EVAL, so lock users need no EVAL
// permission. Load the library once per node with Client.LoadFunctions
// (Redis 7+, Valkey 7.2+).
func WithFunctions() Option {
	return optionFunc(func(c *config) { c.s.functions = true })
}

// WithFencing makes every acquisition mint a fencing token, read with
// Mutex.Token: successive holders of a name get strictly increasing tokens
// (docs/fencing.md). It costs one more round trip per acquisition, and
// keeps one more key per name on the nodes (the name plus ":fencing").
func WithFencing() Option {
	return optionFunc(func(c *config) { c.s.fencing = true })
}

// WithEventHandler calls fn for every acquire attempt, extension, loss,
// release and node failure of the client's mutexes: the metrics hook. fn
// runs synchronously, on the goroutine that called the Mutex method or on
// the library's auto-extension thread, so it may run concurrently with
// itself; it must be quick and must not call methods of the Client or of
// its Mutexes other than Until, Token and Name (the call it reports has
// the Mutex and the client in use). A panic in fn crashes the program. nil
// removes a handler set earlier. Given to NewMutex, it gives that Mutex a
// C client of its own (see Option).
func WithEventHandler(fn func(Event)) Option {
	return optionFunc(func(c *config) {
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
	return optionFunc(func(c *config) { c.str("WithTLSCAFile", path, &c.s.tlsCAFile) })
}

// WithTLSCADir trusts a directory of hashed CA certificates (openssl rehash).
func WithTLSCADir(dir string) Option {
	return optionFunc(func(c *config) { c.str("WithTLSCADir", dir, &c.s.tlsCADir) })
}

// WithTLSClientCert presents this certificate chain and its (unencrypted)
// private key, both PEM files, for mutual TLS.
func WithTLSClientCert(certFile, keyFile string) Option {
	return optionFunc(func(c *config) {
		c.str("WithTLSClientCert", certFile, &c.s.tlsCertFile)
		c.str("WithTLSClientCert", keyFile, &c.s.tlsKeyFile)
	})
}

// WithTLSServerName is the name (or IP) every node's certificate must
// carry, also sent as SNI; by default each URL's own host.
func WithTLSServerName(name string) Option {
	return optionFunc(func(c *config) { c.str("WithTLSServerName", name, &c.s.tlsServerName) })
}

// WithTLSInsecureSkipVerify accepts ANY server certificate: no protection
// against a man in the middle. For tests only.
func WithTLSInsecureSkipVerify() Option {
	return optionFunc(func(c *config) { c.s.tlsInsecure = true })
}

// WithMaxExtensions bounds the Extend calls per acquisition (0 = no bound);
// Extend beyond it fails with ErrLimit.
func WithMaxExtensions(n int) Option {
	return optionFunc(func(c *config) {
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
	return optionFunc(func(c *config) { c.s.maxHoldMs = c.millis("WithMaxHold", d) })
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
	o.key_prefix = cstr(s.keyPrefix)
	o.max_extensions = C.uint32_t(s.maxExtensions)
	o.max_hold_ms = C.uint32_t(s.maxHoldMs)
	if s.functions {
		o.flags |= C.REDLOCK_OPT_FUNCTIONS
	}
	if s.fencing {
		o.flags |= C.REDLOCK_OPT_FENCING
	}
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
