package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/agent/schema"
)

// InProcessRunOptions are the per-backend inputs of StartInProcessRun.
type InProcessRunOptions struct {
	// ProviderName names the backend, for error context.
	ProviderName string
	// Seed is copied to the start of the child's session (fork's completed-turn prefix); it
	// must be contiguous from seq 0. Nil starts a fresh child.
	Seed []agent.Event
	// ForkFrom, instead of Seed, seeds the child with that session's completed-turn prefix,
	// taken when the child is created and shared rather than copied (agent.CreateOptions.ForkFrom).
	ForkFrom *agent.Session
	// StructuredNudgeRetries is how many times a structured child that finished cleanly without
	// reporting is re-prompted. Required: 0 means never; negative is an error. The backend's
	// validated Config supplies it; there is no hidden default here.
	StructuredNudgeRetries int
}

// Run is one child run. Its result settles exactly once; Cancel and Dispose are safe to call
// at any time, from any goroutine.
type Run struct {
	id       string
	provider string
	child    *agent.Agent
	done     chan struct{}

	// The driver's state. It advances on the child's OnIdle callbacks, one at a time, so it
	// needs no goroutine of its own and no lock.
	ctx     context.Context // values for the child's turns
	st      *structuredState
	retries int
	seedLen int
	stop    func() bool // unhooks the ctx cancel; nil when ctx can never end
	acq     *StructuredAcquisition
	onIdle  func() // r.idle, bound once

	mu           sync.Mutex
	cancelled    bool
	cancelReason string
	settled      bool
	result       Result
	onSettle     []func(Result)
}

// StartInProcessRun starts a child of req.Parent on rt and drives it in the background: it
// sends the prompt, waits for the child to go idle, nudges a structured child that finished
// without reporting (up to opts.StructuredNudgeRetries times), and settles the result from the
// child's own events. The child's lifetime follows ctx: when ctx ends, the run is cancelled;
// ctx's values reach the child's tools.
//
// It returns a *DepthError when the child would exceed req.MaxDepth and an *OutputSchemaError
// when req.OutputSchema is not supported; in both cases no child exists. The caller must
// Dispose the run (which disposes the child) when done with it.
func StartInProcessRun(ctx context.Context, rt *agent.Runtime, req StartRequest, opts InProcessRunOptions) (*Run, error) {
	// 1. Depth.
	depth := DepthOf(req.Parent) + 1
	if req.MaxDepth > 0 && depth > req.MaxDepth {
		return nil, &DepthError{AttemptedDepth: depth, MaxDepth: req.MaxDepth}
	}
	if opts.StructuredNudgeRetries < 0 {
		return nil, fmt.Errorf("subagent: %s: structuredNudgeRetries must be a non-negative integer, got %d", opts.ProviderName, opts.StructuredNudgeRetries)
	}
	// 2. The schema, copied and checked before any child exists.
	var st *structuredState
	if len(req.OutputSchema) > 0 {
		var err error
		if st, err = newStructuredState(opts.ProviderName, req.OutputSchema); err != nil {
			return nil, err
		}
	}
	// 3–4. Fresh ids; the parent's model and nothing else, overlaid by the request.
	o := agent.Options{
		System:        append([]string(nil), req.AgentOptions.System...),
		SubagentDepth: depth,
		MaxSteps:      req.AgentOptions.MaxSteps,
		MaxTokens:     req.AgentOptions.MaxTokens,
	}
	co := agent.CreateOptions{ID: rt.NewID("sub"), SessionID: rt.NewID("ses"), Seed: opts.Seed, ForkFrom: opts.ForkFrom, Options: o}
	if p := req.Parent; p != nil {
		co.Options.Model = p.Options().Model
		h := p.Session().Header()
		co.Cwd, co.ParentSession = h.Cwd, h.SessionID
	}
	if req.AgentOptions.Model != "" {
		co.Options.Model = req.AgentOptions.Model
	}
	// 5. A structured run holds its own acquisition from here to settle.
	var acq *StructuredAcquisition
	if st != nil {
		var err error
		if acq, err = AcquireStructuredRuntime(rt); err != nil {
			return nil, fmt.Errorf("subagent: %s: %w", opts.ProviderName, err)
		}
	}
	// 6. The child (Create copies the seed and checks it is contiguous).
	child, err := rt.Create(co)
	if err != nil {
		acq.Release() // the reference leaks here
		return nil, fmt.Errorf("subagent: %s: create child: %w", opts.ProviderName, err)
	}
	if st != nil {
		child.Set(structuredKey{}, st)
	}
	r := &Run{id: child.ID(), provider: opts.ProviderName, child: child, done: make(chan struct{}),
		ctx: ctx, st: st, retries: opts.StructuredNudgeRetries, seedLen: child.Session().Header().SeedLength, acq: acq}
	r.onIdle = r.idle
	// 7. Cancellation: the caller's ctx cancels the run. A ctx already done means the run is
	// cancelled before anything is sent (checked here, synchronously, so it is deterministic).
	if ctx.Err() != nil {
		r.cancelled, r.cancelReason = true, cancelReasonOf(ctx)
	} else if ctx.Done() != nil {
		r.stop = context.AfterFunc(ctx, func() { r.Cancel(cancelReasonOf(ctx)) })
	}
	// 8. Send, then continue on the child's next idle (Run.idle); settling detaches the state
	// and releases the acquisition (10).
	sent, err := r.send(agent.Input{Content: req.Prompt, OnIdle: r.onIdle})
	switch {
	case !sent:
		_, reason := r.isCancelled()
		r.finish(Result{StopReason: StopAborted, Detail: cancelDetail(reason)})
	case err != nil:
		r.finish(Result{StopReason: StopError, Detail: "the subagent was disposed before it started"})
	}
	return r, nil
}

func newStructuredState(provider string, raw json.RawMessage) (*structuredState, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, &OutputSchemaError{Provider: provider, Violations: []schema.Violation{{Path: "schema", Message: "is not valid JSON"}}}
	}
	params := buf.Bytes() // a copy: the caller may reuse raw
	tree, err := schema.Parse(params)
	if err != nil {
		return nil, &OutputSchemaError{Provider: provider, Violations: []schema.Violation{{Path: "schema", Message: "is not valid JSON"}}}
	}
	if vs := schema.CheckSupported(tree); len(vs) > 0 {
		return nil, &OutputSchemaError{Provider: provider, Violations: vs}
	}
	return &structuredState{tree: tree, params: params}, nil
}

func cancelReasonOf(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error()
	}
	return "the caller's context ended"
}

// send enqueues one turn unless the run is cancelled. Holding mu across the check and the send
// means a Cancel either lands before (nothing is sent) or finds the child busy (and arms).
func (r *Run) send(in agent.Input) (sent bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancelledLocked() {
		return false, nil
	}
	return true, r.child.SendInput(r.ctx, in)
}

func (r *Run) isCancelled() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelledLocked(), r.cancelReason
}

// cancelledLocked reports whether the run is cancelled: by Cancel, or by the caller's context
// having ended. The context is read here, at every decision, rather than left to the
// context.AfterFunc that cancels the child: that runs on a goroutine of its own and may not
// have run yet, and the outcome must not depend on when it does. r.mu is held.
func (r *Run) cancelledLocked() bool {
	if !r.cancelled && r.ctx.Err() != nil {
		r.cancelled, r.cancelReason = true, cancelReasonOf(r.ctx)
	}
	return r.cancelled
}

// idle runs when the child goes idle after the driver's last send (on a goroutine the child no
// longer needs): it nudges a structured child that finished cleanly without reporting, while
// retries last, and otherwise settles the run from the child's own events.
func (r *Run) idle() {
	if r.st != nil && r.retries > 0 && !r.st.isCaptured() {
		cancelled, _ := r.isCancelled()
		// Only a clean finish is nudged.
		if end, ok := r.child.Session().Last(agent.KindTurnEnd, r.seedLen); !cancelled && ok && end.Reason == agent.TurnCompleted {
			r.retries--
			if sent, err := r.send(agent.Input{Content: NudgeText, Source: "nudge", OnIdle: r.onIdle}); sent && err == nil {
				return // continued on the next idle
			}
		}
	}
	r.finish(r.read(r.st, r.seedLen))
}

// finish unhooks the ctx cancel, detaches the structured state, releases the acquisition and
// settles the run with res.
func (r *Run) finish(res Result) {
	if r.stop != nil {
		r.stop()
	}
	if r.st != nil {
		r.child.Delete(structuredKey{})
	}
	r.acq.Release()
	r.settle(res)
}

func cancelDetail(reason string) string {
	if reason == "" {
		return "cancelled"
	}
	return "cancelled: " + reason
}

// read settles the result from the child's own events (index ≥ seedLen) only.
func (r *Run) read(st *structuredState, seedLen int) Result {
	var res Result
	session := r.child.Session()
	if msg, ok := session.Last(agent.KindAssistantMessage, seedLen); ok {
		res.Output = msg.Content
	}
	end, ended := session.Last(agent.KindTurnEnd, seedLen)
	cancelled, reason := r.isCancelled()
	switch {
	case !ended && cancelled:
		res.StopReason, res.Detail = StopAborted, cancelDetail(reason)
	case !ended:
		res.StopReason, res.Detail = StopError, "the subagent ended without finishing a turn"
	case end.Reason == agent.TurnCompleted:
		res.StopReason = StopCompleted
	case end.Reason == agent.TurnMaxTokens:
		res.StopReason, res.Detail = StopMaxTokens, "the model reached its output token limit"
	case end.Reason == agent.TurnAborted:
		res.StopReason, res.Detail = StopAborted, cancelDetail(reason)
	case end.Reason == agent.TurnDisposed:
		res.StopReason, res.Detail = StopError, "the subagent was disposed"
	default:
		res.StopReason, res.Detail = StopError, end.Error
		if res.Detail == "" {
			res.Detail = "the subagent's turn ended " + string(end.Reason)
		}
	}
	if st == nil {
		return res
	}
	if v, ok := st.capture(); ok {
		res.Structured = v
	} else if res.StopReason == StopCompleted {
		// A clean finish without the demanded result is a failure.
		res.StopReason, res.Detail = StopError, "the subagent finished without calling "+StructuredOutputTool
		if cancelled {
			res.StopReason, res.Detail = StopAborted, cancelDetail(reason)
		}
	}
	return res
}

func (r *Run) settle(res Result) {
	r.mu.Lock()
	r.settled, r.result = true, res
	fns := r.onSettle
	r.onSettle = nil
	r.mu.Unlock()
	for _, f := range fns {
		f(res)
	}
	close(r.done)
}

// afterSettle runs f with the result once the run settles (at once if it has), before
// Result returns to any waiter.
func (r *Run) afterSettle(f func(Result)) {
	r.mu.Lock()
	if !r.settled {
		r.onSettle = append(r.onSettle, f)
		r.mu.Unlock()
		return
	}
	res := r.result
	r.mu.Unlock()
	f(res)
}

// ID is the run's id (the child agent's id).
func (r *Run) ID() string { return r.id }

// Provider is the name of the provider that started the run.
func (r *Run) Provider() string { return r.provider }

// Agent is the child agent, for observing its session. Drive it only through the Run.
func (r *Run) Agent() *agent.Agent { return r.child }

// Done is closed once the result has settled.
func (r *Run) Done() <-chan struct{} { return r.done }

// Result waits for the run to settle and returns how it ended. Its only error is ctx's, when
// ctx ends first: a failed child settles with StopError instead.
func (r *Run) Result(ctx context.Context) (Result, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.result
	res.Structured = append(json.RawMessage(nil), res.Structured...)
	if len(res.Structured) == 0 {
		res.Structured = nil
	}
	return res, nil
}

// Cancel marks the run cancelled and cancels the child's queued and running work; the run
// settles aborted (a completed non-structured turn stays completed). After settle it does
// nothing.
func (r *Run) Cancel(reason string) {
	r.mu.Lock()
	if r.settled {
		r.mu.Unlock()
		return
	}
	if !r.cancelled {
		r.cancelled, r.cancelReason = true, reason
	}
	r.mu.Unlock()
	r.child.Cancel(reason)
}

// Dispose disposes the child (stopping its loop, removing it from the runtime) and waits for
// the run to settle. It does not mark the run cancelled: a dispose mid-run settles StopError.
// It returns ctx's error if ctx ends first. Idempotent.
func (r *Run) Dispose(ctx context.Context) error {
	if err := r.child.Dispose(ctx); err != nil {
		return fmt.Errorf("subagent: dispose run %s: %w", r.id, err)
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("subagent: dispose run %s: %w", r.id, ctx.Err())
	}
}
