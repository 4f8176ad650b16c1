// Package subagent runs child agents in-process on the agent runtime: the run driver
// (StartInProcessRun), the spawn and fork backends built on it, the structured-output runtime
// that lets a child report a value matching a JSON Schema, the subagent service that holds
// providers by name, and the delegate tool a lead agent calls to use all of it.
//
// Its behaviour is the one SUBAGENT-SPEC.md pins down for the seed's in-process driver.
package subagent

import (
	"encoding/json"

	"github.com/switchboard-bot/switchboard/core/agent"
)

// StartRequest asks a provider for one child run. The caller's context (the ctx passed to
// Start) plays the reference's signal: when it ends, the run is cancelled.
type StartRequest struct {
	// Prompt is the child's first user message.
	Prompt string
	// Parent is the agent delegating; nil starts a top-level child (depth 1, no lineage).
	Parent *agent.Agent
	// AgentOptions overlay what the child inherits (only the parent's model).
	AgentOptions AgentOptions
	// OutputSchema, when set, makes a structured run: the child must report its result through
	// the structured_output tool, as a value matching this JSON Schema (the supported subset,
	// root type object). The bytes are copied at start.
	OutputSchema json.RawMessage
	// MaxDepth caps the child's delegation depth; 0 means no cap.
	MaxDepth int
	// ToolFilter restricts the child's tools. No in-process provider supports it: a request
	// that sets it is refused with an UnsupportedCapabilityError.
	ToolFilter []string
	// Name is an optional label carried in the service's events (for display).
	Name string
	// CallID is the id of the tool call that asked for the run (the delegate tool sets it),
	// carried in the service's events so that a listener can tell which call a child answers.
	CallID string
}

// AgentOptions are what a request may set on the child. Zero fields leave the inherited value
// (for Model) or the runtime's default (for the rest).
type AgentOptions struct {
	// Model overrides the parent's model.
	Model string
	// System is the child's own system prompt; the parent's is never inherited.
	System []string
	// MaxSteps and MaxTokens cap the child's turns as agent.Options does.
	MaxSteps  int
	MaxTokens int
}

// needs reports which capabilities a request uses.
func (r StartRequest) needs() Capabilities {
	return Capabilities{OutputSchema: len(r.OutputSchema) > 0, DepthLimit: r.MaxDepth > 0, ToolFilter: r.ToolFilter != nil}
}

// Capabilities says which optional request fields a provider honours.
type Capabilities struct {
	OutputSchema bool
	DepthLimit   bool
	ToolFilter   bool
}

// StopReason says how a run ended.
type StopReason string

// The stop reasons a run settles with.
const (
	StopCompleted StopReason = "completed"
	StopAborted   StopReason = "aborted"
	StopError     StopReason = "error"
	StopMaxTokens StopReason = "max-tokens"
	StopRefusal   StopReason = "refusal"
)

// Result is how a run settled. A failure of the child never surfaces as an error from
// Run.Result: the run settles with StopError instead.
type Result struct {
	// Output is the content of the child's last own assistant/message ("" if it wrote none).
	Output string
	// Structured is the captured value, compact JSON, set only when the child captured one.
	Structured json.RawMessage
	StopReason StopReason
	// Detail says, briefly and for a reader, why a run did not complete (the turn's error, the
	// cancel reason, a missing structured result). Empty on a completed run.
	Detail string
}

// DepthOf is an agent's delegation depth: 0 for a top-level agent (or nil), parent+1 for a child.
func DepthOf(a *agent.Agent) int {
	if a == nil {
		return 0
	}
	return a.Options().SubagentDepth
}
