package kit

import (
	"context"
	"sync"
)

// Workers is an adapter's intake lifetime: the context its loops and handlers run under, from
// Start until StopIntake or the end of Start's ctx, and the work under it, which Stop waits
// for. Go, Under and Hold start or count work only while the intake lives — begun, not
// cancelled, its Lifecycle not stopped — checked under the lock Stop (End) takes first, so that
// nothing joins the wait after Stop began it. Create with NewWorkers; safe for concurrent use.
type Workers struct {
	life *Lifecycle

	mu     sync.Mutex
	ctx    context.Context // from Begin; nil before
	cancel context.CancelFunc
	unbind func() bool // from Begin: stops the parent's end from ending the intake
	wg     sync.WaitGroup
}

// NewWorkers returns the Workers of the channel whose phase life keeps: Stop marks it stopped.
func NewWorkers(life *Lifecycle) *Workers { return &Workers{life: life} }

// Begin starts the intake's lifetime under parent and returns its context, which ends with
// parent or at Cancel, End or Stop. parent bounds the intake (it is Start's ctx): once it ends,
// the intake ends as at End — the Lifecycle stopped, so no work starts from then on and Ready
// fails — while the work already started runs to its end, for Stop (or Wait) to wait for.
func (w *Workers) Begin(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx, w.cancel = ctx, cancel
	w.unbind = context.AfterFunc(parent, w.End)
	return ctx
}

// Context is the intake's context; nil before Begin.
func (w *Workers) Context() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ctx
}

// Go runs job on a goroutine Stop waits for, with the intake's context, and reports true; while
// the intake does not live (not begun, ended, stopped) it runs nothing and reports false.
func (w *Workers) Go(job func(ctx context.Context)) bool {
	return w.Under(func(ctx context.Context, wg *sync.WaitGroup) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job(ctx)
		}()
	})
}

// Under calls start with the intake's context and the wait group Stop waits on, under the lock
// Stop takes first, and reports true — for work that starts its own goroutines counted in wg
// (kit.LaterRetry.Start); while the intake does not live it calls nothing and reports false.
func (w *Workers) Under(start func(ctx context.Context, wg *sync.WaitGroup)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil || w.ctx.Err() != nil || w.life.Stopped() {
		return false
	}
	start(w.ctx, &w.wg)
	return true
}

// Hold counts work the caller runs on its own goroutine — an HTTP delivery being handed over —
// among what Stop waits for, under the lock Stop takes first, and returns the function that
// ends it (call it once) with ok true; while the intake does not live it counts nothing and
// reports false.
func (w *Workers) Hold() (release func(), ok bool) {
	ok = w.Under(func(_ context.Context, wg *sync.WaitGroup) {
		wg.Add(1)
		release = wg.Done
	})
	return release, ok
}

// Cancel ends the intake's context; the Lifecycle is left as it is.
func (w *Workers) Cancel() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Stop is End, then Wait: it marks the Lifecycle stopped, ends the intake's context, and waits
// for the work started with Go, Under and Hold until ctx ends; it returns ctx's error then. Safe
// to call more than once.
func (w *Workers) Stop(ctx context.Context) error {
	w.End()
	return w.Wait(ctx)
}

// End marks the Lifecycle stopped and ends the intake's context, so that no work starts from
// then on, and returns at once. An adapter with something to do between the intake's end and
// the wait for its work calls End and Wait itself: Slack lets the envelopes being handed over
// be acknowledged on the sockets they came on, and closes the sockets only then. Safe to call
// more than once.
func (w *Workers) End() {
	w.mu.Lock()
	w.life.Stop() // under mu: Go, Under and Hold add to wg only before it
	cancel, unbind := w.cancel, w.unbind
	w.mu.Unlock()
	if unbind != nil {
		unbind() // ended already: the parent's end has nothing left to do
	}
	if cancel != nil {
		cancel()
	}
}

// Wait waits for the work started with Go, Under and Hold until ctx ends; it returns ctx's
// error then. Called before End, it may wait for work that only ends with the intake.
func (w *Workers) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
