package chantest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Waits stands in for a sleep (kit.Sleep's signature): it records each wait asked for and
// returns at once — ctx's error when ctx has ended. Safe for concurrent use.
type Waits struct {
	mu sync.Mutex
	ds []time.Duration
}

// Wait records d and returns ctx.Err().
func (w *Waits) Wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.ds = append(w.ds, d)
	w.mu.Unlock()
	return ctx.Err()
}

// All returns the waits recorded so far, in order.
func (w *Waits) All() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ds)
}
