package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/agent/schema"
)

// DelegateToolName is the name of the lead agent's delegation tool.
const DelegateToolName = "delegate"

// DefaultMaxConcurrent bounds a parent's concurrent children when DelegateConfig leaves it 0.
const DefaultMaxConcurrent = 4

// delegateParameters is the delegate tool's argument schema.
const delegateParameters = `{"type":"object","properties":{
"task":{"type":"string","description":"What the subagent must do: a complete, self-contained instruction."},
"mode":{"type":"string","enum":["spawn","fork"],"description":"spawn (default): a fresh subagent that knows only the task. fork: a subagent that also sees this conversation's completed turns."},
"name":{"type":"string","description":"A short label for the subagent, shown to the user."},
"output_schema":{"type":"object","description":"Optional JSON Schema (root type object; keywords type, properties, required, additionalProperties, items, enum, const) the subagent's result must match; the result is then returned as JSON."}
},"required":["task"],"additionalProperties":false}`

// DelegateConfig configures the delegate tool.
type DelegateConfig struct {
	// MaxConcurrent bounds how many children one parent agent runs at once (subagents.max_concurrent;
	// 0: DefaultMaxConcurrent). The bound is per parent, so a nested delegation never waits on a
	// slot its own ancestor holds.
	MaxConcurrent int
	// MaxDepth caps nesting (subagents.max_depth); 0 means no cap.
	MaxDepth int
	// SpawnProvider and ForkProvider name the service providers of the two modes
	// (default "spawn" and "fork").
	SpawnProvider, ForkProvider string
	// ChildOptions are passed to every child (a model override, a system prompt, caps).
	ChildOptions AgentOptions
	// Limits, when set, gives the bounds for one calling agent instead of MaxConcurrent and
	// MaxDepth (the same meanings; ok false keeps them): the bounds of the place a run comes
	// from. A parent's concurrency bound is read when it first delegates.
	Limits func(parent *agent.Agent) (maxConcurrent, maxDepth int, ok bool)
}

// limits returns the bounds for parent.
func (d *delegateTool) limits(parent *agent.Agent) (maxConcurrent, maxDepth int) {
	maxConcurrent, maxDepth = d.cfg.MaxConcurrent, d.cfg.MaxDepth
	if d.cfg.Limits == nil {
		return maxConcurrent, maxDepth
	}
	if c, dp, ok := d.cfg.Limits(parent); ok {
		if c <= 0 {
			c = DefaultMaxConcurrent
		}
		maxConcurrent, maxDepth = c, max(dp, 0)
	}
	return maxConcurrent, maxDepth
}

type delegateTool struct {
	svc *Service
	cfg DelegateConfig

	mu sync.Mutex // guards creating per-parent semaphores
}

// semKey is the agent attachment key of a parent's semaphore for one delegate tool.
type semKey struct{ d *delegateTool }

type delegateArgs struct {
	Task         string          `json:"task"`
	Mode         string          `json:"mode"`
	Name         string          `json:"name"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

// RegisterDelegateTool registers the delegate tool on rt: the calling agent starts a spawn or
// fork run through svc, waits for it, and reads the child's output (or its structured value as
// JSON) as the tool result. A run that does not complete is an isError result saying why; the
// child is always disposed. Calls are Parallel, so several delegations in one step run at the
// same time, at most cfg.MaxConcurrent per parent. When the parent's turn is cancelled, the run
// is cancelled. Observe children through svc's events (ParentID, Name and CallID — the id of
// the delegate call — identify them).
func RegisterDelegateTool(rt *agent.Runtime, svc *Service, cfg DelegateConfig) (*agent.Registration, error) {
	if cfg.MaxConcurrent < 0 || cfg.MaxDepth < 0 {
		return nil, fmt.Errorf("subagent: delegate tool: max_concurrent and max_depth must be ≥ 0 (got %d, %d)", cfg.MaxConcurrent, cfg.MaxDepth)
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.SpawnProvider == "" {
		cfg.SpawnProvider = SpawnProviderName
	}
	if cfg.ForkProvider == "" {
		cfg.ForkProvider = ForkProviderName
	}
	d := &delegateTool{svc: svc, cfg: cfg}
	reg, err := rt.RegisterTool(agent.Tool{
		Name: DelegateToolName,
		Description: "Delegate a task to a subagent and get its result. Several delegate calls in one " +
			"response run in parallel. Give each a self-contained task.",
		Parameters: json.RawMessage(delegateParameters),
		Parallel:   true,
		Execute:    d.execute,
	})
	if err != nil {
		return nil, fmt.Errorf("subagent: delegate tool: %w", err)
	}
	return reg, nil
}

// sem returns the parent's semaphore, creating it on first use.
func (d *delegateTool) sem(parent *agent.Agent) chan struct{} {
	key := semKey{d}
	if s, ok := parent.Value(key).(chan struct{}); ok {
		return s
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := parent.Value(key).(chan struct{}); ok {
		return s
	}
	n, _ := d.limits(parent)
	s := make(chan struct{}, n)
	parent.Set(key, s)
	return s
}

func (d *delegateTool) execute(ctx context.Context, call agent.ToolCall) agent.ToolResult {
	var args delegateArgs
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: %v", err)
	}
	if strings.TrimSpace(args.Task) == "" {
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: task must not be empty")
	}
	provider := d.cfg.SpawnProvider
	switch args.Mode {
	case "", "spawn":
	case "fork":
		provider = d.cfg.ForkProvider
	default:
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: mode must be spawn or fork")
	}
	if string(args.OutputSchema) == "null" {
		args.OutputSchema = nil
	}
	label := args.Name
	if label == "" {
		label = provider
	}

	_, maxDepth := d.limits(call.Agent)
	sem := d.sem(call.Agent)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return agent.Errorf(agent.CodeFailed, "subagent %q was cancelled before it started", label)
	}
	defer func() { <-sem }()

	// ctx is the parent's turn: when it is cancelled the run is cancelled (Start wires it).
	run, err := d.svc.Start(ctx, provider, StartRequest{
		Prompt:       args.Task,
		Parent:       call.Agent,
		AgentOptions: d.cfg.ChildOptions,
		OutputSchema: args.OutputSchema,
		MaxDepth:     maxDepth,
		Name:         args.Name,
		CallID:       call.ID,
	})
	if err != nil {
		return startFailure(label, err)
	}
	defer func() { _ = run.Dispose(context.WithoutCancel(ctx)) }()
	// The run settles promptly once cancelled, so waiting is not tied to ctx.
	res, _ := run.Result(context.WithoutCancel(ctx))
	if res.StopReason != StopCompleted {
		return agent.Errorf(agent.CodeFailed, "subagent %q did not complete (%s): %s", label, res.StopReason, res.Detail)
	}
	if res.Structured != nil {
		return agent.ToolResult{Content: string(res.Structured)}
	}
	if res.Output == "" {
		return agent.ToolResult{Content: "(the subagent completed without a final message)"}
	}
	return agent.ToolResult{Content: res.Output}
}

// startFailure turns a refused start into a result the model can act on.
func startFailure(label string, err error) agent.ToolResult {
	var depth *DepthError
	var bad *OutputSchemaError
	switch {
	case errors.As(err, &depth):
		return agent.Errorf(agent.CodeDenied, "subagent %q not started: %s; do the task yourself", label, depth.Error())
	case errors.As(err, &bad):
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: output_schema: %s", schema.Join(bad.Violations))
	}
	return agent.Errorf(agent.CodeFailed, "subagent %q could not start: %v", label, err)
}
