// SPDX-License-Identifier: BSD-3-Clause

// Test setup: real Redis/Valkey nodes from the harness (tests/harness/nodes.py)
// and a real PostgreSQL (tests/harness/pgserver.py). Run without them, the
// test binary re-executes itself under both; if they cannot start, it fails
// with their message rather than skipping.

package fence_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	envNodes = "REDLOCK_TEST_NODES"  // comma-separated node URLs (nodes.py exec)
	envPG    = "REDLOCK_TEST_PG_DSN" // postgres:// URL (pgserver.py exec)
)

var (
	nodeURLs []string
	stores   []*redis.Client // node 0 is a Redis server, node 1 a Valkey server ("mixed")
	pgDSN    string
)

func TestMain(m *testing.M) {
	if os.Getenv(envNodes) == "" || os.Getenv(envPG) == "" {
		os.Exit(reexecUnderHarness())
	}
	nodeURLs = strings.Split(os.Getenv(envNodes), ",")
	pgDSN = os.Getenv(envPG)
	for _, u := range nodeURLs[:2] {
		opt, err := redis.ParseURL(u)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad node URL %q from $%s: %v\n", u, envNodes, err)
			os.Exit(2)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
		stores = append(stores, redis.NewClient(opt))
	}
	os.Exit(m.Run())
}

// reexecUnderHarness runs this test binary, with its flags, under whichever
// of the two harnesses is missing from the environment.
func reexecUnderHarness() int {
	harness := filepath.Join("..", "..", "..", "tests", "harness")
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	args := append([]string{self}, os.Args[1:]...)
	if os.Getenv(envNodes) == "" {
		args = append([]string{"python3", filepath.Join(harness, "nodes.py"), "exec", "--count", "3", "--kind", "mixed", "--"}, args...)
	}
	if os.Getenv(envPG) == "" {
		args = append([]string{"python3", filepath.Join(harness, "pgserver.py"), "exec", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ee.ExitCode() != 0 && ee.ExitCode() != 1 {
				fmt.Fprintf(os.Stderr, "FAIL: the fence tests need Redis/Valkey nodes and PostgreSQL from "+
					"tests/harness (nodes.py, pgserver.py), or $%s and $%s; see the message above (exit %d)\n",
					envNodes, envPG, ee.ExitCode())
			}
			if ee.ExitCode() > 0 {
				return ee.ExitCode()
			}
		}
		fmt.Fprintf(os.Stderr, "FAIL: running %v: %v\n", args, err)
		return 2
	}
	return 0
}
