// SPDX-License-Identifier: BSD-3-Clause

// No formatting of a Client, a Mutex, their errors, reports or events
// prints a node password: one is planted in the URLs and looked for in
// the output of every fmt verb and in every error text.

package redlock_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

const planted = "Pl4ntedS3cret"

// withPassword is u with userinfo put in after the scheme.
func withPassword(u, userinfo string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	return scheme + "://" + userinfo + "@" + rest
}

// leaks fails the test if s holds the planted password, plainly or as
// %x/%X would print it.
func leaks(t *testing.T, what, s string) {
	t.Helper()
	h := hex.EncodeToString([]byte(planted))
	for _, p := range []string{planted, strings.ToLower(planted), h, strings.ToUpper(h)} {
		if strings.Contains(s, p) {
			t.Errorf("%s prints the password: %s", what, s)
			return
		}
	}
}

var verbs = []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T", "%10.3v"}

func leaksAny(t *testing.T, what string, v any) {
	t.Helper()
	for _, verb := range verbs {
		leaks(t, what+" "+verb, fmt.Sprintf(verb, v))
	}
}

func TestNoPasswordInFormats(t *testing.T) {
	if strings.HasPrefix(nodeURLs[0], "unix:") || strings.HasPrefix(nodeURLs[0], "rediss:") {
		t.Skip("TCP nodes wanted")
	}
	var urls []string
	for i, u := range nodeURLs {
		switch i % 3 {
		case 0:
			urls = append(urls, withPassword(u, ":"+planted))
		case 1:
			urls = append(urls, withPassword(u, "someone:"+planted))
		default:
			urls = append(urls, withPassword(u, "x:"+planted+"%40at"))
		}
	}
	var mu sync.Mutex
	var events []redlock.Event
	c, err := redlock.NewClient(urls, testOpts(redlock.WithTries(1), redlock.WithEventHandler(func(e redlock.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := c.NewMutex(lockName(t), redlock.WithExpiry(time.Second))
	// The nodes have no password: AUTH fails on every one.
	lockErr := m.Lock()
	if lockErr == nil {
		t.Fatal("Lock with passwords the nodes do not have succeeded")
	}
	_, extendErr := m.Extend()
	_, unlockErr := m.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ctxErr := m.LockContext(ctx)

	if !strings.Contains(c.String(), "***") {
		t.Fatalf("String shows no masked password: %s", c)
	}
	t.Logf("%+v", c)
	t.Logf("%v", lockErr)
	for what, v := range map[string]any{
		"client": c, "mutex": m, "client.String()": c.String(), "client.GoString()": c.GoString(),
		"mutex.String()": m.String(), "mutex.GoString()": m.GoString(),
		"[]*Client": []*redlock.Client{c}, "struct holding a Client": struct{ C *redlock.Client }{c},
		"map holding a Mutex": map[string]*redlock.Mutex{"m": m}, "Nodes()": m.Nodes(),
		"lock error": lockErr, "extend error": extendErr, "unlock error": unlockErr, "ctx error": ctxErr,
	} {
		leaksAny(t, what, v)
	}
	for _, err := range []error{lockErr, extendErr, unlockErr, ctxErr} {
		if err != nil {
			leaks(t, "Error()", err.Error())
		}
	}
	for _, r := range m.Nodes() {
		if r.Err != nil {
			leaks(t, "node error", r.Err.Error())
		}
		leaks(t, "node message", r.Message)
	}
	mu.Lock()
	if len(events) == 0 {
		t.Error("no events")
	}
	for _, e := range events {
		leaksAny(t, "event", e)
	}
	mu.Unlock()
	c.Close()
	leaksAny(t, "closed client", c)
	leaks(t, "closed mutex error", m.Lock().Error())

	// Errors from NewClient: malformed URLs, duplicates, TLS files.
	good := nodeURLs[0]
	for _, bad := range [][]string{
		{withPassword("redis://127.0.0.1:abc", ":"+planted)},
		{withPassword("redis://[::1", "u:"+planted)},
		{withPassword("redis://127.0.0.1:6379/x", "u:"+planted)},
		{withPassword("unix://", ":"+planted)},
		{withPassword("redis://127.0.0.1:6379:1", "u:"+planted+"@")},
		{withPassword(good, ":"+planted), withPassword(good, "u:"+planted)},
		{withPassword("http://127.0.0.1:6379", ":"+planted)},
		{withPassword("redis://127.0.0.1:6379", ":"+planted+"%zz")},
	} {
		_, err := redlock.NewClient(bad)
		if err == nil {
			t.Errorf("NewClient(%d URLs) accepted a bad list", len(bad))
			continue
		}
		leaks(t, "NewClient error", err.Error())
		leaksAny(t, "NewClient error", err)
	}
	_, err = redlock.NewClient([]string{withPassword(strings.Replace(good, "redis://", "rediss://", 1), ":"+planted)},
		redlock.WithTLSCAFile("/nonexistent/ca.pem"))
	if err == nil {
		t.Fatal("missing CA file accepted")
	}
	leaksAny(t, "TLS error", err)
}
