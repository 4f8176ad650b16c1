package kit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	errForNow   = errors.New("refused for now")
	errForGood  = errors.New("refused for good")
	retryForNow = func(_ context.Context, err error) bool { return errors.Is(err, errForNow) }
)

// newTestRetry is a LaterRetry whose waits are recorded and not slept, or, with block, last
// until the retry's context ends.
func newTestRetry(block bool) (*LaterRetry, func() []time.Duration) {
	var mu sync.Mutex
	var waits []time.Duration
	r := &LaterRetry{Failed: "test: step failed", Done: "test: step done", GaveUp: "no more", Min: time.Second, Max: 4 * time.Second, Log: quietLog,
		Wait: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			if block {
				<-ctx.Done()
			}
			return ctx.Err()
		}}
	return r, func() []time.Duration { mu.Lock(); defer mu.Unlock(); return append([]time.Duration(nil), waits...) }
}

// TestLaterRetryTryRetriesUnderTheIntake proves Try: a success and a failure retrying cannot
// help come back as they are, nothing retried; a failure for now is retried in the background
// (Min, then doubling) until the step succeeds, and Try returns nil; and the intake's Stop
// waits for that retry.
func TestLaterRetryTryRetriesUnderTheIntake(t *testing.T) {
	w := NewWorkers(NewLifecycle("test", errTestNotReady))
	w.Begin(context.Background())
	r, waits := newTestRetry(false)
	var calls atomic.Int32
	if err := r.Try(context.Background(), w, retryForNow, func(context.Context) error { calls.Add(1); return nil }); err != nil || calls.Load() != 1 {
		t.Fatalf("Try of a step that succeeds = %v after %d calls", err, calls.Load())
	}
	if err := r.Try(context.Background(), w, retryForNow, func(context.Context) error { return errForGood }); !errors.Is(err, errForGood) {
		t.Fatalf("Try of a step refused for good = %v", err)
	}
	calls.Store(0)
	succeeded := make(chan struct{})
	err := r.Try(context.Background(), w, retryForNow, func(context.Context) error {
		if calls.Add(1) < 3 {
			return errForNow
		}
		close(succeeded)
		return nil
	})
	if err != nil {
		t.Fatalf("Try of a step refused for now = %v, want nil: it is retried", err)
	}
	<-succeeded
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := waits(); len(got) != 2 || got[0] != time.Second || got[1] != 2*time.Second {
		t.Errorf("the retry waited %v, want [1s 2s]", got)
	}
}

// TestLaterRetryTryOutsideTheIntake proves a failure for now is returned, and not retried,
// while the intake does not live; and that a retry still waiting when the intake stops ends
// with it.
func TestLaterRetryTryOutsideTheIntake(t *testing.T) {
	w := NewWorkers(NewLifecycle("test", errTestNotReady))
	r, waits := newTestRetry(true)
	refuse := func(context.Context) error { return errForNow }
	if err := r.Try(context.Background(), w, retryForNow, refuse); !errors.Is(err, errForNow) {
		t.Fatalf("Try before the intake began = %v, want the failure", err)
	}
	w.Begin(context.Background())
	if err := r.Try(context.Background(), w, retryForNow, refuse); err != nil {
		t.Fatalf("Try while the intake lives = %v, want nil", err)
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("Stop with a retry waiting: %v", err)
	}
	if got := waits(); len(got) != 1 {
		t.Errorf("the retry waited %v, want once (cut short by Stop)", got)
	}
	if err := r.Try(context.Background(), w, retryForNow, refuse); !errors.Is(err, errForNow) {
		t.Fatalf("Try after Stop = %v, want the failure", err)
	}
}
