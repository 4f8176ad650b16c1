package runs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// childEnqueuerEnv makes the test binary an enqueuer that kills itself between the two steps of
// an enqueue (TestRescueFindsAnUnhintedMailboxInSeconds).
const childEnqueuerEnv = "SB_RUNS_TEST_CHILD_ENQUEUER_PREFIX"

// TestRescueFindsAnUnhintedMailboxInSeconds proves issue 14's first point: a process killed
// (SIGKILL) between putting a run in an idle conversation's mailbox and hinting it leaves a chat
// that is answered within a few seconds — by a pool already running, with the default pace of
// its recoverer and the default lease — not after the slow scan (five leases). The run is
// counted while it runs and answered once.
func TestRescueFindsAnUnhintedMailboxInSeconds(t *testing.T) {
	c := realRedis(t)
	var rescues atomic.Int32
	q := newQueue(t, c, func(o *Options) {
		o.Lease = 10 * time.Second
		o.OnRecovery = func(kind Recovery, n int) {
			if kind == RecoveryRescue {
				rescues.Add(int32(n))
			}
		}
	})
	rec := newRecorder()
	admitted := make(chan bool, 1)
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		ok, _ := q.st.Admissions().IsAdmitted(ctx, run.Envelope.Conv.HashTag(), run.Envelope.RunID)
		select {
		case admitted <- ok:
		default:
		}
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)

	runID, died := runChildEnqueuer(t, q.opt.Prefix)
	depth, err := q.ConvDepth(context.Background(), testConv(7))
	if err != nil || depth.Queued != 1 {
		t.Fatalf("after the kill the mailbox holds %+v (%v), want the run", depth, err)
	}
	eventually(t, 30*time.Second, "the rescued run to be answered", func() bool { return rec.count(runID) == 1 })
	silence := time.Since(died)
	t.Logf("the chat was silent %s after its enqueuer died between the two steps (lease %s)", silence.Round(10*time.Millisecond), q.opt.Lease)
	// The design answers it after rescueAge and a recoverer tick or two (about 3 s); the bound
	// is wide so a loaded machine does not fail it, and still far below the slow scan's 150 s.
	if limit := rescueAge + 2*recoverTick(q.opt.Lease) + 15*time.Second; silence > limit {
		t.Errorf("answered %s after the enqueuer died, want within %s", silence, limit)
	}
	if !<-admitted {
		t.Error("the rescued run was not counted in the pending count while it ran")
	}
	eventually(t, 5*time.Second, "the answer counted and the pending count back to 0", func() bool {
		n := pendingOf(t, q)
		return stats(t, q).Answered == 1 && n == 0
	})
	if n, _ := c.ZCard(context.Background(), q.st.Rescues().UnhintedKey()).Result(); n != 0 {
		t.Errorf("the unhinted index still holds %d entries", n)
	}
	if rec.count(runID) != 1 {
		t.Errorf("the run was handled %d times, want once", rec.count(runID))
	}
	if n := rescues.Load(); n != 1 {
		t.Errorf("OnRecovery was told of %d rescues, want 1", n)
	}
}

// runChildEnqueuer starts the test binary as an enqueuer on prefix and waits until it killed
// itself between the two steps; it returns the run id and when the child died.
func runChildEnqueuer(t *testing.T, prefix string) (string, time.Time) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnqueuerEnv+"="+prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var runID string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "PUSHED "); ok {
			runID = id
		}
	}
	err = cmd.Wait()
	died := time.Now()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the enqueuer exited with %v, want killed by SIGKILL between the steps", err)
	}
	if runID == "" {
		t.Fatal("the enqueuer never pushed its run")
	}
	return runID, died
}

// childEnqueuer is the enqueuer process of TestRescueFindsAnUnhintedMailboxInSeconds: it
// enqueues one run into an idle conversation and SIGKILLs itself after the push, before the
// hint.
func childEnqueuer(prefix string) int {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	s, _ := NewSigner([][]byte{testKey})
	q, err := Open(context.Background(), c, Options{Prefix: prefix, Lease: 10 * time.Second, Signer: s, Logger: quietLog})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	env := signedEnv(s, testConv(7), "hello?")
	q.betweenSteps = func() {
		fmt.Printf("PUSHED %s\n", env.RunID)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if err := q.Enqueue(context.Background(), env); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 2 // not reached: the hook kills the process
}

// errKilled stands for the death of an enqueuer in testRescueInProcess.
var errKilled = errors.New("the enqueuer died here")

// testRescueInProcess is the rescue of TestRescueFindsAnUnhintedMailboxInSeconds with the
// enqueuer's death simulated in the process (the hook between the steps panics, so the second
// step never runs), so that it runs on any client — a cluster too, where the index write is
// acknowledged before the push.
func testRescueInProcess(t *testing.T, c redis.UniversalClient) {
	q := newQueue(t, c)
	rec := newRecorder()
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	env := signedEnv(q.opt.Signer, testConv(8), "anyone?")
	q.betweenSteps = func() { panic(errKilled) }
	func() {
		defer func() {
			if r := recover(); r != errKilled {
				t.Fatalf("the enqueue did not die between its steps: %v", r)
			}
		}()
		_ = q.Enqueue(context.Background(), env)
	}()
	died := time.Now()
	q.betweenSteps = nil
	eventually(t, 30*time.Second, "the rescued run to be answered", func() bool { return rec.count(env.RunID) == 1 })
	if silence, limit := time.Since(died), rescueAge+2*recoverTick(q.opt.Lease)+15*time.Second; silence > limit {
		t.Errorf("answered %s after the enqueuer died, want within %s", silence, limit)
	}
	eventually(t, 5*time.Second, "the pending count back to 0", func() bool { return pendingOf(t, q) == 0 })
}
