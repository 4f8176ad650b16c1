package kit

import (
	"context"
	"time"
)

// Clock is an adapter's time, one for all its components: what they stamp, pace and age by
// (Now) and how they wait (Sleep) — readiness's silence, pacing, backoff, expiries. Tests
// replace Now or Sleep on the channel's one Clock, before Start, to run on a virtual time or to
// record the waits instead of sleeping them; the components read the fields at each use, so
// they follow. Create with NewClock.
type Clock struct {
	Now func() time.Time
	// Sleep waits d, or until ctx ends (then it returns ctx's error).
	Sleep func(ctx context.Context, d time.Duration) error
}

// NewClock returns the real clock: time.Now and Sleep.
func NewClock() *Clock { return &Clock{Now: time.Now, Sleep: Sleep} }

// Funcs returns Now and Sleep as functions that read c's fields at each call, so that what a
// component is handed at construction follows a test's later replacement of either.
func (c *Clock) Funcs() (now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) {
	return func() time.Time { return c.Now() }, func(ctx context.Context, d time.Duration) error { return c.Sleep(ctx, d) }
}
