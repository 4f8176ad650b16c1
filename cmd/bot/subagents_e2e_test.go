package main

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
)

// TestSubagentResultsShownBeforeTheAnswerInOrder proves, on the whole path (Telegram in, the
// lead on an OpenAI-compatible model, delegation to three parallel subagents, delivery), that
// each subagent's result is shown as it finishes — the next one to finish only does so once the
// one before is visible in the chat — and that the answer lists them in the order the lead asked
// for them (not the order they finished in: the reverse here), before the answer itself, under
// labels that never name a backend ("spawn").
func TestSubagentResultsShownBeforeTheAnswerInOrder(t *testing.T) {
	t.Parallel()
	// The placeholder's card shows the subagents (drafts off: a private chat would stream them
	// in drafts instead).
	e := newE2E(t, func(c *config.Config) { c.Runs.PlaceholderAfter, c.Telegram.Drafts = 10*time.Millisecond, false })
	// shown waits (on a model request's goroutine) until the chat shows text.
	shown := func(text string) {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		deadline := time.NewTimer(15 * time.Second)
		defer deadline.Stop()
		for {
			for _, m := range e.tg.Posted(ann.ID) {
				if strings.Contains(visible(m), text) {
					return
				}
			}
			select {
			case <-tick.C:
			case <-deadline.C:
				t.Errorf("the chat never showed %q while the other subagents worked", text)
				return
			}
		}
	}
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		if len(r.Messages) == 0 || r.Messages[0].Role != "system" || !strings.Contains(r.Messages[0].Content, "You are Switchboard") {
			// A subagent: gamma finishes first, then beta, then alpha.
			task := r.LastUserText()
			switch task {
			case "beta":
				shown("result of gamma")
			case "alpha":
				shown("result of beta")
			}
			return modelserver.Text("result of " + task)
		}
		if r.Messages[len(r.Messages)-1].Role == "tool" {
			return modelserver.Text("The answer draws on all three.")
		}
		return modelserver.Calls(
			modelserver.ToolCall{ID: "d1", Name: "delegate", Arguments: `{"task":"alpha"}`},
			modelserver.ToolCall{ID: "d2", Name: "delegate", Arguments: `{"task":"beta"}`},
			modelserver.ToolCall{ID: "d3", Name: "delegate", Arguments: `{"task":"gamma"}`},
		)
	})
	e.start()
	e.tg.PushPrivate(ann, "research three things")
	got := e.waitAnswers(ann.ID, 1)
	v := visible(got[0])
	at := -1
	for _, want := range []string{"Subagent 1", "result of alpha", "Subagent 2", "result of beta", "Subagent 3", "result of gamma", "The answer draws on all three."} {
		i := strings.Index(v, want)
		if i < 0 || i < at {
			t.Fatalf("the answer does not show %q after what comes before it:\n%s", want, v)
		}
		at = i
	}
	if strings.Contains(v, "spawn") {
		t.Errorf("the answer names the subagent backend:\n%s", v)
	}
}
