// SPDX-License-Identifier: BSD-3-Clause

// Issue 36: a node that refuses the client is never taken for a busy lock.
// Every primitive (mutex, mutex with wake-up, read lock, write lock,
// semaphore permit, multi-lock, election campaign), given a 10 s deadline,
// must end within 2 s with the cause in the error when the refusing nodes
// alone rule out a quorum: no password where one is needed (ErrAuth, "this
// node needs a password"), a wrong one (ErrAuth, the password refused), an
// ACL user without scripting or nodes whose EVAL and EVALSHA are disabled
// (REDLOCK_EPERM, naming the command, and no lock key left). One refusing
// node of three does not end the wait: with the lock free, it is taken.
//
// The tests use nodes 0-2 of the harness's set, changing their ACL users and
// requirepass and putting them back when done; the disabled EVALSHA needs
// nodes started so, so TestRefusalsRenamed runs the test binary again
// under three such nodes of the harness.

package redlock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

const (
	refusalPW      = "refusals-Pw1"
	refusalOtherPW = "refusals-Other2"
	refusalWait    = 10 * time.Second // the deadline every acquire is given
	refusalPrompt  = 2 * time.Second  // a refusal must end it within this
	codeEPERM      = -17              // REDLOCK_EPERM
	envRenamed     = "REDLOCK_REFUSALS_RENAMED"
)

var (
	wrongPassRe = regexp.MustCompile(`(?i)(password|user)[^;]*refused|refused[^;]*(password|user)|WRONGPASS`)
	commandRe   = regexp.MustCompile(`(?i)\b(evalsha|eval|fcall|fcall_ro)\b`)
)

// refusalPrims are the primitives: each acquires res with ctx's deadline
// and returns what releases it.
var refusalPrims = []struct {
	name    string
	acquire func(ctx context.Context, c *redlock.Client, res string) (func(), error)
}{
	{"mutex", func(ctx context.Context, c *redlock.Client, res string) (func(), error) {
		m := c.NewMutex(res, redlock.WithExpiry(5*time.Second))
		return func() { m.Unlock() }, m.LockContext(ctx)
	}},
	{"wake", func(ctx context.Context, c *redlock.Client, res string) (func(), error) {
		m := c.NewMutex(res, redlock.WithExpiry(5*time.Second), redlock.WithWake(true))
		return func() { m.Unlock() }, m.LockContext(ctx)
	}},
	{"read", func(ctx context.Context, c *redlock.Client, res string) (func(), error) {
		rw := c.NewRWMutex(res, redlock.WithExpiry(5*time.Second))
		return func() { rw.RUnlock() }, rw.RLockContext(ctx)
	}},
	{"write", func(ctx context.Context, c *redlock.Client, res string) (func(), error) {
		rw := c.NewRWMutex(res, redlock.WithExpiry(5*time.Second))
		return func() { rw.Unlock() }, rw.LockContext(ctx)
	}},
	{"semaphore", func(ctx context.Context, c *redlock.Client, res string) (func(), error) {
		s := c.NewSemaphore(res, 3, redlock.WithExpiry(5*time.Second))
		return func() { s.Release(1) }, s.Acquire(ctx, 1)
	}},
	{"multi", func(ctx context.Context, c *redlock.Client, res string) (func(), error) {
		m := c.NewMultiMutexOpts([]string{res + ":a", res + ":b"}, redlock.WithExpiry(5*time.Second))
		return func() { m.Unlock() }, m.LockContext(ctx)
	}},
	{"campaign", func(ctx context.Context, c *redlock.Client, res string) (func(), error) {
		e, err := c.NewElection(res, 5*time.Second)
		if err != nil {
			return func() {}, err
		}
		err = e.Campaign(ctx, "candidate")
		return func() { e.Resign(context.Background()); e.Close() }, err
	}},
}

// refusalURLs is nodes 0-2, each with userinfo put in ("" for none).
func refusalURLs(userinfo string) []string {
	out := make([]string, 3)
	for i := range out {
		out[i] = nodeURLs[i]
		if userinfo != "" {
			out[i] = withPassword(nodeURLs[i], userinfo)
		}
	}
	return out
}

// nodeDo runs one command on node i as the default user (password pw, or none).
func nodeDo(t testing.TB, i int, pw string, args ...any) {
	t.Helper()
	opt, err := redis.ParseURL(nodeURLs[i])
	if err != nil {
		t.Fatal(err)
	}
	opt.Password, opt.MaxRetries = pw, -1
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("node %d: %v: %v", i, args, err)
	}
}

// requirePass sets requirepass on the given nodes until the (sub)test ends.
func requirePass(t testing.TB, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		i := i
		nodeDo(t, i, "", "CONFIG", "SET", "requirepass", refusalPW)
		t.Cleanup(func() { nodeDo(t, i, refusalPW, "CONFIG", "SET", "requirepass", "") })
	}
}

// refusalUsers makes the ACL users of these tests on nodes 0-2 (the default
// user is left as it is): noscript and noeval are denied scripting on every
// node, two_noscript on nodes 1 and 2, one_noscript on node 2; two_wrongpw
// and one_wrongpw have another password there.
func refusalUsers(t testing.TB) {
	t.Helper()
	full := []any{"on", "~*", "&*", "+@all"}
	for i := 0; i < 3; i++ {
		set := func(user string, rules ...any) {
			nodeDo(t, i, "", append(append([]any{"ACL", "SETUSER", user}, full...), rules...)...)
		}
		pw, noScript := ">"+refusalPW, []any{}
		set("noscript", pw, "-@scripting")
		set("noeval", pw, "-eval", "-evalsha")
		if i >= 1 {
			noScript = []any{"-@scripting"}
		}
		set("two_noscript", append([]any{pw}, noScript...)...)
		if i == 2 {
			set("one_noscript", pw, "-@scripting")
		} else {
			set("one_noscript", pw)
		}
		other := pw
		if i >= 1 {
			other = ">" + refusalOtherPW
		}
		set("two_wrongpw", other)
		if i == 2 {
			set("one_wrongpw", ">"+refusalOtherPW)
		} else {
			set("one_wrongpw", pw)
		}
	}
	t.Cleanup(func() {
		for i := 0; i < 3; i++ {
			nodeDo(t, i, "", "ACL", "DELUSER", "noscript", "noeval", "two_noscript", "one_noscript",
				"two_wrongpw", "one_wrongpw")
		}
	})
}

// lockKeys is the keys of res on node i, the library's records aside: fencing
// counters, and a semaphore's :limit, which a granting node keeps for two
// TTLs (docs/algorithm.md).
func lockKeys(i int, res string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	keys, _ := rdbs[i].Keys(ctx, "*"+res+"*").Result()
	out := keys[:0]
	for _, k := range keys {
		if !strings.HasSuffix(k, ":fencing") && !strings.HasSuffix(k, ":limit") {
			out = append(out, k)
		}
	}
	return out
}

// noLockKeys fails unless nodes 0-2 hold no key of res (waiting up to a
// second for writes a decided round did not wait for).
func noLockKeys(t testing.TB, res string) {
	t.Helper()
	var left map[int][]string
	eventually(time.Second, func() bool {
		left = map[int][]string{}
		for i := 0; i < 3; i++ {
			if k := lockKeys(i, res); len(k) > 0 {
				left[i] = k
			}
		}
		return len(left) == 0
	})
	if len(left) > 0 {
		t.Fatalf("lock keys left behind by a refused acquire: %v", left)
	}
}

// refused runs prim against urls with a 10 s deadline; it must fail within
// 2 s, naming one of the refusing nodes.
func refused(t *testing.T, prim int, urls []string, refusing ...int) error {
	t.Helper()
	return refusedKeys(t, prim, urls, true, refusing...)
}

// refusedKeys is refused, with the check that no lock key is left optional.
func refusedKeys(t *testing.T, prim int, urls []string, keys bool, refusing ...int) error {
	t.Helper()
	c, err := redlock.NewClient(urls, testOpts(redlock.WithRetryDelay(10*time.Millisecond))...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), refusalWait)
	defer cancel()
	res := lockName(t)
	start := time.Now()
	release, err := refusalPrims[prim].acquire(ctx, c, res)
	elapsed := time.Since(start)
	if err == nil {
		release()
		t.Fatalf("%s: acquired through refusing nodes", refusalPrims[prim].name)
	}
	if elapsed >= refusalPrompt {
		t.Errorf("%s: the refusal took %v to end a %v wait: %v", refusalPrims[prim].name, elapsed, refusalWait, err)
	}
	named := false
	for _, i := range refusing {
		named = named || strings.Contains(err.Error(), strings.TrimPrefix(nodeURLs[i], "redis://"))
	}
	if !named {
		t.Errorf("no refusing node (%v) named in: %v", refusing, err)
	}
	if strings.Contains(err.Error(), refusalPW) || strings.Contains(err.Error(), refusalOtherPW) {
		t.Errorf("a password shown: %v", err)
	}
	if keys {
		noLockKeys(t, res)
	}
	return err
}

func checkAuth(t *testing.T, err error, textOK func(string) bool, want string) {
	t.Helper()
	mustIs(t, err, redlock.ErrAuth)
	if errors.Is(err, redlock.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an auth failure reported as the end of the wait: %v", err)
	}
	if !textOK(err.Error()) {
		t.Errorf("the cause (%s) is not in: %v", want, err)
	}
}

func checkPermission(t *testing.T, err error) {
	t.Helper()
	var e *redlock.Error
	if !errors.As(err, &e) || e.Code != codeEPERM || e.Name() != "REDLOCK_EPERM" {
		t.Fatalf("not REDLOCK_EPERM: %v (%T)", err, err)
	}
	mustIs(t, err, redlock.ErrPermission)
	for _, other := range []error{redlock.ErrServer, redlock.ErrAuth, redlock.ErrTimeout, redlock.ErrIO} {
		if errors.Is(err, other) {
			t.Errorf("REDLOCK_EPERM also matches %v: %v", other, err)
		}
	}
	if !commandRe.MatchString(err.Error()) {
		t.Errorf("the refused command is not named: %v", err)
	}
}

// acquiredDespite runs prim against urls with the lock free: it must be
// acquired within 2 s, with no key of it on the nodes in none, then released.
func acquiredDespite(t *testing.T, prim int, urls []string, none ...int) {
	t.Helper()
	c, err := redlock.NewClient(urls, testOpts()...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), refusalWait)
	defer cancel()
	res := lockName(t)
	start := time.Now()
	release, err := refusalPrims[prim].acquire(ctx, c, res)
	if err != nil {
		t.Fatalf("%s: a free lock not taken with one refusing node of three: %v", refusalPrims[prim].name, err)
	}
	defer release()
	if elapsed := time.Since(start); elapsed >= refusalPrompt {
		t.Errorf("%s: a free lock took %v with one refusing node", refusalPrims[prim].name, elapsed)
	}
	// Long enough for a command the round sent and did not wait for to arrive.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, i := range none {
			if k := lockKeys(i, res); len(k) > 0 {
				t.Fatalf("node %d refused the client and holds lock keys %v", i, k)
			}
		}
	}
}

func TestRefusalsAuth(t *testing.T) {
	if len(nodeURLs) < 3 {
		t.Skip("needs 3 nodes")
	}
	refusalUsers(t)
	noauth := func(s string) bool { return strings.Contains(s, "this node needs a password") }
	wrongpass := func(s string) bool { return wrongPassRe.MatchString(s) && !noauth(s) }
	for p := range refusalPrims {
		p := p
		t.Run(refusalPrims[p].name, func(t *testing.T) {
			// The ACL cases first, while the harness can still look at keys.
			t.Run("two-of-three-wrong-password", func(t *testing.T) {
				err := refusedKeys(t, p, refusalURLs("two_wrongpw:"+refusalPW), false, 1, 2)
				checkAuth(t, err, wrongpass, "the password refused")
			})
			t.Run("one-of-three-wrong-password", func(t *testing.T) {
				acquiredDespite(t, p, refusalURLs("one_wrongpw:"+refusalPW))
			})
			// A node that answered AUTH with WRONGPASS must run nothing the
			// client sent after it. The client sends AUTH and its first
			// commands together; where the default user is open (as here),
			// those run as that user, and today the node holds the lock the
			// client reported refused.
			t.Run("refused-password-runs-nothing", func(t *testing.T) {
				acquiredDespite(t, p, refusalURLs("one_wrongpw:"+refusalPW), 2)
				refused(t, p, refusalURLs("two_wrongpw:"+refusalPW), 1, 2)
			})
			t.Run("one-of-three-requirepass", func(t *testing.T) {
				requirePass(t, 2)
				c, err := redlock.NewClient(refusalURLs(""), testOpts()...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), refusalWait)
				defer cancel()
				start := time.Now()
				release, err := refusalPrims[p].acquire(ctx, c, lockName(t))
				if err != nil {
					t.Fatalf("a free lock not taken with one node wanting a password: %v", err)
				}
				release()
				if elapsed := time.Since(start); elapsed >= refusalPrompt {
					t.Errorf("a free lock took %v with one refusing node", elapsed)
				}
			})
			t.Run("requirepass", func(t *testing.T) {
				requirePass(t, 0, 1, 2)
				// No key check here: the harness's connections have no password either.
				for _, tc := range []struct {
					what, userinfo string
					ok             func(string) bool
				}{{"no password", "", noauth}, {"wrong password", ":" + refusalOtherPW, wrongpass}} {
					c, err := redlock.NewClient(refusalURLs(tc.userinfo), testOpts()...)
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), refusalWait)
					start := time.Now()
					release, err := refusalPrims[p].acquire(ctx, c, lockName(t))
					elapsed := time.Since(start)
					cancel()
					if err == nil {
						release()
						c.Close()
						t.Fatalf("%s: acquired", tc.what)
					}
					c.Close()
					if elapsed >= refusalPrompt {
						t.Errorf("%s: the refusal took %v to end a %v wait: %v", tc.what, elapsed, refusalWait, err)
					}
					checkAuth(t, err, tc.ok, tc.what)
					if !strings.Contains(err.Error(), "127.0.0.1:") {
						t.Errorf("%s: no node named in: %v", tc.what, err)
					}
				}
			})
		})
	}
}

func TestRefusalsPermission(t *testing.T) {
	if len(nodeURLs) < 3 {
		t.Skip("needs 3 nodes")
	}
	refusalUsers(t)
	for p := range refusalPrims {
		p := p
		t.Run(refusalPrims[p].name, func(t *testing.T) {
			for _, user := range []string{"noscript", "noeval"} {
				t.Run(user, func(t *testing.T) {
					checkPermission(t, refused(t, p, refusalURLs(user+":"+refusalPW), 0, 1, 2))
				})
			}
			t.Run("two-of-three", func(t *testing.T) {
				checkPermission(t, refused(t, p, refusalURLs("two_noscript:"+refusalPW), 1, 2))
			})
			t.Run("one-of-three", func(t *testing.T) {
				acquiredDespite(t, p, refusalURLs("one_noscript:"+refusalPW), 2)
			})
		})
	}
}

// TestRefusalsRenamed: nodes started with EVAL and EVALSHA disabled
// (`rename-command EVALSHA ""`, the same for EVAL; EVALSHA alone is not a
// refusal: the library runs its scripts with EVAL then). The harness's exec
// cannot pass a two-word setting, so the test binary runs again under a
// Cluster of nodes.py made by a small Python program.
func TestRefusalsRenamed(t *testing.T) {
	if os.Getenv(envRenamed) != "" {
		for p := range refusalPrims {
			p := p
			t.Run(refusalPrims[p].name, func(t *testing.T) {
				checkPermission(t, refused(t, p, refusalURLs(""), 0, 1, 2))
			})
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const program = `import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
import nodes
conf = {"rename-command": ["EVALSHA", "", "--rename-command", "EVAL", ""]}
with nodes.Cluster(count=3, kind="mixed", conf=conf) as c:
    env = {k: v for k, v in os.environ.items() if k != "REDLOCK_HARNESS"}
    env.update(REDLOCK_TEST_NODES=",".join(c.urls), ` + envRenamed + `="1")
    sys.exit(subprocess.run(sys.argv[2:], env=env).returncode)
`
	harness := filepath.Join("..", "..", "tests", "harness")
	cmd := exec.Command("python3", "-c", program, harness, self,
		"-test.run", "^TestRefusalsRenamed$", "-test.count", "1", "-test.v")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestRefusalsRenamed") {
		t.Fatalf("run under nodes with EVALSHA disabled: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "refusals_test.go") {
			t.Log(strings.TrimSpace(line))
		}
	}
}
