// SPDX-License-Identifier: BSD-3-Clause

// Test setup: runs the suite against real nodes from the shared harness
// (tests/harness/nodes.py), re-executing the test binary under it when
// REDLOCK_TEST_NODES is not already set, plus helpers to fault nodes.

package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// Environment set by `nodes.py exec` (see tests/harness/README.md).
const (
	envNodes   = "REDLOCK_TEST_NODES" // comma-separated node URLs
	envHarness = "REDLOCK_HARNESS"    // control socket of the running harness
)

var (
	nodeURLs []string
	rdbs     []*redis.Client // direct connections, to look at keys on each node
)

func TestMain(m *testing.M) {
	if os.Getenv(envNodes) == "" {
		os.Exit(reexecUnderHarness())
	}
	nodeURLs = strings.Split(os.Getenv(envNodes), ",")
	for _, u := range nodeURLs {
		opt, err := redis.ParseURL(u)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad node URL %q from $%s: %v\n", u, envNodes, err)
			os.Exit(2)
		}
		opt.MaxRetries = -1
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
		rdbs = append(rdbs, redis.NewClient(opt))
	}
	os.Exit(m.Run())
}

// reexecUnderHarness runs this same test binary, with the same flags, under
// `nodes.py exec` with five mixed Redis/Valkey nodes, and returns its status.
// REDLOCK_GO_NODE_COUNT and REDLOCK_GO_NODE_KIND change the node set.
func reexecUnderHarness() int {
	script := filepath.Join("..", "..", "tests", "harness", "nodes.py")
	if _, err := os.Stat(script); err != nil {
		fmt.Fprintf(os.Stderr, "$%s is not set and the harness %s is missing: %v\n", envNodes, script, err)
		return 2
	}
	count, kind := os.Getenv("REDLOCK_GO_NODE_COUNT"), os.Getenv("REDLOCK_GO_NODE_KIND")
	if count == "" {
		count = "5"
	}
	if kind == "" {
		kind = "mixed"
	}
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	args := append([]string{script, "exec", "--count", count, "--kind", kind, "--", self}, os.Args[1:]...)
	cmd := exec.Command("python3", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "running the node harness: %v\n", err)
		return 2
	}
	return 0
}

// quorum is the majority of the node set.
func quorum() int { return len(nodeURLs)/2 + 1 }

var seq atomic.Int64

// lockName is a resource name unique to this test run and call.
func lockName(t testing.TB) string {
	return fmt.Sprintf("go-test:%d:%s:%d", os.Getpid(), t.Name(), seq.Add(1))
}

// tolerant are the tests' default client options: replies may take up to
// half a second, so a loaded CI machine does not turn into spurious
// ErrNoQuorum (C's default allows 50 ms). The quarantine is off: the suite
// kills and restarts its shared nodes without persistence (faults_test.go),
// which would keep them out of the vote for later tests (the quarantine is
// tested in C, tests/c/test_quarantine.c). Options given after them win.
var tolerant = []redlock.Option{redlock.WithNodeTimeout(500 * time.Millisecond), redlock.WithConnectTimeout(time.Second),
	redlock.WithQuarantine(false)}

func testOpts(opts ...redlock.Option) []redlock.Option { return slices.Concat(tolerant, opts) }

func newClient(t testing.TB, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.NewClient(nodeURLs, testOpts(opts...)...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// keyOn is the value of key on node i ("" when absent or unreachable).
func keyOn(i int, key string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := rdbs[i].Get(ctx, key).Result()
	if err != nil {
		return ""
	}
	return v
}

// holders counts the nodes on which key exists.
func holders(key string) int {
	n := 0
	for i := range rdbs {
		if keyOn(i, key) != "" {
			n++
		}
	}
	return n
}

// eventually polls cond every 10ms for up to bound; the bound only keeps a
// hung test finite, it is never what the test asserts.
func eventually(bound time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(bound); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// checkReleased asserts what a release decided at quorum determines: a
// quorum confirmed it, and those nodes no longer hold key. A node it did not
// wait for (NodeNotWaited) gets the release a moment later.
func checkReleased(t testing.TB, m *redlock.Mutex, key string) {
	t.Helper()
	confirmed := 0
	for i, r := range m.Nodes() {
		if r.Outcome != redlock.NodeOK {
			continue
		}
		confirmed++
		if v := keyOn(i, key); v != "" {
			t.Fatalf("node %d confirmed the release and still holds %q", i, v)
		}
	}
	if confirmed < quorum() {
		t.Fatalf("release confirmed by %d nodes, want at least %d: %+v", confirmed, quorum(), m.Nodes())
	}
}

// ctl sends one command to the harness control socket (RESP over a unix
// socket) and returns the reply flattened to a string.
func ctl(t testing.TB, args ...string) string {
	t.Helper()
	path := os.Getenv(envHarness)
	if path == "" {
		t.Skipf("$%s not set: node faults need the harness (nodes.py exec)", envHarness)
	}
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		t.Fatalf("harness control socket: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatalf("harness %v: %v", args, err)
	}
	out, err := readRESP(bufio.NewReader(conn))
	if err != nil {
		t.Fatalf("harness %v: %v", args, err)
	}
	return out
}

func readRESP(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readRESP(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// fault applies how ("kill" or "pause") to nodes and undoes it when the
// test ends ("kill" is undone by START, "pause" by RESUME).
func fault(t testing.TB, how string, nodes ...int) {
	t.Helper()
	undo := map[string]string{"kill": "START", "pause": "RESUME"}[how]
	for _, i := range nodes {
		i := i
		ctl(t, strings.ToUpper(how), strconv.Itoa(i))
		t.Cleanup(func() { ctl(t, undo, strconv.Itoa(i)) })
	}
}

// lastNodes is the indexes of the last k nodes.
func lastNodes(k int) []int {
	out := make([]int, 0, k)
	for i := len(nodeURLs) - k; i < len(nodeURLs); i++ {
		out = append(out, i)
	}
	return out
}

// mustIs fails the test unless err matches every target.
func mustIs(t testing.TB, err error, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", targets)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("error %q (%T) does not match %v", err, err, target)
		}
	}
}

// unlockErr is m.Unlock's error, for checks that need only that.
func unlockErr(m *redlock.Mutex) error {
	ok, err := m.Unlock()
	if ok != (err == nil) {
		panic(fmt.Sprintf("Unlock returned %v with error %v", ok, err))
	}
	return err
}
