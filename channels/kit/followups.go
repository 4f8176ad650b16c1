package kit

import (
	"context"
	"fmt"
	"sync"
)

// Followups runs best-effort work that follows an event's handling — a reply, a title, a
// suggestion — off the path that acknowledges the event to its platform, which must answer
// within seconds and wait only for the durable enqueue. Work of one key (a conversation) runs
// in the order it was given; keys run concurrently. Close waits for the work given before it;
// work given after Close runs on the caller's goroutine, so nothing is lost and no goroutine
// outlives Close. Past MaxFollowups pending, work runs on the caller's goroutine too: under a
// storm the caller is held back, as it was before, rather than goroutines piling up. Safe for
// concurrent use; create with NewFollowups.
type Followups struct {
	ctx    context.Context // canceled when Close's deadline passes
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	tails   map[string]chan struct{} // key → done of its latest work
	pending int
	wg      sync.WaitGroup
}

// MaxFollowups bounds the work a Followups holds on goroutines at once.
const MaxFollowups = 1024

// NewFollowups returns a Followups ready for work.
func NewFollowups() *Followups {
	ctx, cancel := context.WithCancel(context.Background())
	return &Followups{ctx: ctx, cancel: cancel, tails: map[string]chan struct{}{}}
}

// Go runs f on its own goroutine after the earlier work of key. f's context carries ctx's
// values but not its cancellation (the caller's request is usually over by then); it ends when
// Close gives up waiting. After Close, or with MaxFollowups pending, f runs at once on the
// caller's goroutine with ctx.
func (b *Followups) Go(ctx context.Context, key string, f func(ctx context.Context)) {
	b.mu.Lock()
	if b.closed || b.pending >= MaxFollowups {
		b.mu.Unlock()
		f(ctx)
		return
	}
	prev := b.tails[key]
	done := make(chan struct{})
	b.tails[key] = done
	b.pending++
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		unhook := context.AfterFunc(b.ctx, stop)
		if prev != nil {
			<-prev // work cut short by Close returns promptly, so this ends too
		}
		f(wctx)
		unhook()
		stop()
		close(done)
		b.mu.Lock()
		if b.tails[key] == done {
			delete(b.tails, key)
		}
		b.pending--
		b.mu.Unlock()
	}()
}

// Close stops taking work onto goroutines and waits until the work given before has finished
// or ctx ends; then it cancels the work still running and waits for it to return (work honours
// its context, so that is prompt). The error says work was cut short. Safe to call more than
// once.
func (b *Followups) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		b.mu.Lock()
		n := b.pending
		b.mu.Unlock()
		err = fmt.Errorf("channels: %d follow-up(s) cut short: %w", n, ctx.Err())
	}
	b.cancel()
	<-done
	return err
}

// Pending is the number of follow-ups given to goroutines that have not finished.
func (b *Followups) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending
}
