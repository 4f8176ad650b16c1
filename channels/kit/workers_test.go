package kit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

// TestWorkersRunOnlyWhileTheIntakeLives proves the lifetime: nothing runs before Begin or after
// Stop, the work runs with the intake's context, and Stop ends that context and waits for it.
func TestWorkersRunOnlyWhileTheIntakeLives(t *testing.T) {
	life := NewLifecycle("test", errTestNotReady)
	w := NewWorkers(life)
	if w.Go(func(context.Context) { t.Error("ran before Begin") }) {
		t.Fatal("Go before Begin reported a start")
	}
	ctx := w.Begin(context.Background())
	if w.Context() != ctx {
		t.Fatal("Context is not Begin's")
	}
	running := make(chan struct{})
	var ended bool
	if !w.Go(func(jobCtx context.Context) {
		close(running)
		<-jobCtx.Done()
		time.Sleep(10 * time.Millisecond) // Stop waits for it past its context's end
		ended = true
	}) {
		t.Fatal("Go while alive reported no start")
	}
	<-running
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !ended {
		t.Fatal("Stop returned before the work ended")
	}
	if !life.Stopped() || ctx.Err() == nil {
		t.Fatal("Stop left the lifecycle or the context alive")
	}
	if w.Under(func(context.Context, *sync.WaitGroup) { t.Error("ran after Stop") }) {
		t.Fatal("Under after Stop reported a start")
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestWorkersStopGivesUpWhenItsContextEnds proves Stop's bound: work that does not end is left
// running once Stop's own ctx ends, and Stop says so with ctx's error.
func TestWorkersStopGivesUpWhenItsContextEnds(t *testing.T) {
	w := NewWorkers(NewLifecycle("test", errTestNotReady))
	w.Begin(context.Background())
	release := make(chan struct{})
	w.Go(func(context.Context) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want the deadline", err)
	}
	close(release)
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("Stop after the work ended: %v", err)
	}
}

// TestWorkersCancelEndsTheContextOnly proves Cancel: the context ends, so no more work starts,
// while the lifecycle keeps its phase.
func TestWorkersCancelEndsTheContextOnly(t *testing.T) {
	life := NewLifecycle("test", errTestNotReady)
	w := NewWorkers(life)
	ctx := w.Begin(context.Background())
	w.Cancel()
	if ctx.Err() == nil || life.Stopped() {
		t.Fatal("Cancel did not end the context, or stopped the lifecycle")
	}
	if w.Go(func(context.Context) { t.Error("ran after Cancel") }) {
		t.Fatal("Go after Cancel reported a start")
	}
}

// TestWorkersEndThenWaitLeaveRoomBetween proves the stop in two steps that Stop makes in one:
// End marks the lifecycle stopped and ends the intake's context at once, starting and holding
// nothing from then on, without waiting; what runs meanwhile — the work still under way, an
// adapter's own step between the two (Slack's acks) — goes on, and Wait then waits for the
// work started with Go and held with Hold.
func TestWorkersEndThenWaitLeaveRoomBetween(t *testing.T) {
	life := NewLifecycle("test", errTestNotReady)
	w := NewWorkers(life)
	ctx := w.Begin(context.Background())
	release, ok := w.Hold()
	if !ok {
		t.Fatal("Hold while alive reported no hold")
	}
	ended := make(chan struct{})
	finish := make(chan struct{})
	w.Go(func(jobCtx context.Context) {
		<-jobCtx.Done()
		close(ended)
		<-finish // the job's last step, after its context ended
	})
	w.End()
	<-ended
	if !life.Stopped() || ctx.Err() == nil {
		t.Fatal("End left the lifecycle or the context alive")
	}
	if _, ok := w.Hold(); ok {
		t.Fatal("Hold after End reported a hold")
	}
	if w.Go(func(context.Context) { t.Error("ran after End") }) {
		t.Fatal("Go after End reported a start")
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Wait(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with the work and the hold still running = %v, want its context's end", err)
	}
	close(finish)
	if err := w.Wait(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with the hold still running = %v, want its context's end", err)
	}
	release()
	if err := w.Wait(context.Background()); err != nil {
		t.Fatalf("Wait once all ended: %v", err)
	}
	w.End() // again: nothing changes
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("Stop after End and Wait: %v", err)
	}
}

// TestWorkersParentEndEndsTheIntake proves Begin's bound: once the parent context (Start's)
// ends, the intake ends as at End — the lifecycle stopped, the intake's context ended, nothing
// started or held from then on — while the work already under way runs on and is waited for.
func TestWorkersParentEndEndsTheIntake(t *testing.T) {
	life := NewLifecycle("test", errTestNotReady)
	w := NewWorkers(life)
	parent, cancel := context.WithCancel(context.Background())
	ctx := w.Begin(parent)
	finish := make(chan struct{})
	w.Go(func(jobCtx context.Context) {
		<-jobCtx.Done()
		<-finish // the job's last step, after its context ended
	})
	cancel()
	poll.Until(t, "the lifecycle stopped by the parent's end", life.Stopped)
	if ctx.Err() == nil {
		t.Fatal("the parent's end left the intake's context alive")
	}
	if _, ok := w.Hold(); ok {
		t.Fatal("Hold after the parent's end reported a hold")
	}
	if w.Go(func(context.Context) { t.Error("ran after the parent's end") }) {
		t.Fatal("Go after the parent's end reported a start")
	}
	expired, cancelWait := context.WithCancel(context.Background())
	cancelWait()
	if err := w.Wait(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with the work still running = %v, want its context's end", err)
	}
	close(finish)
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("Stop after the parent's end: %v", err)
	}
}
