// SPDX-License-Identifier: BSD-3-Clause

// Tests on real nodes from the harness (tests/harness/nodes.py): the Locker
// alone, then two gocron Schedulers in two processes sharing a job that
// fires every second.

package gocronlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	redlock "github.com/redlock-project/redlock/bindings/go"
	"github.com/redlock-project/redlock/bindings/go/gocronlock"
)

const (
	envNodes = "REDLOCK_TEST_NODES"
	envChild = "GOCRONLOCK_TEST_SCHEDULER" // set in the scheduler processes the test starts
)

var nodeURLs []string

func TestMain(m *testing.M) {
	if os.Getenv(envNodes) == "" {
		os.Exit(reexecUnderHarness())
	}
	nodeURLs = strings.Split(os.Getenv(envNodes), ",")
	if os.Getenv(envChild) != "" {
		os.Exit(runScheduler())
	}
	os.Exit(m.Run())
}

// reexecUnderHarness runs this test binary under `nodes.py exec` with three nodes.
func reexecUnderHarness() int {
	script := filepath.Join("..", "..", "..", "tests", "harness", "nodes.py")
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	cmd := exec.Command("python3", append([]string{script, "exec", "--count", "3", "--kind", "mixed", "--", self}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "running the node harness %s: %v\n", script, err)
		return 2
	}
	return 0
}

func newClient(t testing.TB) *redlock.Client {
	t.Helper()
	c, err := redlock.NewClient(nodeURLs, redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// uniq is a key prefix of this test run's own (go test -count=N repeats tests).
func uniq(t *testing.T) string { return fmt.Sprintf("%s:%d:", t.Name(), time.Now().UnixNano()) }

func TestLockerHoldsAndRefuses(t *testing.T) {
	ctx := context.Background()
	prefix := uniq(t)
	a := gocronlock.New(newClient(t), gocronlock.WithKeyPrefix(prefix))
	b := gocronlock.New(newClient(t), gocronlock.WithKeyPrefix(prefix))
	la, err := a.Lock(ctx, "job")
	if err != nil {
		t.Fatalf("first Lock: %v", err)
	}
	if _, err := b.Lock(ctx, "job"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second Lock while held: got %v, want ErrNotAcquired", err)
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	lb, err := b.Lock(ctx, "job")
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lock(ctx, ""); err == nil {
		t.Fatal("empty key accepted")
	}
	if _, err := gocronlock.New(newClient(t), gocronlock.WithTTL(0)).Lock(ctx, "x"); err == nil {
		t.Fatal("zero TTL accepted")
	}
}

func TestMinHoldKeepsTheLock(t *testing.T) {
	ctx := context.Background()
	opts := []gocronlock.Option{gocronlock.WithKeyPrefix(uniq(t)), gocronlock.WithMinHold(700 * time.Millisecond)}
	a, b := gocronlock.New(newClient(t), opts...), gocronlock.New(newClient(t), opts...)
	start := time.Now()
	la, err := a.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "job"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Lock right after an early Unlock: got %v, want ErrNotAcquired (MinHold)", err)
	}
	for {
		lb, err := b.Lock(ctx, "job")
		if err == nil {
			if held := time.Since(start); held < 700*time.Millisecond {
				t.Fatalf("taken again after %v, before MinHold", held)
			}
			_ = lb.Unlock(ctx)
			return
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("never released after MinHold: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runScheduler is a scheduler process: a job every second under the Locker;
// prints "run <second>" for each run and "refused <second>" for each tick
// the lock went elsewhere, until its stdin closes.
func runScheduler() int {
	client, err := redlock.NewClient(nodeURLs, redlock.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	say := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("%s %d\n", what, time.Now().Unix())
	}
	locker := gocronlock.New(client, gocronlock.WithTTL(2*time.Second), gocronlock.WithMinHold(800*time.Millisecond))
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, err = s.NewJob(gocron.CronJob("* * * * * *", true), gocron.NewTask(func() { say("run") }),
		gocron.WithName("report"),
		gocron.WithEventListeners(gocron.AfterLockError(func(uuid.UUID, string, error) { say("refused") })))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s.Start()
	fmt.Println("started")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
	_ = s.Shutdown()
	client.Close()
	return 0
}

type line struct {
	proc int
	what string
	sec  int64
}

func startScheduler(t *testing.T, i int, out chan<- line) (*exec.Cmd, func()) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envChild+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 {
				sec, _ := strconv.ParseInt(f[1], 10, 64)
				out <- line{i, f[0], sec}
			} else if len(f) == 1 {
				out <- line{i, f[0], 0}
			}
		}
	}()
	stop := func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return cmd, stop
}

// Two schedulers in two processes: each tick's job runs exactly once, on
// one of them; after one is killed, the survivor runs the ticks.
func TestTwoSchedulersOneRunPerTick(t *testing.T) {
	out := make(chan line, 1000)
	a, stopA := startScheduler(t, 0, out)
	defer stopA()
	_, stopB := startScheduler(t, 1, out)
	defer stopB()

	runs := map[int64][]int{} // second -> processes that ran it
	refused := [2]int{}
	started := 0
	var killedAt int64
	afterKill := 0
	deadline := time.After(90 * time.Second) // a bound for a stuck test, not a speed check
	for afterKill < 3 {
		select {
		case l := <-out:
			switch l.what {
			case "started":
				started++
			case "refused":
				refused[l.proc]++
			case "run":
				runs[l.sec] = append(runs[l.sec], l.proc)
				if killedAt != 0 && l.sec > killedAt {
					if l.proc == 0 {
						t.Fatalf("the killed scheduler ran second %d", l.sec)
					}
					afterKill++
				}
			}
			// Kill the first once both have run or been refused for a few ticks.
			if killedAt == 0 && started == 2 && len(runs) >= 4 && refused[0]+refused[1] >= 2 {
				if err := a.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killedAt = time.Now().Unix()
				t.Logf("killed scheduler 0 at second %d after %d ticks (refused: %v)", killedAt, len(runs), refused)
			}
		case <-deadline:
			t.Fatalf("stuck: runs %v, refused %v, killed at %d, runs after %d", runs, refused, killedAt, afterKill)
		}
	}
	for sec, procs := range runs {
		if len(procs) != 1 {
			t.Errorf("second %d ran %d times (processes %v)", sec, len(procs), procs)
		}
	}
	if refused[0]+refused[1] == 0 {
		t.Error("no scheduler was ever refused: the two did not compete")
	}
	t.Logf("%d ticks ran once each; refused %v; %d on the survivor after the kill", len(runs), refused, afterKill)
}
