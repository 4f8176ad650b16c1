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

// runTurn runs one turn and writes exactly one turn/end.
func (a *Agent) runTurn(ctx context.Context, turn int, in Input) {
	a.writeTurnStart(turn, &in)
	reason, msg, err := a.steps(ctx, turn)
	a.writeTurnEnd(turn, reason, msg, err)
}

func (a *Agent) writeTurnStart(turn int, in *Input) {
	a.write(&Event{Kind: KindTurnStart, Turn: turn, Trigger: in.Source})
	if !in.Resume {
		e := &Event{Kind: KindUserMessage, Turn: turn, Content: in.Content, Source: in.Source}
		if len(in.Images) > 0 {
			e.Images = &in.Images
		}
		a.write(e)
	}
}

func (a *Agent) writeTurnEnd(turn int, reason TurnEndReason, msg string, err error) {
	a.write(&Event{Kind: KindTurnEnd, Turn: turn, Reason: reason, Error: msg, Err: err})
}

func (a *Agent) writeMark(kind Kind, turn, step int) {
	a.write(&Event{Kind: kind, Turn: turn, Step: step})
}

func (a *Agent) writeAssistant(turn, step int, resp *llm.Response) {
	a.write(&Event{Kind: KindAssistantMessage, Turn: turn, Step: step, Content: resp.Content, Reasoning: resp.Reasoning, Usage: resp.Usage})
}

func (a *Agent) writeChunk(turn, step int, content string) {
	a.write(&Event{Kind: KindAssistantChunk, Turn: turn, Step: step, Content: content})
}

func (a *Agent) writeToolCall(turn, step int, c *llm.ToolCall) {
	a.write(&Event{Kind: KindToolCall, Turn: turn, Step: step, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
}

func (a *Agent) writeToolResult(turn, step int, c *llm.ToolCall, r *ToolResult) {
	a.write(&Event{Kind: KindToolResult, Turn: turn, Step: step, CallID: c.ID, Tool: c.Name, Content: r.Content, IsError: r.IsError, Code: r.Code})
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
func (a *Agent) steps(ctx context.Context, turn int) (reason TurnEndReason, msg string, err error) {
	defer func() {
		if p := recover(); p != nil {
			a.rt.log.Error("agent: turn panicked; ended as error", "agent", a.id, "turn", turn, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
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
		a.writeMark(KindStepStart, turn, step)
		resp, err := a.callModel(ctx, turn, step)
		if err != nil {
			a.writeMark(KindStepEnd, turn, step)
			if ctx.Err() != nil {
				return interruption(ctx), "", nil
			}
			return TurnError, err.Error(), err
		}
		a.mu.Lock()
		a.usage = a.usage.Add(resp.Usage)
		a.mu.Unlock()
		a.writeAssistant(turn, step, &resp)
		a.runTools(ctx, turn, step, resp.ToolCalls)
		a.writeMark(KindStepEnd, turn, step)
		if ctx.Err() != nil {
			return interruption(ctx), "", nil
		}
		switch resp.Finish {
		case llm.FinishLength:
			return TurnMaxTokens, "", nil
		case llm.FinishRefusal:
			return TurnRejected, "the model refused to answer", nil
		}
		s := Step{Turn: turn, Step: step, Response: resp, ToolCalls: len(resp.ToolCalls)}
		if !runContinuationChain(ctx, a.rt.contHooks.list(), a, s) {
			return TurnCompleted, "", nil
		}
	}
}

// callModel builds the request, runs it through the request-shaping chain and streams the
// model's answer, writing chunks as they arrive. A failed model call is a *ModelError.
func (a *Agent) callModel(ctx context.Context, turn, step int) (llm.Response, error) {
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
			a.writeChunk(turn, step, d.Content)
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
func (a *Agent) runTools(ctx context.Context, turn, step int, calls []llm.ToolCall) {
	if len(calls) == 0 {
		return
	}
	for i := range calls {
		a.writeToolCall(turn, step, &calls[i])
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
			results[0] = a.runTool(ctx, turn, step, calls[i])
		} else {
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				wg.Go(func() { results[k-i] = a.runTool(ctx, turn, step, calls[k]) })
			}
			wg.Wait()
		}
		for k := range results {
			a.writeToolResult(turn, step, &calls[i+k], &results[k])
		}
		i = j
	}
}

// runTool gates one call through the pre-execute chain, checks its arguments and executes it.
func (a *Agent) runTool(ctx context.Context, turn, step int, c llm.ToolCall) (res ToolResult) {
	if ctx.Err() != nil {
		return Errorf(CodeFailed, "the call was cancelled before it ran")
	}
	t := a.rt.tool(c.Name)
	if t == nil || (a.opts.Tools != nil && !contains(a.opts.Tools, c.Name)) {
		return Errorf(CodeFailed, "unknown tool %q", c.Name)
	}
	args := json.RawMessage(c.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	call := ToolCall{ID: c.ID, Name: c.Name, Arguments: args, Agent: a, Turn: turn, Step: step}
	if v := runPreToolChain(ctx, a.rt.preToolHooks.list(), a, call); v.Deny {
		return ToolResult{Content: "Denied: " + v.Reason, IsError: true, Code: CodeDenied}
	}
	if bad := t.checkArgs(args); bad != nil {
		return *bad
	}
	defer func() {
		if p := recover(); p != nil {
			a.rt.log.Error("agent: tool panicked", "agent", a.id, "tool", c.Name, "panic", fmt.Sprint(p))
			res = Errorf(CodeFailed, "the tool failed")
		}
	}()
	res = t.Execute(ctx, call)
	if res.IsError && res.Code == "" {
		res.Code = CodeFailed
	}
	return res
}
