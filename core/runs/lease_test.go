package runs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestLeaseExpiryTakeover(t *testing.T) { testLeaseExpiryTakeover(t, realRedis(t)) }

// testLeaseExpiryTakeover: a worker claims a conversation and then goes silent (no heartbeat, no
// ack). Once its lease expires, a live pool takes the conversation over and runs the run, then
// the one queued behind it, in order.
func testLeaseExpiryTakeover(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	q := newQueue(t, c)
	k := testConv(1)
	first, second := signedEnv(q.opt.Signer, k, "first"), signedEnv(q.opt.Signer, k, "second")
	mustEnqueue(t, q, first)
	mustEnqueue(t, q, second)

	// The abandoning worker: it reads the hint and takes the lease, then never comes back.
	if err := q.st.Hints().EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	hints, err := q.st.Hints().Read(ctx, "ghost", 10, 0)
	if err != nil || len(hints) != 1 {
		t.Fatalf("ghost read %v, %v; want one hint", hints, err)
	}
	now := time.Now()
	cl, err := q.st.Leases().Claim(ctx, hints[0].Tag, "ghost/0", now.UnixMilli(), now.Add(q.opt.Lease).UnixMilli())
	if err != nil || cl.Status != "run" {
		t.Fatalf("ghost claim = %+v, %v", cl, err)
	}
	abandoned := time.Now()

	rec := newRecorder()
	attempts := map[string]int{}
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		rec.mu.Lock()
		attempts[run.Envelope.Text] = run.Envelope.Attempt
		rec.mu.Unlock()
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	eventually(t, 10*time.Second, "the takeover", func() bool { return rec.total() == 2 })
	if took := time.Since(abandoned); took < q.opt.Lease {
		t.Errorf("taken over after %s, before the %s lease expired", took, q.opt.Lease)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := rec.order[k]; fmt.Sprint(got) != "[first second]" {
		t.Errorf("ran %v, want [first second]", got)
	}
	if attempts["first"] != 2 {
		t.Errorf("the taken-over run's attempt = %d, want 2 (the dead worker's try counts)", attempts["first"])
	}
}

func TestLeaseTakeoverAfterSIGKILL(t *testing.T) {
	c := realRedis(t)
	q := newQueue(t, c)
	k := testConv(2)
	env := signedEnv(q.opt.Signer, k, "survives kill -9")
	mustEnqueue(t, q, env)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+q.opt.Prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	started := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "RUNNING "); ok {
				started <- id
			}
		}
		close(started)
	}()
	select {
	case id := <-started:
		if id != env.RunID {
			t.Fatalf("child runs %q, want %q", id, env.RunID)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the child worker never started the run")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for range started {
	}

	rec := newRecorder()
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	eventually(t, 10*time.Second, "another worker to take the run over", func() bool { return rec.count(env.RunID) == 1 })
	eventually(t, 5*time.Second, "the answer to be counted", func() bool { return stats(t, q).Answered == 1 })
}

// childLeaseEnv sets the child worker's lease (default 1s).
const childLeaseEnv = "SB_RUNS_TEST_CHILD_LEASE"

// childWorker is the worker process of TestLeaseTakeoverAfterSIGKILL and
// TestTakeoverAfterKillWithinALease: it announces the run it
// started on stdout and then hangs in the handler until it is killed.
func childWorker(prefix string) int {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	s, _ := NewSigner([][]byte{testKey})
	lease := time.Second
	if d, err := time.ParseDuration(os.Getenv(childLeaseEnv)); err == nil {
		lease = d
	}
	q, err := Open(context.Background(), c, Options{Prefix: prefix, Workers: 1, Lease: lease, Signer: s, Logger: quietLog})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := q.NewPool(HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		fmt.Printf("RUNNING %s\n", run.Envelope.RunID)
		select {} // hang until SIGKILL
	}), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := p.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	select {}
}
