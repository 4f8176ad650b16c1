package runs

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
)

// EventKind says what a run event reports; the channels layer renders each kind.
type EventKind string

// The run event kinds. A run's events end with at most one of final, failed, cancelled or
// clarification (waiting).
const (
	EventStarted        EventKind = "started"
	EventProgress       EventKind = "progress"
	EventClarification  EventKind = "clarification"
	EventSubagentResult EventKind = "subagent_result"
	// EventSubagentStarted says a delegated child agent began (Subagent: its ID, Name, Order);
	// its EventSubagentResult follows when it ends.
	EventSubagentStarted EventKind = "subagent_started"
	// EventAnswerDelta carries answer text as the lead writes it: Text is the new text only, to
	// be appended to what came before; Part numbers the model step it belongs to (a new Part
	// starts a new paragraph: the text of a step that went on to call tools is followed by the
	// next step's). Deltas are only emitted to a sink that asks for them (AnswerDeltaSink), are
	// never recorded, and the final event still carries the whole answer: a channel that shows
	// them stops its stream with what the final text adds to them.
	EventAnswerDelta EventKind = "answer_delta"
	// EventApproval shows an approval card (Form, with its Approval) as a message of its own
	// while the run goes on: a subagent's call waits for the decision inside the run.
	EventApproval  EventKind = "approval"
	EventFinal     EventKind = "final"
	EventFailed    EventKind = "failed"
	EventCancelled EventKind = "cancelled"
)

// Terminal reports whether the kind ends a run's visible activity.
func (k EventKind) Terminal() bool {
	switch k {
	case EventFinal, EventFailed, EventCancelled, EventClarification:
		return true
	}
	return false
}

// Event is one thing a run tells the conversation. RunID and Step are stamped by Run.Emit: Step
// increases by one per event of one attempt, so (RunID, Step) identifies a send and a replayed run
// re-emits the same pairs, which the delivery side uses to edit or skip instead of posting twice.
type Event struct {
	RunID string    `json:"run_id"`
	Step  int       `json:"step"`
	Conv  conv.Key  `json:"conv"`
	Kind  EventKind `json:"kind"`
	// Text is markdown.
	Text string `json:"text,omitempty"`
	// Tool names the tool a progress event is about.
	Tool     string        `json:"tool,omitempty"`
	Subagent *SubagentInfo `json:"subagent,omitempty"`
	Form     *Form         `json:"form,omitempty"`
	// Reason is a short user-safe explanation for failed and cancelled events.
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	// Attempt and ReplyTo are the run envelope's, stamped by Run.Emit: the delivery side replies
	// to ReplyTo, and on attempt 1 knows no earlier attempt can have delivered anything (0 means
	// unknown: a run outside the queue).
	Attempt int    `json:"attempt,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
	// User is the channel_user_id of the person the run answers (the envelope's identity),
	// stamped by Run.Emit: a platform that streams to one recipient (Slack) needs it.
	User string `json:"user,omitempty"`
	// Part is an EventAnswerDelta's model step, from 1.
	Part int `json:"part,omitempty"`
}

// SubagentInfo is the result of one delegated child agent.
type SubagentInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Kind is "tool" for a tool call the lead made (Name is the tool), shown like a subagent;
	// empty for a subagent.
	Kind string `json:"kind,omitempty"`
	// Order is the child's place among the delegations of its run, from 1, in the order the lead
	// asked for them (0: unknown). Results are emitted as they finish; the channels show them in
	// this order.
	Order      int             `json:"order,omitempty"`
	StopReason string          `json:"stop_reason,omitempty"`
	Summary    string          `json:"summary,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
}

// FieldKind is the input a form field asks for.
type FieldKind string

// The form field kinds.
const (
	FieldChoice      FieldKind = "choice"
	FieldMultiChoice FieldKind = "multi_choice"
	FieldText        FieldKind = "text"
	FieldConfirm     FieldKind = "confirm"
)

// Form is a clarification request: a question and fields the user answers. Only AllowedUserID
// (a channel_user_id; empty means anyone in the conversation) may answer, before ExpiresAt.
type Form struct {
	ID            string      `json:"id"`
	Question      string      `json:"question"`
	Fields        []FormField `json:"fields,omitempty"`
	AllowFreeText bool        `json:"allow_free_text,omitempty"`
	AllowedUserID string      `json:"allowed_user_id,omitempty"`
	ExpiresAt     time.Time   `json:"expires_at"`
	// Approval is set when the form asks whether a tool call may run: its one field is the
	// decision, Approve or Deny.
	Approval *Approval `json:"approval,omitempty"`
}

// Approval describes a tool call waiting for a person's decision, as its card shows it.
type Approval struct {
	// Name is the tool's offered name; Server and Tool say whose tool it is.
	Name   string `json:"name"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Requester is who asked (display name, else channel_user_id).
	Requester string `json:"requester"`
	// Args are the arguments as people may see them: pretty JSON, secret-looking values masked.
	Args string `json:"args"`
	// AdminOnly says only an admin may decide; otherwise only the requester.
	AdminOnly bool `json:"admin_only,omitempty"`
	// Inline says the call waits inside its run (a subagent's): a decision is recorded for it,
	// not queued as a run of its own.
	Inline bool `json:"inline,omitempty"`
}

// Approval decisions, the answer text of an approval form.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
	// DecisionExpired comes from SystemUser's run when an approval's time ran out.
	DecisionExpired = "expired"
)

// DecisionMark names the router's mark (threads.Inbox.Mark) that records the decision on an
// approval whose call waits inside its run: "<decision>\n<decider's channel_user_id>".
func DecisionMark(approvalID string) string { return "decision:" + approvalID }

// SystemUser is the channel_user_id of runs Switchboard queues itself (an approval that
// expired); no platform gives a user this id.
const SystemUser = "switchboard"

// FormField is one input of a Form. Options are the choices for choice and multi_choice.
type FormField struct {
	ID       string    `json:"id"`
	Label    string    `json:"label"`
	Kind     FieldKind `json:"kind"`
	Options  []string  `json:"options,omitempty"`
	Required bool      `json:"required,omitempty"`
}

// Sink receives run events; the channels layer supplies it. Deliver may be called concurrently for
// different runs, never concurrently for one run. An error from Deliver is returned to the emitter.
type Sink interface {
	Deliver(ctx context.Context, ev Event) error
}

// AnswerDeltaSink is a Sink that can show answer text as it is written. The lead asks it once
// per run, before the run's first delta, and emits EventAnswerDelta only when it answers true:
// a sink without it (or answering false for the conversation) never receives a delta, so
// channels that post and edit pay nothing for them.
type AnswerDeltaSink interface {
	WantsAnswerDeltas(k conv.Key) bool
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, ev Event) error

// Deliver calls f.
func (f SinkFunc) Deliver(ctx context.Context, ev Event) error { return f(ctx, ev) }
