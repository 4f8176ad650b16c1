package kit

import (
	"context"
	"sync"
)

// Workers is an adapter's intake lifetime: the context its loops and handlers run under, from
// Start until StopIntake, and the goroutines working under it, which Stop waits for. Go and
// Under start work only while the intake lives — begun, not cancelled, its Lifecycle not
// stopped — checked under the lock Stop takes first, so that nothing joins the wait after Stop
// began it. Create with NewWorkers; safe for concurrent use.
type Workers struct {
	life *Lifecycle

	mu     sync.Mutex
	ctx    context.Context // from Begin; nil before
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewWorkers returns the Workers of the channel whose phase life keeps: Stop marks it stopped.
func NewWorkers(life *Lifecycle) *Workers { return &Workers{life: life} }

// Begin starts the intake's lifetime under parent and returns its context, which ends with
// parent or at Cancel or Stop.
func (w *Workers) Begin(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx, w.cancel = ctx, cancel
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

// Cancel ends the intake's context; the Lifecycle is left as it is.
func (w *Workers) Cancel() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Stop marks the Lifecycle stopped, ends the intake's context, and waits for the goroutines
// started with Go and Under until ctx ends; it returns ctx's error then. Safe to call more than
// once.
func (w *Workers) Stop(ctx context.Context) error {
	w.mu.Lock()
	w.life.Stop() // under mu: Go and Under add to wg only before it
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
