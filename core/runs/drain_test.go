package runs

import (
	"context"
	"errors"
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
		eventually(t, 5*time.Second, "the drain to begin", p.isDraining)
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
		env := signedEnv(q.opt.Signer, testConv(2), "slow")
		mustEnqueue(t, q, env)
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want the deadline error", err)
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
