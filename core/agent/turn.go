package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/switchboard-bot/switchboard/core/llm"
)

// turn is one turn of an agent: it runs the turn's model steps and their tool calls, and writes
// what happens to the agent's session. The agent's loop runs one at a time.
type turn struct {
	a *Agent
	n int // the turn's number
}

// run runs the turn and writes exactly one turn/end.
func (t turn) run(ctx context.Context, in Input) {
	t.writeStart(&in)
	reason, msg, err := t.steps(ctx)
	t.writeEnd(reason, msg, err)
}

func (t turn) writeStart(in *Input) {
	t.a.write(&Event{Kind: KindTurnStart, Turn: t.n, Trigger: in.Source})
	if !in.Resume {
		e := &Event{Kind: KindUserMessage, Turn: t.n, Content: in.Content, Source: in.Source}
		if len(in.Images) > 0 {
			e.Images = &in.Images
		}
		t.a.write(e)
	}
}

func (t turn) writeEnd(reason TurnEndReason, msg string, err error) {
	t.a.write(&Event{Kind: KindTurnEnd, Turn: t.n, Reason: reason, Error: msg, Err: err})
}

func (t turn) writeMark(kind Kind, step int) {
	t.a.write(&Event{Kind: kind, Turn: t.n, Step: step})
}

func (t turn) writeAssistant(step int, resp *llm.Response) {
	t.a.write(&Event{Kind: KindAssistantMessage, Turn: t.n, Step: step, Content: resp.Content, Reasoning: resp.Reasoning, Usage: resp.Usage})
}

func (t turn) writeChunk(step int, content string) {
	t.a.write(&Event{Kind: KindAssistantChunk, Turn: t.n, Step: step, Content: content})
}

func (t turn) writeToolCall(step int, c *llm.ToolCall) {
	t.a.write(&Event{Kind: KindToolCall, Turn: t.n, Step: step, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
}

func (t turn) writeToolResult(step int, c *llm.ToolCall, r *ToolResult) {
	t.a.write(&Event{Kind: KindToolResult, Turn: t.n, Step: step, CallID: c.ID, Tool: c.Name, Content: r.Content, IsError: r.IsError, Code: r.Code})
}

// interruption maps a done turn context to its turn-end reason.
func interruption(ctx context.Context) TurnEndReason {
	if errors.Is(context.Cause(ctx), ErrDisposed) {
		return TurnDisposed
	}
	return TurnAborted
}

// steps runs the turn's model steps and says how the turn ended: its reason, the message of a
// failed turn, and the error that ended it, if one did (a failed model call, a request hook's
// error).
func (t turn) steps(ctx context.Context) (reason TurnEndReason, msg string, err error) {
	a := t.a
	defer func() {
		if p := recover(); p != nil {
			a.rt.log.Error("agent: turn panicked; ended as error", "agent", a.id, "turn", t.n, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			reason, msg, err = TurnError, "internal error", nil
		}
	}()
	maxSteps := a.opts.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	for step := 1; ; step++ {
		if ctx.Err() != nil {
			return interruption(ctx), "", nil
		}
		if step > maxSteps {
			return TurnError, fmt.Sprintf("the turn reached its limit of %d model steps", maxSteps), nil
		}
		t.writeMark(KindStepStart, step)
		resp, err := t.callModel(ctx, step)
		if err != nil {
			t.writeMark(KindStepEnd, step)
			if ctx.Err() != nil {
				return interruption(ctx), "", nil
			}
			return TurnError, err.Error(), err
		}
		a.mu.Lock()
		a.usage = a.usage.Add(resp.Usage)
		a.mu.Unlock()
		t.writeAssistant(step, &resp)
		t.runTools(ctx, step, resp.ToolCalls)
		t.writeMark(KindStepEnd, step)
		if ctx.Err() != nil {
			return interruption(ctx), "", nil
		}
		switch resp.Finish {
		case llm.FinishLength:
			return TurnMaxTokens, "", nil
		case llm.FinishRefusal:
			return TurnRejected, "the model refused to answer", nil
		}
		s := Step{Turn: t.n, Step: step, Response: resp, ToolCalls: len(resp.ToolCalls)}
		if !runContinuationChain(ctx, a.rt.contHooks.list(), a, s) {
			return TurnCompleted, "", nil
		}
	}
}

// callModel builds the request, runs it through the request-shaping chain and streams the
// model's answer, writing chunks as they arrive. A failed model call is a *ModelError.
func (t turn) callModel(ctx context.Context, step int) (llm.Response, error) {
	a := t.a
	req := llm.Request{
		Model:     a.opts.Model,
		System:    append([]string(nil), a.opts.System...),
		Messages:  a.session.history(),
		Tools:     a.rt.toolSpecs(a.opts.Tools),
		MaxTokens: a.opts.MaxTokens,
	}
	req, err := runRequestChain(ctx, a.rt.requestHooks.list(), a, req)
	if err != nil {
		return llm.Response{}, fmt.Errorf("agent: shaping the request: %w", err)
	}
	resp, err := a.rt.provider.Stream(ctx, req, func(d llm.Delta) {
		if d.Content != "" {
			t.writeChunk(step, d.Content)
		}
	})
	if err != nil {
		return resp, &ModelError{Err: err}
	}
	return resp, nil
}

// runTools runs a step's tool calls in call order, writing a tool/call and a tool/result for
// each — even for calls cut off by a cancel, so the history stays well formed. Consecutive
// calls of Parallel tools run at the same time; their results are still written in order.
func (t turn) runTools(ctx context.Context, step int, calls []llm.ToolCall) {
	if len(calls) == 0 {
		return
	}
	a := t.a
	for i := range calls {
		t.writeToolCall(step, &calls[i])
	}
	for i := 0; i < len(calls); {
		j := i + 1
		if t := a.rt.tool(calls[i].Name); t != nil && t.Parallel {
			for j < len(calls) {
				if u := a.rt.tool(calls[j].Name); u == nil || !u.Parallel {
					break
				}
				j++
			}
		}
		results := make([]ToolResult, j-i)
		if j-i == 1 {
			results[0] = t.runTool(ctx, step, calls[i])
		} else {
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				wg.Go(func() { results[k-i] = t.runTool(ctx, step, calls[k]) })
			}
			wg.Wait()
		}
		for k := range results {
			t.writeToolResult(step, &calls[i+k], &results[k])
		}
		i = j
	}
}

// runTool gates one call through the pre-execute chain, checks its arguments and executes it.
func (t turn) runTool(ctx context.Context, step int, c llm.ToolCall) (res ToolResult) {
	a := t.a
	if ctx.Err() != nil {
		return Errorf(CodeFailed, "the call was cancelled before it ran")
	}
	tool := a.rt.tool(c.Name)
	if tool == nil || (a.opts.Tools != nil && !contains(a.opts.Tools, c.Name)) {
		return Errorf(CodeFailed, "unknown tool %q", c.Name)
	}
	args := json.RawMessage(c.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	call := ToolCall{ID: c.ID, Name: c.Name, Arguments: args, Agent: a, Turn: t.n, Step: step}
	if v := runPreToolChain(ctx, a.rt.preToolHooks.list(), a, call); v.Deny {
		return ToolResult{Content: "Denied: " + v.Reason, IsError: true, Code: CodeDenied}
	}
	if bad := tool.checkArgs(args); bad != nil {
		return *bad
	}
	defer func() {
		if p := recover(); p != nil {
			a.rt.log.Error("agent: tool panicked", "agent", a.id, "tool", c.Name, "panic", fmt.Sprint(p))
			res = Errorf(CodeFailed, "the tool failed")
		}
	}()
	res = tool.Execute(ctx, call)
	if res.IsError && res.Code == "" {
		res.Code = CodeFailed
	}
	return res
}
