package discord

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

// TestSendCardWithLongResultsLosesNothing sends a card whose subagent result (with a code
// block) and field are far past a field's 1,024 characters: the fake, which refuses what Discord
// refuses, takes every message; every finding, code line and log entry shows exactly once, in
// the fields of the messages in order; the buttons ride on the last message.
func TestSendCardWithLongResultsLosesNothing(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	var summary, log strings.Builder
	for i := range 400 {
		fmt.Fprintf(&summary, "Finding %03d: a fact the answer draws on, kept in full.\n\n", i)
	}
	summary.WriteString("```go\n")
	for i := range 100 {
		fmt.Fprintf(&summary, "check(%03d) // a line of the script\n", i)
	}
	summary.WriteString("```\n")
	for i := range 150 {
		fmt.Fprintf(&log, "entry %03d ", i)
	}
	card := render.Card{Title: "Research", Status: render.StatusDone, Body: "The answer.",
		Subagents: []render.SubagentResult{{Name: "researcher", StopReason: "completed", Summary: summary.String()}},
		Fields:    []render.Field{{Label: "Log", Value: log.String()}},
		Actions:   []render.Action{{Label: "Again", ID: render.ActionID{Kind: render.ActionButton, Token: "run1"}}}}
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card})
	if err != nil {
		t.Fatal(err)
	}
	posted := h.fk.PostedByBot(k.Chat)
	if len(posted) < 5 || len(ref.IDs) != len(posted) {
		t.Fatalf("%d messages posted, %d in the ref, for a 28,000-character result", len(posted), len(ref.IDs))
	}
	var fields strings.Builder
	for i, m := range posted {
		if (len(m.Components) > 0) != (i == len(posted)-1) {
			t.Errorf("message %d of %d has %d component rows: they ride on the last", i, len(posted), len(m.Components))
		}
		for _, e := range m.Embeds {
			for _, f := range e.Fields {
				fields.WriteString(f.Value + "\n")
			}
		}
	}
	all := fields.String()
	for i := range 400 {
		if n := strings.Count(all, fmt.Sprintf("Finding %03d: a fact the answer draws on, kept in full.", i)); n != 1 {
			t.Fatalf("finding %d shown %d times", i, n)
		}
	}
	for i := range 100 {
		if n := strings.Count(all, fmt.Sprintf("check(%03d) // a line of the script\n", i)); n != 1 {
			t.Fatalf("code line %d shown %d times", i, n)
		}
	}
	for i := range 150 {
		if n := strings.Count(all, fmt.Sprintf("entry %03d", i)); n != 1 {
			t.Fatalf("log entry %d shown %d times", i, n)
		}
	}
}
