package kit

import (
	"errors"
	"fmt"
	"sync"
)

// Lifecycle is an adapter's start guard and the phase its Ready reports first: not started,
// starting, receiving, stopped. A channel starts once: Begin refuses a second Start and a Start
// after Stop (or after StopIntake, which ends receiving for good too). Create with
// NewLifecycle; safe for concurrent use.
type Lifecycle struct {
	platform string
	notReady error

	mu    sync.Mutex
	phase phase
}

type phase int

const (
	phaseNew phase = iota
	phaseStarting
	phaseReceiving
	phaseStopped
)

// NewLifecycle returns the Lifecycle of platform ("slack"), whose Err wraps notReady (the
// adapter's ErrNotReady).
func NewLifecycle(platform string, notReady error) *Lifecycle {
	return &Lifecycle{platform: platform, notReady: notReady}
}

// Begin is the start guard: it moves a new channel to starting and returns nil; a channel
// started before, or stopped, stays as it is and gets an error naming why.
func (l *Lifecycle) Begin() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.phase {
	case phaseNew:
		l.phase = phaseStarting
		return nil
	case phaseStopped:
		return fmt.Errorf("%s: start: %w", l.platform, errStoppedForGood)
	}
	return fmt.Errorf("%s: start: %w", l.platform, errStartedAlready)
}

// Errors of Begin.
var (
	errStartedAlready = errors.New("already started (a channel starts once)")
	errStoppedForGood = errors.New("stopped (a channel starts once)")
)

// Receiving marks the end of a successful Start, unless the channel was stopped meanwhile.
func (l *Lifecycle) Receiving() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase == phaseStarting {
		l.phase = phaseReceiving
	}
}

// Stop marks the channel stopped (Stop, StopIntake, a Start that failed); it reports whether
// Begin had been called. Safe to call more than once.
func (l *Lifecycle) Stop() (began bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	began = l.phase != phaseNew
	l.phase = phaseStopped
	return began
}

// IsReceiving reports whether Start succeeded and the channel is not stopped.
func (l *Lifecycle) IsReceiving() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.phase == phaseReceiving
}

// Stopped reports whether the channel was stopped.
func (l *Lifecycle) Stopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.phase == phaseStopped
}

// Err is nil while the channel is receiving; otherwise an error wrapping the adapter's
// ErrNotReady that says which phase it is in.
func (l *Lifecycle) Err() error {
	l.mu.Lock()
	p := l.phase
	l.mu.Unlock()
	switch p {
	case phaseNew:
		return fmt.Errorf("%w: not started", l.notReady)
	case phaseStarting:
		return fmt.Errorf("%w: starting", l.notReady)
	case phaseStopped:
		return fmt.Errorf("%w: stopped", l.notReady)
	}
	return nil
}
