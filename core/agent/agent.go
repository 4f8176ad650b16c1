package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/core/llm"
)

// ErrSeedAndFork is returned by Create when both CreateOptions.Seed and ForkFrom are set.
var ErrSeedAndFork = errors.New("agent: a session is seeded either from Seed or from ForkFrom, not both")

// ErrDisposed is returned by Send on a disposed agent, and is the cancel cause of a step cut off
// by Dispose.
var ErrDisposed = errors.New("agent: the agent is disposed")

// CancelError is the cancel cause of a turn aborted by Cancel.
type CancelError struct{ Reason string }

func (e *CancelError) Error() string {
	if e.Reason == "" {
		return "agent: cancelled"
	}
	return "agent: cancelled: " + e.Reason
}

// ModelError is the error of a turn that ended because its model call failed: the provider's
// error as it returned it (Unwrap), so callers classify it with errors.Is and errors.As (see
// llm.Temporary). Its text is the provider error's.
type ModelError struct{ Err error }

func (e *ModelError) Error() string { return e.Err.Error() }

func (e *ModelError) Unwrap() error { return e.Err }

// Options configure one agent.
type Options struct {
	// Model overrides the provider's default model.
	Model string
	// System is the system prompt, in sections sent in order.
	System []string
	// SubagentDepth is the delegation depth: 0 for a top-level agent, parent+1 for a child.
	SubagentDepth int
	// Tools names the runtime tools this agent is offered; nil offers every registered tool.
	Tools []string
	// MaxSteps caps the model calls of one turn (0: 25). Reaching it ends the turn as an error.
	MaxSteps int
	// MaxTokens is sent as the completion cap of each model call (0: the provider's default).
	MaxTokens int
}

// DefaultMaxSteps is the step cap of a turn when Options.MaxSteps is 0.
const DefaultMaxSteps = 25

func (o Options) clone() Options {
	o.System = append([]string(nil), o.System...)
	if o.Tools != nil {
		o.Tools = append([]string{}, o.Tools...)
	}
	return o
}

// CreateOptions describe a new agent.
type CreateOptions struct {
	// ID and SessionID default to fresh ids.
	ID, SessionID string
	Cwd           string
	ParentSession string
	// Seed is copied to the start of the session log; it must be contiguous from seq 0. Turn
	// numbers continue after the seed's.
	Seed []Event
	// ShareSeed makes the session read Seed in place instead of copying it, as it does a
	// ForkFrom prefix: new events go to the session's own memory, never into Seed's array, but
	// the caller must not change Seed's events after Create. It is for a caller that builds a
	// seed only to create the agent (a history decoded from storage), which it saves a second
	// copy of the whole history.
	ShareSeed bool
	// ForkFrom seeds the session with that session's completed turns instead: its events up to
	// and including its last turn/end at Create time (none if no turn has ended). They are
	// shared rather than copied — a written event never changes — so a fork costs no copy of
	// the parent's log. Setting both Seed and ForkFrom is an error.
	ForkFrom *Session
	Options  Options
}

// Status is where an agent is in its life.
type Status string

// Agent statuses.
const (
	StatusIdle     Status = "idle"
	StatusQueued   Status = "queued"
	StatusRunning  Status = "running"
	StatusDisposed Status = "disposed"
)

// Input is one queued prompt.
type Input struct {
	Content string
	// Images go with the user message to the model (not with a Resume); they are kept in the
	// session's memory only, never in an encoded event.
	Images []llm.Image
	// Source is recorded on the user/message ("user" when empty) and as the turn's trigger.
	Source string
	// Resume starts a turn without a user message: the model continues from the history as it
	// stands (e.g. after a tool result was filled in by a clarification answer). The turn's
	// trigger is Source ("resume" when empty).
	Resume bool
	// OnIdle, when set, is called once at the next running→idle transition after this input
	// was queued — exactly when a WhenIdle started right after SendInput would return (so also
	// at a pre-turn cancel, and when Dispose stops the agent). It runs on a goroutine the agent
	// no longer needs, so it may Send, Cancel or Dispose; a long OnIdle delays only itself.
	OnIdle func()
	// ctx carries values (identity, tracing) to the turn; never its cancellation.
	ctx context.Context
}

// Agent is a handle on one agent and its loop. Safe for concurrent use.
//
// The loop goroutine exists only while the agent has work: Send starts it, and it exits once
// the queue is empty, so an idle agent costs no goroutine.
type Agent struct {
	rt      *Runtime
	id      string
	opts    Options
	session *Session

	vmu    sync.Mutex
	values []valueEntry // what Set attached; a handful at most, so a slice beats a map

	mu       sync.Mutex
	queue    []Input
	busy     bool          // work queued or a turn running
	idleCh   chan struct{} // made by WhenIdle while busy, closed at the transition to idle
	idleFns  []func()      // OnIdle callbacks of the current busy spell
	fire     []func()      // OnIdle callbacks of a pre-turn cancel, for the loop to run
	looping  bool          // a loop goroutine is running (busy implies looping)
	running  bool
	cancelFn context.CancelCauseFunc
	disposed bool
	finished bool          // disposed, the loop gone and the agent out of the registry
	done     chan struct{} // made by a waiting Dispose, closed once finished
	nextTurn int
	usage    llm.Usage
}

type valueEntry struct{ key, value any }

// Spare event capacity of a new session. A subagent's turn is usually one step (turn/start,
// user/message, step/start, two chunks, assistant/message, step/end, turn/end: 8 events); a
// top-level agent's usually calls tools, so it gets room for a two-step turn.
const (
	childSlack    = 8
	topLevelSlack = 16
)

// Create makes an agent and registers it. Its loop starts with the first Send.
func (r *Runtime) Create(o CreateOptions) (*Agent, error) {
	if err := checkSeed(o.Seed); err != nil {
		return nil, err
	}
	slack := topLevelSlack
	if o.Options.SubagentDepth > 0 {
		slack = childSlack
	}
	var shared [][]Event
	nshared := 0
	var events []Event
	switch {
	case o.ForkFrom != nil && len(o.Seed) > 0:
		return nil, fmt.Errorf("agent: create: %w", ErrSeedAndFork)
	case o.ForkFrom != nil:
		shared, nshared = o.ForkFrom.completedPrefix()
		events = make([]Event, 0, slack)
	case o.ShareSeed && len(o.Seed) > 0:
		// Capped, so nothing is ever appended into the caller's array.
		shared, nshared = [][]Event{o.Seed[:len(o.Seed):len(o.Seed)]}, len(o.Seed)
		events = make([]Event, 0, slack)
	default:
		events = append(make([]Event, 0, len(o.Seed)+slack), o.Seed...)
	}
	if o.ID == "" {
		o.ID = r.NewID("ag")
	}
	if o.SessionID == "" {
		o.SessionID = r.NewID("ses")
	}
	a := &Agent{
		rt:   r,
		id:   o.ID,
		opts: o.Options.clone(),
		session: &Session{
			header:  Header{AgentID: o.ID, SessionID: o.SessionID, Cwd: o.Cwd, ParentSession: o.ParentSession, SeedLength: nshared + len(events)},
			shared:  shared,
			nshared: nshared,
			events:  events,
		},
		nextTurn: 1,
	}
	for _, seg := range shared {
		a.nextTurn = nextTurnAfter(seg, a.nextTurn)
	}
	a.nextTurn = nextTurnAfter(events, a.nextTurn)
	r.mu.Lock()
	if _, dup := r.agents[a.id]; dup {
		r.mu.Unlock()
		return nil, fmt.Errorf("agent: create %q: %w", a.id, ErrDuplicateAgent)
	}
	r.agents[a.id] = a
	r.mu.Unlock()
	return a, nil
}

// nextTurnAfter returns the first turn number after every turn in events, at least next.
func nextTurnAfter(events []Event, next int) int {
	for i := range events {
		if events[i].Turn >= next {
			next = events[i].Turn + 1
		}
	}
	return next
}

// ID is the agent's id.
func (a *Agent) ID() string { return a.id }

// Options returns a copy of the agent's options.
func (a *Agent) Options() Options { return a.opts.clone() }

// Session is the agent's session log.
func (a *Agent) Session() *Session { return a.session }

// Runtime is the runtime hosting the agent.
func (a *Agent) Runtime() *Runtime { return a.rt }

// Set attaches a value to the agent under key (for hooks that keep per-agent state). Keys
// compare with ==, as map keys do.
func (a *Agent) Set(key, value any) {
	a.vmu.Lock()
	defer a.vmu.Unlock()
	for i := range a.values {
		if a.values[i].key == key {
			a.values[i].value = value
			return
		}
	}
	a.values = append(a.values, valueEntry{key, value})
}

// Value returns what Set attached under key, or nil.
func (a *Agent) Value(key any) any {
	a.vmu.Lock()
	defer a.vmu.Unlock()
	for _, e := range a.values {
		if e.key == key {
			return e.value
		}
	}
	return nil
}

// Delete removes what Set attached under key.
func (a *Agent) Delete(key any) {
	a.vmu.Lock()
	defer a.vmu.Unlock()
	for i := range a.values {
		if a.values[i].key == key {
			last := len(a.values) - 1
			a.values[i] = a.values[last]
			a.values[last] = valueEntry{}
			a.values = a.values[:last]
			return
		}
	}
}

// Usage is the token usage of all the agent's model calls so far.
func (a *Agent) Usage() llm.Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage
}

// Status reports whether the agent is idle, has work queued, is running a turn, or is disposed.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.disposed:
		return StatusDisposed
	case a.running:
		return StatusRunning
	case a.busy:
		return StatusQueued
	}
	return StatusIdle
}

// Send enqueues a prompt as a new user turn, synchronously: once Send returns, WhenIdle waits for
// that turn. It fails only on a disposed agent.
func (a *Agent) Send(prompt string) error {
	return a.SendInput(context.Background(), Input{Content: prompt})
}

// SendInput enqueues like Send. The turn's context carries ctx's values (for tools), never its
// cancellation or deadline: use Cancel to stop a turn. in.OnIdle, if set, is registered in the
// same step as the input is queued.
func (a *Agent) SendInput(ctx context.Context, in Input) error {
	if in.Source == "" {
		in.Source = "user"
		if in.Resume {
			in.Source = "resume"
		}
	}
	in.ctx = ctx
	onIdle := in.OnIdle
	in.OnIdle = nil
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return fmt.Errorf("agent: send to %s: %w", a.id, ErrDisposed)
	}
	a.queue = append(a.queue, in)
	a.busy = true
	if onIdle != nil {
		a.idleFns = append(a.idleFns, onIdle)
	}
	start := !a.looping
	a.looping = true
	a.mu.Unlock()
	if start {
		go a.loop()
	}
	return nil
}

// WhenIdle returns at the next running→idle transition after queued work — at once if nothing
// is queued or running — or when a cancel in the pre-turn window empties the queue. It returns
// ctx's error if ctx ends first.
func (a *Agent) WhenIdle(ctx context.Context) error {
	a.mu.Lock()
	if !a.busy {
		a.mu.Unlock()
		return nil
	}
	if a.idleCh == nil {
		a.idleCh = make(chan struct{})
	}
	ch := a.idleCh
	a.mu.Unlock()
	return wait(ctx, ch)
}

// wait returns nil once ch is closed, or ctx's error if ctx ends first.
func wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// becomeIdle ends a busy spell: WhenIdle waiters are released and the spell's OnIdle callbacks
// are returned for the caller to run (or hand on) once a.mu is released. Call with a.mu held.
func (a *Agent) becomeIdle() []func() {
	if !a.busy {
		return nil
	}
	a.busy = false
	if a.idleCh != nil {
		close(a.idleCh)
		a.idleCh = nil
	}
	fns := a.idleFns
	a.idleFns = nil
	return fns
}

// Cancel clears the queue and aborts the current step; the turn ends `aborted`. It only arms
// when the agent is running or has work queued: on an idle agent it does nothing. A cancel
// before the queued turn starts empties the queue and writes no turn at all.
func (a *Agent) Cancel(reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.disposed || !a.busy {
		return
	}
	a.queue = nil
	if a.cancelFn != nil {
		a.cancelFn(&CancelError{Reason: reason})
		return
	}
	// Pre-turn window: nothing started, so nothing to end. The loop goroutine (busy implies
	// one) runs the OnIdle callbacks, never the caller of Cancel.
	a.fire = append(a.fire, a.becomeIdle()...)
}

// Dispose stops the agent for good: the current step is aborted as `disposed` and a closing
// turn/end{disposed} is written, the loop is waited for, and the agent leaves the registry.
// Idempotent; Send afterwards is an error. It returns ctx's error if ctx ends before the loop
// has exited (the agent is still disposed and leaves the registry once the loop exits).
func (a *Agent) Dispose(ctx context.Context) error {
	a.mu.Lock()
	if !a.disposed {
		a.disposed = true
		a.queue = nil
		if a.cancelFn != nil {
			a.cancelFn(ErrDisposed)
		}
		if !a.looping {
			// No loop will see the flag: finish here.
			a.mu.Unlock()
			a.finish()
			return nil
		}
	}
	if a.finished {
		a.mu.Unlock()
		return nil
	}
	if a.done == nil {
		a.done = make(chan struct{})
	}
	ch := a.done
	a.mu.Unlock()
	return wait(ctx, ch)
}

// finish takes a disposed agent whose loop is gone out of the registry and releases the
// Dispose calls waiting for that. It runs exactly once: from Dispose when no loop was running,
// else from the loop as it exits.
func (a *Agent) finish() {
	a.rt.unregister(a)
	a.mu.Lock()
	a.finished = true
	ch := a.done
	a.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// loop runs queued turns one at a time until the queue is empty or the agent is disposed, then
// exits; the next Send starts a new one.
func (a *Agent) loop() {
	for {
		a.mu.Lock()
		if a.disposed || len(a.queue) == 0 {
			fns := append(a.fire, a.becomeIdle()...)
			a.fire = nil
			a.looping = false
			disposed := a.disposed
			a.mu.Unlock()
			if disposed {
				a.finish()
			}
			for _, f := range fns {
				f()
			}
			return
		}
		if len(a.fire) > 0 {
			// A pre-turn cancel emptied the queue and new work came in before this loop
			// looked: that spell's callbacks must not wait for the new turn, nor run on the
			// loop (they may Dispose).
			go runAll(a.fire)
			a.fire = nil
		}
		in := a.queue[0]
		a.queue[0] = Input{}
		a.queue = a.queue[1:]
		base := context.Background()
		if in.ctx != nil && in.ctx != base {
			base = context.WithoutCancel(in.ctx)
		}
		ctx, cancel := context.WithCancelCause(base)
		a.cancelFn = cancel
		a.running = true
		n := a.nextTurn
		a.nextTurn++
		a.mu.Unlock()

		turn{a: a, n: n}.run(ctx, in)

		a.mu.Lock()
		a.cancelFn = nil
		a.running = false
		a.mu.Unlock()
		cancel(nil)
	}
}

func runAll(fns []func()) {
	for _, f := range fns {
		f()
	}
}

// write appends an event to the session (setting its Seq) and tells the listeners.
func (a *Agent) write(e *Event) {
	a.session.append(e)
	a.rt.emit(a, e)
}
