package lead

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/core/tools"
)

// ToolSet is what the lead needs of the tools from MCP servers (core/tools.Manager).
type ToolSet interface {
	// Attach registers the tools on the runtime and filters every agent's request to what its
	// caller may use; the function returned undoes it.
	Attach(rt *agent.Runtime) func()
	// Names are the tools id may use at depth 0, offered to the lead.
	Names(id tools.Identity, depth int) []string
	// Owns reports whether a tool name is one of them.
	Owns(name string) bool
	// RunApproved calls a tool whose approval was given, as id.
	RunApproved(ctx context.Context, name string, args json.RawMessage, id tools.Identity) agent.ToolResult
	// ApprovalTTL is how long an approval waits.
	ApprovalTTL() time.Duration
	// Decided records a decision for audit and metrics.
	Decided(req tools.ApprovalRequest, decision, decidedBy string)
}

// pendingCall is the tool call an approval run decides on, stored with its waiting turn.
type pendingCall struct {
	Name     string          `json:"name"`
	Server   string          `json:"server"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Mode     tools.Approval  `json:"mode"`
	Identity tools.Identity  `json:"identity"`
	Admin    bool            `json:"admin,omitempty"`
}

func (p pendingCall) request() tools.ApprovalRequest {
	id := p.Identity
	id.Admin = p.Admin
	return tools.ApprovalRequest{Name: p.Name, Server: p.Server, Tool: p.Tool, Args: p.Args, Mode: p.Mode, Identity: id}
}

// maxApprovalArgs bounds the arguments an approval card shows.
const maxApprovalArgs = 1500

// park records the lead's call that needs approval, answers it with a note, and the turn then
// ends so the run can wait for the decision without holding a worker.
func (s *asked) park(call agent.ToolCall, req tools.ApprovalRequest) agent.ToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.form != nil || s.approval != nil {
		return agent.Errorf(agent.CodeDenied, "another question or approval is already waiting for the user; call %s again after it is decided", req.Name)
	}
	s.approval, s.callID = &req, call.ID
	return agent.ToolResult{Content: "The call waits for approval; the run continues once it is decided."}
}

// approver is the run's tools.Approver: the lead's call is parked (park); a subagent's call
// waits inside the run for the decision (waitInline), since a child cannot end its parent's
// run.
func (rs *runState) approver(ctx context.Context, call agent.ToolCall, req tools.ApprovalRequest) agent.ToolResult {
	if call.Agent == rs.lead {
		return rs.asked.park(call, req)
	}
	return rs.waitInline(ctx, call, req)
}

func (s *asked) approvalGet() (*tools.ApprovalRequest, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.approval, s.callID
}

func requesterName(id tools.Identity) string {
	if id.DisplayName != "" {
		return id.DisplayName
	}
	return id.ChannelUserID
}

// waitForApproval stores the call and the unfinished turn and shows the approval card: only
// the requester may decide, or, with approval: admin, only an admin.
func (t *Team) waitForApproval(ctx context.Context, run *runs.Run, events []agent.Event, text string, req tools.ApprovalRequest, callID string) (runs.Outcome, error) {
	env := run.Envelope
	form, allowed := approvalForm(req)
	pc := &pendingCall{Name: req.Name, Server: req.Server, Tool: req.Tool, Args: req.Args, Mode: req.Mode, Identity: req.Identity, Admin: req.Identity.Admin}
	raw, err := json.Marshal(pendingTurn{Form: form, CallID: callID, Events: events, Call: pc})
	if err != nil {
		return "", runs.Permanent(fmt.Errorf("lead: encoding the approval: %w", err))
	}
	c, err := t.store.Clarifications().Put(ctx, threads.Clarification{
		ID:            "a" + env.RunID,
		ConvKey:       env.Conv.String(),
		RunID:         env.RunID,
		AllowedUserID: allowed,
		Form:          raw,
		ExpiresAt:     expiry(t.opts.Tools.ApprovalTTL()),
	})
	if err != nil {
		return "", fmt.Errorf("lead: storing the approval: %w", err)
	}
	form.ID, form.ExpiresAt = c.ID, c.ExpiresAt
	if err := t.store.Clarifications().ScheduleExpiry(ctx, c.ID, c.ConvKey, c.ExpiresAt); err != nil {
		// The approval still expires when someone next clicks or writes in the conversation.
		t.log.Warn("lead: scheduling the approval's expiry failed", "approval", c.ID, "err", err)
	}
	t.log.Info("tools: approval asked", "tool", req.Name, "requester", req.Identity.ChannelUserID, "platform", req.Identity.Platform,
		"mode", req.Mode, "run", env.RunID, "approval", c.ID)
	return t.finish(ctx, run, runs.Event{Kind: runs.EventClarification, Form: &form, Text: text}, runs.OutcomeWaiting, nil)
}

// decision is the tool result an approval's decision gives the waiting call: the call's own
// result when approved (made now, as the requester), else a denial the model can explain.
func (t *Team) decision(ctx context.Context, env *runs.Envelope, p *pendingTurn, expired bool) agent.ToolResult {
	req := p.Call.request()
	decider := env.Identity.DisplayName
	if decider == "" {
		decider = env.Identity.ChannelUserID
	}
	switch {
	case expired:
		t.opts.Tools.Decided(req, "expired", "")
		return agent.ToolResult{Content: fmt.Sprintf("Denied: nobody approved this call of %s in time; it did not run.", req.Name), IsError: true, Code: agent.CodeDenied}
	case req.Mode == tools.ApprovalAdmin && !env.Identity.Admin:
		t.opts.Tools.Decided(req, "refused", env.Identity.ChannelUserID)
		return agent.ToolResult{Content: "Denied: the decision did not come from an admin; the call did not run.", IsError: true, Code: agent.CodeDenied}
	case env.Text == runs.DecisionApprove:
		t.opts.Tools.Decided(req, "approved", env.Identity.ChannelUserID)
		return t.opts.Tools.RunApproved(tools.WithIdentity(ctx, req.Identity), req.Name, req.Args, req.Identity)
	default:
		t.opts.Tools.Decided(req, "denied", env.Identity.ChannelUserID)
		return agent.ToolResult{Content: fmt.Sprintf("Denied: %s denied this call of %s; it did not run.", decider, req.Name), IsError: true, Code: agent.CodeDenied}
	}
}

// decided is the pending turn completed with the decision's result as the call's tool result.
func decided(p *pendingTurn, res agent.ToolResult) []agent.Event {
	out := make([]agent.Event, 0, len(p.Events))
	for _, e := range p.Events {
		if e.Kind == agent.KindToolResult && e.CallID == p.CallID {
			e.Content, e.IsError, e.Code = res.Content, res.IsError, res.Code
		}
		out = append(out, e)
	}
	return out
}

// maxToolSummaryRunes bounds what a tool call's line on the card says of a failure.
const maxToolSummaryRunes = 200

// toolResult shows a finished call of the lead's on its card: done, or failed with why. A
// call waiting for approval shows as waiting.
func (rs *runState) toolResult(e agent.Event) {
	info := &runs.SubagentInfo{ID: e.CallID, Name: e.Tool, Kind: "tool", StopReason: "completed"}
	if a, callID := rs.asked.approvalGet(); a != nil && callID == e.CallID {
		info.StopReason, info.Summary = "waiting", "waiting for approval"
	} else if e.IsError {
		info.StopReason = "error"
		info.Summary = e.Content
		if r := []rune(info.Summary); len(r) > maxToolSummaryRunes {
			info.Summary = string(r[:maxToolSummaryRunes]) + "…"
		}
	}
	rs.emit(runs.Event{Kind: runs.EventSubagentResult, Subagent: info})
}

// ExpiryEnqueuer queues the run that resumes an expired approval of a conversation.
type ExpiryEnqueuer func(ctx context.Context, convKey, approvalID string) error

// ExpireApprovals resumes, as denied, the runs whose approval's time ran out, until ctx ends:
// every interval it takes the approvals now due (each by exactly one of the processes sharing
// the store) and queues a run for each, which tells the model the call expired. An approval
// that could not be queued is scheduled again.
func (t *Team) ExpireApprovals(ctx context.Context, every time.Duration, enqueue ExpiryEnqueuer) {
	t.questions.expire(ctx, every, enqueue)
}

// approvalForm is the card asking whether req may run, and who may decide: the requester, or
// any admin (threads.AnyoneMayAnswer; the router checks admin rights).
func approvalForm(req tools.ApprovalRequest) (runs.Form, string) {
	allowed := req.Identity.ChannelUserID
	if req.Mode == tools.ApprovalAdmin {
		allowed = threads.AnyoneMayAnswer
	}
	return runs.Form{
		Question: fmt.Sprintf("Allow the tool %s to run?", req.Name),
		Fields: []runs.FormField{{ID: "decision", Label: "Decision", Kind: runs.FieldChoice,
			Options: []string{"Approve", "Deny"}, Required: true}},
		AllowedUserID: allowed,
		Approval: &runs.Approval{Name: req.Name, Server: req.Server, Tool: req.Tool, Requester: requesterName(req.Identity),
			Args: tools.DisplayArgs(req.Args, maxApprovalArgs), AdminOnly: req.Mode == tools.ApprovalAdmin},
	}, allowed
}

// inlinePoll is how often a call waiting inside its run looks for its decision.
const inlinePoll = 250 * time.Millisecond

// waitInline shows the approval card of a subagent's call and waits inside the run for the
// decision, at most tools.approval_ttl: approved, the call runs (as the requester); denied,
// expired, withdrawn (/new, /cancel) or cancelled, the child reads why it did not. Only one
// approval waits per conversation at a time; another call is refused with a reason.
func (rs *runState) waitInline(ctx context.Context, call agent.ToolCall, req tools.ApprovalRequest) agent.ToolResult {
	t, env := rs.t, rs.run.Envelope
	convKey := env.Conv.String()
	if _, open, err := t.store.Clarifications().Pending(ctx, convKey); err != nil || open {
		return agent.Errorf(agent.CodeDenied, "another question or approval is already waiting for the user; call %s again after it is decided", req.Name)
	}
	form, allowed := approvalForm(req)
	form.Approval.Inline = true
	// The id is the card's token: at most 40 of [A-Za-z0-9_-] (render.MaxTokenLen).
	sum := sha256.Sum256([]byte(call.ID))
	id := "s" + env.RunID + "-" + hex.EncodeToString(sum[:4])
	pc := &pendingCall{Name: req.Name, Server: req.Server, Tool: req.Tool, Args: req.Args, Mode: req.Mode, Identity: req.Identity, Admin: req.Identity.Admin}
	raw, err := json.Marshal(pendingTurn{Form: form, Call: pc})
	if err != nil {
		return agent.Errorf(agent.CodeFailed, "the approval could not be asked")
	}
	c, err := t.store.Clarifications().Put(ctx, threads.Clarification{ID: id, ConvKey: convKey, RunID: env.RunID, AllowedUserID: allowed,
		Form: raw, ExpiresAt: expiry(t.opts.Tools.ApprovalTTL())})
	if err != nil {
		t.log.Warn("lead: storing a subagent's approval failed", "run", env.RunID, "tool", req.Name, "err", err)
		return agent.Errorf(agent.CodeFailed, "the approval for %s could not be asked; try again later", req.Name)
	}
	form.ID, form.ExpiresAt = c.ID, c.ExpiresAt
	t.log.Info("tools: approval asked", "tool", req.Name, "requester", req.Identity.ChannelUserID, "platform", req.Identity.Platform,
		"mode", req.Mode, "run", env.RunID, "approval", c.ID, "subagent", call.Agent.ID())
	rs.emit(runs.Event{Kind: runs.EventApproval, Form: &form})

	tick := time.NewTicker(inlinePoll)
	defer tick.Stop()
	deadline := time.NewTimer(time.Until(c.ExpiresAt))
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			if _, _, err := t.store.Clarifications().Withdraw(context.WithoutCancel(ctx), convKey); err != nil {
				t.log.Debug("lead: withdrawing a cancelled call's approval failed", "approval", c.ID, "err", err)
			}
			return agent.Errorf(agent.CodeFailed, "the call was cancelled while it waited for approval")
		case <-deadline.C:
			if _, err := t.store.Clarifications().TakeExpired(context.WithoutCancel(ctx), c.ID); err == nil || errors.Is(err, threads.ErrClarificationOpen) {
				t.opts.Tools.Decided(req, "expired", "")
				return agent.ToolResult{Content: fmt.Sprintf("Denied: nobody approved this call of %s in time; it did not run.", req.Name), IsError: true, Code: agent.CodeDenied}
			}
			// Decided at the last moment: the next tick reads the decision.
		case <-tick.C:
		}
		if res, done := rs.inlineDecision(ctx, c.ID, req); done {
			return res
		}
	}
}

// inlineDecision reads the decision on an inline approval, if one was made, and acts on it.
func (rs *runState) inlineDecision(ctx context.Context, id string, req tools.ApprovalRequest) (agent.ToolResult, bool) {
	t := rs.t
	v, found, err := t.store.Inbox().Marked(ctx, runs.DecisionMark(id))
	if err != nil || !found {
		if c, gerr := t.store.Clarifications().Get(ctx, id); errors.Is(gerr, threads.ErrClarificationCancelled) || (gerr == nil && c.State == threads.StateCancelled) {
			t.opts.Tools.Decided(req, "withdrawn", "")
			return agent.ToolResult{Content: fmt.Sprintf("Denied: the approval for %s was withdrawn; the call did not run.", req.Name), IsError: true, Code: agent.CodeDenied}, true
		}
		return agent.ToolResult{}, false
	}
	decision, by, _ := strings.Cut(string(v), "\n")
	switch decision {
	case runs.DecisionApprove:
		t.opts.Tools.Decided(req, "approved", by)
		return t.opts.Tools.RunApproved(ctx, req.Name, req.Args, req.Identity), true
	case runs.DecisionDeny:
		t.opts.Tools.Decided(req, "denied", by)
		return agent.ToolResult{Content: fmt.Sprintf("Denied: the user denied this call of %s; it did not run.", req.Name), IsError: true, Code: agent.CodeDenied}, true
	}
	t.opts.Tools.Decided(req, "expired", "")
	return agent.ToolResult{Content: fmt.Sprintf("Denied: nobody approved this call of %s in time; it did not run.", req.Name), IsError: true, Code: agent.CodeDenied}, true
}
