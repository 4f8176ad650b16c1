package lead_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// TestLeadModelOutageIsTriedAgain: the lead's own model call failing with a status that may
// pass makes the run an outage (tried again, Retry-After kept) after one notice to the user.
func TestLeadModelOutageIsTriedAgain(t *testing.T) {
	outage := &llm.StatusError{Provider: "test", StatusCode: 503, RetryAfter: 7 * time.Second, Message: "busy"}
	team := newTeam(t, llm.NewScripted(llm.Reply{Err: outage}), newStore(t))
	sink := &collector{}
	out, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "hello"), sink))
	u, ok := errors.AsType[*runs.UnavailableError](err)
	if !ok || out != "" || u.RetryAfter != 7*time.Second || !errors.Is(err, outage) {
		t.Fatalf("HandleRun = %q, %v; want an *runs.UnavailableError wrapping the 503, retry after 7s", out, err)
	}
	if got := sink.kinds(); got != "started progress" {
		t.Fatalf("events %q, want the start and one notice", got)
	}
}

// TestLeadModelRefusingTheKeyFailsTheRun: a failure retrying will not fix ends the run at once,
// with a reason written for the user.
func TestLeadModelRefusingTheKeyFailsTheRun(t *testing.T) {
	team := newTeam(t, llm.NewScripted(llm.Reply{Err: fmt.Errorf("llm: test: %w", llm.ErrAuth)}), newStore(t))
	sink := &collector{}
	out, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "hello"), sink))
	if err != nil || out != runs.OutcomeFailed {
		t.Fatalf("HandleRun = %q, %v; want failed", out, err)
	}
	if last := sink.last(); last.Kind != runs.EventFailed || !strings.Contains(last.Reason, "API key") {
		t.Fatalf("last event %+v, want a failure naming the API key", last)
	}
}

// TestChildModelFailureIsNotTheLeads: a subagent's failed model call is the delegate tool's
// result, not the run's failure; only the lead's own call decides how the run ends.
func TestChildModelFailureIsNotTheLeads(t *testing.T) {
	for _, tt := range []struct {
		name   string
		lead   llm.Reply // the lead's reply once the child failed
		out    runs.Outcome
		outage bool
	}{
		{"the lead answers", llm.Reply{Text: "done without help"}, runs.OutcomeAnswered, false},
		{"the lead's own call fails for good", llm.Reply{Err: fmt.Errorf("llm: test: %w", llm.ErrAuth)}, runs.OutcomeFailed, false},
		{"the lead's own call fails for now", llm.Reply{Err: &llm.StatusError{Provider: "test", StatusCode: 502}}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
				if !isLead(req) {
					return llm.Reply{Err: &llm.StatusError{Provider: "test", StatusCode: 503, Message: "busy"}}
				}
				if lastMessage(req).Role == llm.RoleUser {
					return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "d1", Name: "delegate", Arguments: `{"task":"look it up","name":"helper"}`}}}
				}
				return tt.lead
			})
			team := newTeam(t, p, newStore(t))
			sink := &collector{}
			out, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "hello"), sink))
			if _, outage := errors.AsType[*runs.UnavailableError](err); outage != tt.outage || out != tt.out {
				t.Fatalf("HandleRun = %q, %v; want %q (outage %v)", out, err, tt.out, tt.outage)
			}
		})
	}
}
