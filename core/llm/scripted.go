package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrScriptExhausted is returned by a Scripted provider asked for more replies than it holds.
var ErrScriptExhausted = errors.New("llm: scripted provider has no reply left")

// Reply is one scripted model answer.
type Reply struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	// Finish defaults to FinishToolCalls when ToolCalls is set, FinishStop otherwise.
	Finish FinishReason
	Usage  Usage
	// Err makes the call fail with this error.
	Err error
	// Hang blocks the call until its context is done, then returns the context's error.
	Hang bool
}

// Scripted is a deterministic Provider for tests and the layers above: it answers each call with
// the next Reply of its script, or with what its function returns for the request. It records
// every request it was sent. Safe for concurrent use.
type Scripted struct {
	name string
	fn   func(Request) Reply

	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// NewScripted returns a provider that answers calls with replies, in order; once they are used
// up every call fails with ErrScriptExhausted.
func NewScripted(replies ...Reply) *Scripted {
	return &Scripted{name: "scripted", replies: replies}
}

// ScriptFunc returns a provider that answers each call with fn(request). fn runs on the calling
// goroutine and must be safe for concurrent use when the provider is shared.
func ScriptFunc(fn func(Request) Reply) *Scripted {
	return &Scripted{name: "scripted", fn: fn}
}

// Name reports "scripted".
func (s *Scripted) Name() string { return s.name }

// Requests returns copies of every request received so far, in arrival order.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.Clone()
	}
	return out
}

// Calls reports how many requests were received so far.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Stream answers with the next scripted reply, streaming its text in two pieces.
func (s *Scripted) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req.Clone())
	var r Reply
	switch {
	case s.fn != nil:
		s.mu.Unlock()
		r = s.fn(req) // the request is the caller's per-call value; only the record is a copy
	case len(s.replies) == 0:
		s.mu.Unlock()
		return Response{}, ErrScriptExhausted
	default:
		r = s.replies[0]
		s.replies = s.replies[1:]
		s.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if r.Hang {
		<-ctx.Done()
		return Response{}, ctx.Err()
	}
	if r.Err != nil {
		return Response{}, fmt.Errorf("llm: scripted: %w", r.Err)
	}
	if onDelta != nil {
		if r.Reasoning != "" {
			onDelta(Delta{Reasoning: r.Reasoning})
		}
		half := len(r.Text) / 2
		for half > 0 && half < len(r.Text) && r.Text[half]&0xC0 == 0x80 {
			half++ // keep UTF-8 sequences whole
		}
		if half > 0 {
			onDelta(Delta{Content: r.Text[:half]})
		}
		if half < len(r.Text) {
			onDelta(Delta{Content: r.Text[half:]})
		}
	}
	resp := Response{Content: r.Text, Reasoning: r.Reasoning, Finish: r.Finish, Usage: r.Usage}
	resp.ToolCalls = append([]ToolCall(nil), r.ToolCalls...)
	if resp.Finish == "" {
		resp.Finish = FinishStop
		if len(r.ToolCalls) > 0 {
			resp.Finish = FinishToolCalls
		}
	}
	return resp, nil
}
