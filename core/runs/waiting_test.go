package runs

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunCutWhileWaitingOnThePlatformIsNoOutage proves that a run cancelled while its answer
// waits its turn on the platform (a send queued behind the adapter's pacer, which then returns
// the run context's error, wrapped as an undelivered answer is) ends cancelled: it is not
// retried as if the platform were unavailable, and no outage is logged.
func TestRunCutWhileWaitingOnThePlatformIsNoOutage(t *testing.T) {
	ctx := context.Background()
	log, logs := debugLogger()
	var retries atomic.Int32
	q := newQueue(t, realRedis(t), func(o *Options) {
		o.Logger = log
		o.OnRecovery = func(kind Recovery, n int) {
			if kind == RecoveryRetry {
				retries.Add(int32(n))
			}
		}
	})
	waiting := make(chan struct{}, 1)
	var calls atomic.Int32
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		calls.Add(1)
		waiting <- struct{}{}
		<-ctx.Done() // the send waits for its slot until the run's context ends
		return "", &UnavailableError{Err: fmt.Errorf("lead: delivering the run's closing answer: discord: send message: %w", ctx.Err())}
	}), nil)
	env := signedEnv(q.opt.Signer, testConv(9), "answer me")
	mustEnqueue(t, q, env)
	<-waiting
	if _, err := q.Cancel(ctx, env.Conv, env.RunID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the run counted cancelled", func() bool { return stats(t, q).Cancelled == 1 })
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
	if n := retries.Load(); n != 0 {
		t.Errorf("%d retries, want none", n)
	}
	if s := stats(t, q); s.Retries != 0 || s.Failed != 0 {
		t.Errorf("stats = %+v, want no retry and no failure", s)
	}
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "unavailable") || strings.Contains(l, "level=WARN") {
			t.Errorf("logged: %s", l)
		}
	}
}
