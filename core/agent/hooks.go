package agent

import (
	"context"
	"sync"

	"github.com/switchboard-bot/switchboard/core/llm"
)

// RequestNext runs the rest of the request-shaping chain.
type RequestNext func(ctx context.Context, req llm.Request) (llm.Request, error)

// RequestHook shapes the request an agent is about to send, like net/http middleware: it may
// change req before calling next, and it sees and may change what the rest of the chain
// returned. A hook registered with prepend runs outermost: its post-processing comes last, so
// no hook registered after it can undo it. Returning an error ends the turn as an error.
type RequestHook func(ctx context.Context, a *Agent, req llm.Request, next RequestNext) (llm.Request, error)

// Step describes a finished step, for the continuation chain.
type Step struct {
	Turn      int
	Step      int
	Response  llm.Response
	ToolCalls int
}

// ContinueNext runs the rest of the continuation chain.
type ContinueNext func(ctx context.Context, s Step) bool

// ContinuationHook decides after each step whether the turn goes on (true) or stops (false).
// The end of the chain goes on exactly when the step called tools.
type ContinuationHook func(ctx context.Context, a *Agent, s Step, next ContinueNext) bool

// Verdict is the outcome of the tool pre-execute chain.
type Verdict struct {
	Deny bool
	// Reason is what the model reads when the call is denied.
	Reason string
}

// PreToolNext runs the rest of the pre-execute chain.
type PreToolNext func(ctx context.Context, call ToolCall) Verdict

// PreToolHook runs before each tool call; a deny verdict skips the call and the model reads a
// DENIED result carrying the reason. The end of the chain allows.
type PreToolHook func(ctx context.Context, a *Agent, call ToolCall, next PreToolNext) Verdict

// Listener sees every event written to any agent's session, synchronously, right after it is
// written. It must return quickly and must not call back into the agent's loop (Send is fine).
type Listener func(a *Agent, e Event)

// chain is a copy-on-write list of hooks: readers take the current slice without locking.
type chain[T any] struct {
	mu    sync.Mutex
	items []*entry[T]
	snap  []T
}

type entry[T any] struct{ fn T }

func (c *chain[T]) add(fn T, prepend bool) *Registration {
	e := &entry[T]{fn: fn}
	c.mu.Lock()
	if prepend {
		c.items = append([]*entry[T]{e}, c.items...)
	} else {
		c.items = append(c.items, e)
	}
	c.rebuild()
	c.mu.Unlock()
	return &Registration{remove: func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.items {
			if x == e {
				c.items = append(c.items[:i:i], c.items[i+1:]...)
				break
			}
		}
		c.rebuild()
	}}
}

func (c *chain[T]) rebuild() {
	s := make([]T, len(c.items))
	for i, e := range c.items {
		s[i] = e.fn
	}
	c.snap = s
}

func (c *chain[T]) list() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

func runRequestChain(ctx context.Context, hooks []RequestHook, a *Agent, req llm.Request) (llm.Request, error) {
	var at func(i int) RequestNext
	at = func(i int) RequestNext {
		return func(ctx context.Context, r llm.Request) (llm.Request, error) {
			if i >= len(hooks) {
				return r, nil
			}
			return hooks[i](ctx, a, r, at(i+1))
		}
	}
	return at(0)(ctx, req)
}

func runContinuationChain(ctx context.Context, hooks []ContinuationHook, a *Agent, s Step) bool {
	var at func(i int) ContinueNext
	at = func(i int) ContinueNext {
		return func(ctx context.Context, s Step) bool {
			if i >= len(hooks) {
				return s.ToolCalls > 0
			}
			return hooks[i](ctx, a, s, at(i+1))
		}
	}
	return at(0)(ctx, s)
}

func runPreToolChain(ctx context.Context, hooks []PreToolHook, a *Agent, call ToolCall) Verdict {
	var at func(i int) PreToolNext
	at = func(i int) PreToolNext {
		return func(ctx context.Context, c ToolCall) Verdict {
			if i >= len(hooks) {
				return Verdict{}
			}
			return hooks[i](ctx, a, c, at(i+1))
		}
	}
	return at(0)(ctx, call)
}
