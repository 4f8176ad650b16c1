package kit

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Liveness is the clock of an intake's last sign of life — a frame read from a socket, a
// heartbeat's ack, a successful long poll — that the adapter's Ready reads: an intake that
// looks connected but has shown nothing for longer than the platform's own rhythm allows is
// not receiving. The zero value has seen nothing; safe for concurrent use.
type Liveness struct {
	at atomic.Int64 // unix nanoseconds; 0: never
}

// Beat records a sign of life at t.
func (l *Liveness) Beat(t time.Time) { l.at.Store(t.UnixNano()) }

// Quiet is how long before now the last sign of life came; ok is false when none came yet.
func (l *Liveness) Quiet(now time.Time) (quiet time.Duration, ok bool) {
	last := l.at.Load()
	if last == 0 {
		return 0, false
	}
	return now.Sub(time.Unix(0, last)), true
}

// Silent reports, as an error wrapping notReady, an intake (named what: "connection 2") that
// showed no life yet or none within window before now; nil while it lives.
func (l *Liveness) Silent(now time.Time, window time.Duration, notReady error, what string) error {
	quiet, ok := l.Quiet(now)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s has not connected", notReady, what)
	case quiet > window:
		return fmt.Errorf("%w: %s received nothing for %s", notReady, what, quiet.Round(time.Second))
	}
	return nil
}
