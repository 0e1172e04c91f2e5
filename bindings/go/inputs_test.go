// SPDX-License-Identifier: BSD-3-Clause

// Every kind of bad input gives an error matching ErrInvalid (or
// ErrNotSupported) with the C library's detail, never a crash.

package redlock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

func TestBadClientInputs(t *testing.T) {
	good := nodeURLs[0]
	cases := []struct {
		name   string
		urls   []string
		opts   []redlock.Option
		want   error
		detail string // substring of the error text ("" = don't check)
	}{
		{"nil node list", nil, nil, redlock.ErrInvalid, ""},
		{"empty node list", []string{}, nil, redlock.ErrInvalid, ""},
		{"empty URL", []string{""}, nil, redlock.ErrInvalid, "node 0"},
		{"port not a number", []string{good, "redis://127.0.0.1:abc"}, nil, redlock.ErrInvalid, "node 1"},
		{"unknown scheme", []string{"http://127.0.0.1:6379"}, nil, redlock.ErrInvalid, ""},
		{"unclosed IPv6", []string{"redis://[::1:6379"}, nil, redlock.ErrInvalid, ""},
		{"NUL in URL", []string{"redis://127.0.0.1\x00:6379"}, nil, redlock.ErrInvalid, "NUL"},
		{"duplicate node", []string{good, good}, nil, redlock.ErrInvalid, ""},
		{"TLS option with a plain TCP node", []string{good}, []redlock.Option{redlock.WithTLSInsecureSkipVerify()}, redlock.ErrInvalid, ""},
		{"missing TLS CA file", []string{"rediss://127.0.0.1:6379"}, []redlock.Option{redlock.WithTLSCAFile("/nonexistent/ca.pem")}, redlock.ErrTLS, "ca.pem"},
		{"NUL in a TLS path", []string{"rediss://127.0.0.1:6379"}, []redlock.Option{redlock.WithTLSClientCert("a\x00", "b")}, redlock.ErrInvalid, "NUL"},
		{"too many nodes", tooMany(), nil, redlock.ErrInvalid, ""},
		{"zero tries", []string{good}, []redlock.Option{redlock.WithTries(0)}, redlock.ErrInvalid, "WithTries"},
		{"negative delay", []string{good}, []redlock.Option{redlock.WithRetryDelay(-time.Second)}, redlock.ErrInvalid, "WithRetryDelay"},
		{"negative jitter", []string{good}, []redlock.Option{redlock.WithRetryJitter(-1)}, redlock.ErrInvalid, ""},
		{"drift factor out of range", []string{good}, []redlock.Option{redlock.WithDriftFactor(0.7)}, redlock.ErrInvalid, "drift_factor"},
		{"zero node timeout", []string{good}, []redlock.Option{redlock.WithNodeTimeout(0)}, redlock.ErrInvalid, "node_timeout"},
		{"negative node timeout", []string{good}, []redlock.Option{redlock.WithNodeTimeout(-1)}, redlock.ErrInvalid, ""},
		{"huge connect timeout", []string{good}, []redlock.Option{redlock.WithConnectTimeout(1 << 62)}, redlock.ErrInvalid, ""},
		{"negative max extensions", []string{good}, []redlock.Option{redlock.WithMaxExtensions(-1)}, redlock.ErrInvalid, ""},
		{"negative max hold", []string{good}, []redlock.Option{redlock.WithMaxHold(-1)}, redlock.ErrInvalid, ""},
		{"NUL in prefix", []string{good}, []redlock.Option{redlock.WithKeyPrefix("a\x00b")}, redlock.ErrInvalid, ""},
		{"prefix too long", []string{good}, []redlock.Option{redlock.WithKeyPrefix(strings.Repeat("p", 1025))}, redlock.ErrInvalid, ""},
		{"negative expiry default", []string{good}, []redlock.Option{redlock.WithExpiry(-time.Second)}, redlock.ErrInvalid, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.NewClient(tc.urls, tc.opts...)
			if err == nil {
				c.Close()
				t.Fatal("NewClient accepted it")
			}
			if c != nil {
				t.Fatal("non-nil client with an error")
			}
			mustIs(t, err, tc.want)
			if !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("error %q lacks %q", err, tc.detail)
			}
			t.Logf("%v", err)
		})
	}
}

func tooMany() []string {
	out := make([]string, 65)
	for i := range out {
		out[i] = fmt.Sprintf("redis://127.0.0.1:%d", 20000+i)
	}
	return out
}

func TestBadMutexInputs(t *testing.T) {
	c := newClient(t)
	cases := []struct {
		name, resource string
		opts           []redlock.Option
	}{
		{"empty name", "", nil},
		{"name over 4096 bytes", strings.Repeat("n", 4097), nil},
		{"NUL in name", "a\x00b", nil},
		{"zero expiry", "ok", []redlock.Option{redlock.WithExpiry(0)}},
		{"negative expiry", "ok", []redlock.Option{redlock.WithExpiry(-time.Second)}},
		{"expiry over a day", "ok", []redlock.Option{redlock.WithExpiry(25 * time.Hour)}},
		{"expiry beyond uint32 ms", "ok", []redlock.Option{redlock.WithExpiry(1 << 62)}},
		{"expiry below the drift allowance", "ok", []redlock.Option{redlock.WithExpiry(time.Millisecond)}},
		{"zero tries on a mutex", "ok", []redlock.Option{redlock.WithTries(0)}},
		{"bad option on a mutex's own client", "ok", []redlock.Option{redlock.WithKeyPrefix(strings.Repeat("p", 2000))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := c.NewMutex(tc.resource, tc.opts...) // never fails; operations report
			err := m.Lock()
			mustIs(t, err, redlock.ErrInvalid)
			t.Logf("%v", err)
			if len(err.Error()) > 2000 {
				t.Fatalf("error text of %d bytes", len(err.Error()))
			}
			mustIs(t, m.TryLock(), redlock.ErrInvalid)
			_, err = m.Extend()
			mustIs(t, err, redlock.ErrInvalid)
			// Only ttl problems are C's to find, and release takes no ttl:
			// there Unlock finds a mutex never locked.
			if _, err := m.Unlock(); !errors.Is(err, redlock.ErrInvalid) && !errors.Is(err, redlock.ErrState) {
				t.Fatalf("Unlock: %v", err)
			}
		})
	}
	// The limits themselves are accepted.
	m := c.NewMutex(strings.Repeat("n", 4096), redlock.WithExpiry(24*time.Hour))
	if err := m.TryLock(); err != nil {
		t.Fatalf("4096-byte name, one-day expiry: %v", err)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}
