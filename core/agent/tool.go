package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/core/agent/schema"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// Code classifies a failed tool result.
type Code string

// Tool result error codes.
const (
	CodeInvalidArgs Code = "INVALID_ARGS"
	CodeDenied      Code = "DENIED"
	CodeFailed      Code = "FAILED"
)

// ToolCall is one call of a tool by an agent.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the JSON the model wrote ("{}" when it wrote nothing). For a tool with
	// RawArguments it may be invalid JSON.
	Arguments json.RawMessage
	Agent     *Agent
	Turn      int
	Step      int
}

// ToolResult is what a tool answers; Content is what the model reads.
type ToolResult struct {
	Content string
	IsError bool
	Code    Code
}

// Errorf builds an isError result with the given code; the model reads "Error: " + message.
func Errorf(code Code, format string, args ...any) ToolResult {
	return ToolResult{Content: "Error: " + fmt.Sprintf(format, args...), IsError: true, Code: code}
}

// Tool is a function the model may call. Execute runs with a context that is cancelled when the
// agent's turn is cancelled or the agent disposed; a panic in Execute becomes a FAILED result.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments. Unless RawArguments is set, the runtime
	// checks arguments against it (the supported subset; other keywords are ignored) and answers
	// an INVALID_ARGS result itself when they are not JSON or do not fit.
	Parameters json.RawMessage
	// RawArguments hands the model's arguments to Execute unchecked.
	RawArguments bool
	// Parallel lets consecutive calls of parallel tools within one step run at the same time.
	// Their results are still recorded in call order.
	Parallel bool
	Execute  func(ctx context.Context, call ToolCall) ToolResult

	parsed any // Parameters parsed once at registration
}

func (t *Tool) spec() llm.ToolSpec {
	return llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
}

// checkArgs returns nil when raw fits the tool's parameters, or the isError result to answer.
func (t *Tool) checkArgs(raw json.RawMessage) *ToolResult {
	if t.RawArguments {
		return nil
	}
	v, err := schema.Parse(raw)
	if err != nil {
		r := Errorf(CodeInvalidArgs, "invalid arguments: not valid JSON")
		return &r
	}
	if t.parsed == nil {
		if _, ok := v.(map[string]any); !ok {
			r := Errorf(CodeInvalidArgs, "invalid arguments: value must be object")
			return &r
		}
		return nil
	}
	if vs := schema.Validate(t.parsed, v); len(vs) > 0 {
		r := Errorf(CodeInvalidArgs, "invalid arguments: %s", schema.Join(vs))
		return &r
	}
	return nil
}

// Registration undoes one registration (a tool, a hook, a listener). Remove is idempotent.
type Registration struct {
	once   sync.Once
	remove func()
}

// Remove undoes the registration; calling it again does nothing.
func (r *Registration) Remove() {
	if r == nil {
		return
	}
	r.once.Do(r.remove)
}
