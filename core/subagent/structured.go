package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/agent/schema"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// StructuredOutputTool is the name of the capture tool a structured child reports its result with.
const StructuredOutputTool = "structured_output"

// StructuredInstruction is appended as the last system-prompt section of every structured child.
const StructuredInstruction = "When you have your final answer, you must report it by calling the `" +
	StructuredOutputTool + "` tool with arguments that match its parameter schema exactly. " +
	"A plain-text answer does not count as your result."

// NudgeText is sent as a fresh user turn to a structured child that finished a turn cleanly
// without reporting its result.
const NudgeText = "You finished without calling `" + StructuredOutputTool + "`. Call `" +
	StructuredOutputTool + "` now with your final result matching its parameter schema."

// RecordedText is what a valid capture call answers.
const RecordedText = "Structured output recorded."

// deniedAfterCapture is the reason a tool call after a capture is denied.
const deniedAfterCapture = "structured output already recorded; no further tool calls run in this turn"

// structuredKey is the agent attachment key of a structured run's state.
type structuredKey struct{}

// structuredState is one structured run's schema and capture, attached to its child agent.
type structuredState struct {
	tree   any             // the parsed schema, for validation
	params json.RawMessage // the schema as sent to the model

	mu       sync.Mutex
	captured bool
	value    json.RawMessage
}

func stateOf(a *agent.Agent) *structuredState {
	st, _ := a.Value(structuredKey{}).(*structuredState)
	return st
}

func (st *structuredState) capture() (json.RawMessage, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.value, st.captured
}

func (st *structuredState) isCaptured() bool {
	_, ok := st.capture()
	return ok
}

// StructuredAcquisition is one holder's claim on a runtime's structured-output machinery.
type StructuredAcquisition struct {
	rt   *agent.Runtime
	once sync.Once
}

type structuredRuntime struct {
	refs int
	regs []*agent.Registration
}

// structuredRuntimes holds the live registrations per runtime.
var structuredRuntimes = struct {
	mu sync.Mutex
	m  map[*agent.Runtime]*structuredRuntime
}{m: map[*agent.Runtime]*structuredRuntime{}}

// AcquireStructuredRuntime claims the runtime's structured-output machinery — the shared
// structured_output tool, the request-shaping hook (outermost), the turn-continuation hook and
// the pre-tool hook — registering it on the first claim. It stays registered until every
// acquisition has been released. It fails only when another structured_output tool is already
// registered on rt.
func AcquireStructuredRuntime(rt *agent.Runtime) (*StructuredAcquisition, error) {
	structuredRuntimes.mu.Lock()
	defer structuredRuntimes.mu.Unlock()
	sr := structuredRuntimes.m[rt]
	if sr == nil {
		tool, err := rt.RegisterTool(agent.Tool{
			Name:         StructuredOutputTool,
			Description:  "Report your final result. Call it once, with arguments matching its parameter schema.",
			Parameters:   json.RawMessage(`{"type":"object"}`), // a placeholder: each run's own schema is sent
			RawArguments: true,                                 // the tool validates against the run's schema itself
			Execute:      captureStructured,
		})
		if err != nil {
			return nil, fmt.Errorf("subagent: acquire structured runtime: %w", err)
		}
		sr = &structuredRuntime{regs: []*agent.Registration{
			tool,
			rt.UseRequestHook(shapeRequest, true),
			rt.UseContinuationHook(stopAfterCapture, true),
			rt.UsePreToolHook(denyAfterCapture, true),
		}}
		structuredRuntimes.m[rt] = sr
	}
	sr.refs++
	return &StructuredAcquisition{rt: rt}, nil
}

// Release gives the claim up; the last release unregisters the machinery. Idempotent.
func (q *StructuredAcquisition) Release() {
	if q == nil {
		return
	}
	q.once.Do(func() {
		structuredRuntimes.mu.Lock()
		defer structuredRuntimes.mu.Unlock()
		sr := structuredRuntimes.m[q.rt]
		if sr == nil {
			return
		}
		sr.refs--
		if sr.refs > 0 {
			return
		}
		delete(structuredRuntimes.m, q.rt)
		for _, r := range sr.regs {
			r.Remove()
		}
	})
}

// structuredRefs reports how many acquisitions rt has outstanding (for tests).
func structuredRefs(rt *agent.Runtime) int {
	structuredRuntimes.mu.Lock()
	defer structuredRuntimes.mu.Unlock()
	if sr := structuredRuntimes.m[rt]; sr != nil {
		return sr.refs
	}
	return 0
}

// captureStructured is the structured_output tool: it validates the arguments against the
// calling agent's own schema and records a valid value.
func captureStructured(_ context.Context, call agent.ToolCall) agent.ToolResult {
	st := stateOf(call.Agent)
	if st == nil {
		return agent.Errorf(agent.CodeFailed, "%s is only available to a subagent asked for structured output", StructuredOutputTool)
	}
	if vs := schema.ValidateJSON(st.tree, call.Arguments); len(vs) > 0 {
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: %s", schema.Join(vs))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, call.Arguments); err != nil {
		// Unreachable: a value matching an object schema is valid JSON.
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: not valid JSON")
	}
	st.mu.Lock()
	st.captured, st.value = true, buf.Bytes()
	st.mu.Unlock()
	return agent.ToolResult{Content: RecordedText}
}

// shapeRequest enforces the final request: it post-processes what the rest of the chain
// returned, so no downstream hook can undo it. A structured child's request carries
// structured_output with its own schema and the instruction as the last system section; any
// other agent's request never carries structured_output.
func shapeRequest(ctx context.Context, a *agent.Agent, req llm.Request, next agent.RequestNext) (llm.Request, error) {
	out, err := next(ctx, req)
	if err != nil {
		return out, err
	}
	st := stateOf(a)
	present := false
	for _, t := range out.Tools {
		if t.Name == StructuredOutputTool {
			present = true
			break
		}
	}
	if st == nil && !present {
		return out, nil
	}
	tools := make([]llm.ToolSpec, 0, len(out.Tools)+1)
	for _, t := range out.Tools {
		if t.Name != StructuredOutputTool {
			tools = append(tools, t)
		}
	}
	if st != nil {
		tools = append(tools, llm.ToolSpec{
			Name:        StructuredOutputTool,
			Description: "Report your final result. Call it once, with arguments matching this parameter schema.",
			Parameters:  st.params,
		})
		out.System = append(out.System[:len(out.System):len(out.System)], StructuredInstruction)
	}
	if len(tools) == 0 {
		tools = nil
	}
	out.Tools = tools
	return out, nil
}

// stopAfterCapture ends a structured child's turn as soon as it has captured its value.
func stopAfterCapture(ctx context.Context, a *agent.Agent, s agent.Step, next agent.ContinueNext) bool {
	if st := stateOf(a); st != nil && st.isCaptured() {
		return false
	}
	return next(ctx, s)
}

// denyAfterCapture denies every tool call of an agent that has captured, so no side effect
// runs after the result is in. Calls earlier in the same response have already run.
func denyAfterCapture(ctx context.Context, a *agent.Agent, call agent.ToolCall, next agent.PreToolNext) agent.Verdict {
	if st := stateOf(a); st != nil && st.isCaptured() {
		return agent.Verdict{Deny: true, Reason: deniedAfterCapture}
	}
	return next(ctx, call)
}
