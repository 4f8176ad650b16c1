package runs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestDrainOnShutdown(t *testing.T) {
	c := realRedis(t)
	t.Run("in-flight runs finish, queued ones wait for the next worker", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		q := newQueue(t, c)
		started, finish := make(chan struct{}), make(chan struct{})
		p, err := q.NewPool(HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			close(started)
			<-finish
			return OutcomeAnswered, nil
		}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		k := testConv(1)
		first, second := signedEnv(q.opt.Signer, k, "first"), signedEnv(q.opt.Signer, k, "second")
		mustEnqueue(t, q, first)
		<-started
		mustEnqueue(t, q, second)
		done := make(chan error, 1)
		go func() { done <- p.Shutdown(context.Background()) }()
		// Finishing before the drain began would let the worker take the second run itself.
		eventually(t, 5*time.Second, "the drain to begin", p.processor.isDraining)
		close(finish)
		if err := <-done; err != nil {
			t.Fatalf("Shutdown = %v, want a clean drain", err)
		}
		if s := stats(t, q); s.Answered != 1 {
			t.Errorf("answered %d, want the in-flight run", s.Answered)
		}
		rec := newRecorder()
		p2 := startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) { rec.handled(run); return OutcomeAnswered, nil }), nil)
		eventually(t, 5*time.Second, "the queued run on the next pool", func() bool { return rec.count(second.RunID) == 1 })
		if err := p2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("past the deadline runs are cancelled and their leases released", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		q := newQueue(t, c, func(o *Options) { o.Lease = 10 * time.Second }) // takeover must not wait for expiry
		p, started := startBlockingPool(t, q)
		env := signedEnv(q.opt.Signer, testConv(2), "slow")
		mustEnqueue(t, q, env)
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown = %v, want nil: a run handed back is not a failure", err)
		}
		rec := newRecorder()
		var attempt int
		p2 := startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			attempt = run.Envelope.Attempt
			rec.handled(run)
			return OutcomeAnswered, nil
		}), nil)
		eventually(t, 3*time.Second, "the released run on the next pool, well before its lease would expire", func() bool {
			return rec.count(env.RunID) == 1
		})
		if attempt != 2 {
			t.Errorf("attempt = %d, want 2", attempt)
		}
		if err := p2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDrainDoesNotWaitOutAnOutage proves a run waiting minutes to retry after an outage does not
// hold shutdown up: the drain gives its lease back at once, cleanly, and the next pool runs it.
func TestDrainDoesNotWaitOutAnOutage(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	q := newQueue(t, realRedis(t), func(o *Options) { o.Lease, o.OutageRetryBase = 10*time.Second, time.Hour })
	failed := make(chan struct{}, 1)
	p, err := q.NewPool(HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		failed <- struct{}{}
		return "", &UnavailableError{Err: errors.New("model down"), Reason: "down"}
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	env := signedEnv(q.opt.Signer, testConv(3), "during an outage")
	mustEnqueue(t, q, env)
	<-failed
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v, want a clean drain", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Shutdown took %v with a run waiting out an outage", d)
	}
	rec := newRecorder()
	p2 := startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) { rec.handled(run); return OutcomeAnswered, nil }), nil)
	eventually(t, 5*time.Second, "the released run on the next pool", func() bool { return rec.count(env.RunID) == 1 })
	if err := p2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownHandsRunsBackAtOnce proves issue 14's SIGTERM point: a pool leaving a shared Redis
// hands its run in flight back at once — HandBack returns within a fraction of a second, with no
// error, though the run would outlast any drain deadline — and another live pool starts it again
// at once (its next attempt), answers it once, and goes on taking new work meanwhile.
func TestShutdownHandsRunsBackAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := realRedis(t)
	q := newQueue(t, c, func(o *Options) { o.Lease = 10 * time.Second }) // a takeover by expiry would take a lease
	a, started := startBlockingPool(t, q)
	long := signedEnv(q.opt.Signer, testConv(1), "a long run")
	mustEnqueue(t, q, long)
	<-started

	rec := newRecorder()
	var mu sync.Mutex
	attempts := map[string]int{}
	var resumed time.Time
	b := startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		mu.Lock()
		attempts[run.Envelope.RunID] = run.Envelope.Attempt
		if run.Envelope.RunID == long.RunID && resumed.IsZero() {
			resumed = time.Now()
		}
		mu.Unlock()
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	if err := a.HandBack(ctx); err != nil {
		t.Fatalf("HandBack = %v, want nil: a run handed back is not a failure", err)
	}
	took := time.Since(begin)
	other := signedEnv(q.opt.Signer, testConv(2), "meanwhile")
	mustEnqueue(t, q, other)
	eventually(t, 5*time.Second, "the other pool to finish the handed-back run and the new one", func() bool {
		return rec.count(long.RunID) == 1 && rec.count(other.RunID) == 1
	})
	mu.Lock()
	gap, attempt := resumed.Sub(begin), attempts[long.RunID]
	mu.Unlock()
	t.Logf("HandBack took %s; the run started again on the other pool %s after it began", took.Round(time.Millisecond), gap.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("HandBack took %s, want it at once", took)
	}
	if gap > 2*time.Second {
		t.Errorf("the handed-back run started again %s later, want at once (well within its %s lease)", gap, q.opt.Lease)
	}
	if attempt != 2 {
		t.Errorf("the handed-back run's attempt on the other pool = %d, want 2", attempt)
	}
	eventually(t, 5*time.Second, "both answers counted", func() bool { return stats(t, q).Answered == 2 })
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestHandBacksAreNotFailedAttempts proves a run handed back at more shutdowns in a row than
// runs.max_attempts allows (a rolling restart while it runs) is still run and answered, not
// dead-lettered: a hand-back is not a failure.
func TestHandBacksAreNotFailedAttempts(t *testing.T) {
	c := realRedis(t)
	q := newQueue(t, c, func(o *Options) { o.MaxAttempts = 2 })
	env := signedEnv(q.opt.Signer, testConv(4), "through a rolling restart")
	mustEnqueue(t, q, env)
	for i := range 3 {
		p, started := startBlockingPool(t, q)
		<-started
		if err := p.HandBack(context.Background()); err != nil {
			t.Fatalf("hand-back %d: %v", i+1, err)
		}
	}
	var attempt int
	rec := newRecorder()
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		attempt = run.Envelope.Attempt
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	eventually(t, 5*time.Second, "the run answered after three hand-backs", func() bool { return stats(t, q).Answered == 1 })
	if s := stats(t, q); s.DeadLettered != 0 {
		t.Errorf("%d dead letters, want none", s.DeadLettered)
	}
	if rec.count(env.RunID) != 1 || attempt != 4 {
		t.Errorf("handled %d times at attempt %d, want once at attempt 4", rec.count(env.RunID), attempt)
	}
}

// startBlockingPool starts a pool of q whose handler runs until its context ends — longer than
// any drain — and closes started when it begins its one run.
func startBlockingPool(t *testing.T, q *Queue) (*Pool, <-chan struct{}) {
	t.Helper()
	started := make(chan struct{})
	p, err := q.NewPool(HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p, started
}
