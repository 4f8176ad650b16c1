package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Outcome is how a run ended, as the handler reports it.
type Outcome string

// The outcomes a handler may return. Dead-lettered is not one: the queue decides that.
const (
	OutcomeAnswered  Outcome = "answered"
	OutcomeWaiting   Outcome = "waiting"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeFailed    Outcome = "failed"
)

// Valid reports whether o is one of the defined outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeAnswered, OutcomeWaiting, OutcomeCancelled, OutcomeFailed:
		return true
	}
	return false
}

// Handler runs one verified envelope, like net/http's Handler serves one request. The worker calls
// it with a ctx that is cancelled when the run is cancelled (interrupt policy, admin cancel), the
// lease is lost, or shutdown's deadline passes. Return an Outcome and nil, or an error: an error
// wrapped with Permanent fails the run at once; any other error is retried with backoff up to
// Options.MaxAttempts and then dead-lettered. A handler may run more than once for one run id (at
// least once delivery); Run.Emit's (RunID, Step) lets the delivery side deduplicate.
type Handler interface {
	HandleRun(ctx context.Context, run *Run) (Outcome, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, run *Run) (Outcome, error)

// HandleRun calls f.
func (f HandlerFunc) HandleRun(ctx context.Context, run *Run) (Outcome, error) { return f(ctx, run) }

// Run is one attempt at one envelope, handed to the Handler.
type Run struct {
	// Envelope is verified: its identity can be trusted. Attempt is 1 on the first try.
	Envelope *Envelope

	sink     Sink
	mu       sync.Mutex
	step     int
	terminal bool
	now      func() time.Time
}

// NewRun wraps an envelope for a handler outside the queue (tests, the offline console); events
// go to sink, or nowhere when sink is nil. The caller vouches that env is verified.
func NewRun(env *Envelope, sink Sink) *Run {
	return &Run{Envelope: env, sink: sink, now: time.Now}
}

// Emit stamps ev with the run id, the conversation, the next step number, the attempt, the message
// the run answers and the time (when unset), and delivers it to the sink. Steps increase by one
// per call, starting at 1, even when delivery fails; the sink's error is returned wrapped.
func (r *Run) Emit(ctx context.Context, ev Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step++
	ev.RunID = r.Envelope.RunID
	ev.Conv = r.Envelope.Conv
	ev.Step = r.step
	ev.Attempt = r.Envelope.Attempt
	ev.ReplyTo = r.Envelope.ReplyTo
	ev.User = r.Envelope.Identity.ChannelUserID
	if ev.At.IsZero() {
		ev.At = r.now()
	}
	if ev.Kind.Terminal() {
		r.terminal = true
	}
	if r.sink == nil {
		return nil
	}
	if err := r.sink.Deliver(ctx, ev); err != nil {
		return fmt.Errorf("runs: deliver %s step %d of run %s: %w", ev.Kind, ev.Step, ev.RunID, err)
	}
	return nil
}

// WantsAnswerDeltas reports whether the run's sink shows answer text as it is written
// (AnswerDeltaSink) in the run's conversation; emitters skip EventAnswerDelta otherwise.
func (r *Run) WantsAnswerDeltas() bool {
	s, ok := r.sink.(AnswerDeltaSink)
	return ok && s.WantsAnswerDeltas(r.Envelope.Conv)
}

// Step is the number of the last event emitted, 0 before the first.
func (r *Run) Step() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.step
}

func (r *Run) emittedTerminal() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminal
}

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// UnavailableError is a run failure caused by an outage of something the run needs — the model
// answering 5xx or 429, hanging, refusing connections — which lasts seconds to minutes. The pool
// tries the run again on the slow schedule of Options.OutageRetryBase (5 s, 20 s, 1 min, 2 min,
// then doubling, with jitter; never sooner than RetryAfter), up to Options.MaxAttempts; when the
// last attempt fails the run is dead-lettered and the user is told Reason.
type UnavailableError struct {
	Err error
	// Reason is the user-safe explanation shown if no attempt succeeds.
	Reason string
	// RetryAfter, when set, is the least wait before the next attempt (a Retry-After).
	RetryAfter time.Duration
}

func (e *UnavailableError) Error() string { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Permanent marks err as not worth retrying: the run fails at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or an error it wraps) was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
