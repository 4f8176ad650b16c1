package lead_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// streamingCollector is a collector that asks for answer deltas.
type streamingCollector struct{ collector }

func (*streamingCollector) WantsAnswerDeltas(conv.Key) bool { return true }

// delegatingModel writes a line, delegates two tasks in the same step, then answers.
func delegatingModel() *llm.Scripted {
	return llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if !isLead(req) {
			return llm.Reply{Text: "done: " + lastMessage(req).Content}
		}
		if lastMessage(req).Role == llm.RoleUser {
			return llm.Reply{Text: "Let me ask two helpers.", ToolCalls: []llm.ToolCall{
				{ID: "d1", Name: "delegate", Arguments: `{"task":"alpha","name":"Alpha"}`},
				{ID: "d2", Name: "delegate", Arguments: `{"task":"beta","name":"Beta"}`},
			}}
		}
		return llm.Reply{Text: "Both helpers are done, and the answer is 42."}
	})
}

// TestAnswerDeltasStreamTheFinalText proves the lead streams its text as answer deltas to a
// sink that asks for them — each model step its own part, the last part adding up to the final
// answer exactly — and says when each subagent starts, before its result.
func TestAnswerDeltasStreamTheFinalText(t *testing.T) {
	team := newTeam(t, delegatingModel(), newStore(t))
	sink := &streamingCollector{}
	out, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "what is it?"), sink))
	if err != nil || out != runs.OutcomeAnswered {
		t.Fatalf("run: %v %v", out, err)
	}
	parts := map[int]string{}
	started := map[string]bool{}
	for _, e := range sink.events {
		switch e.Kind {
		case runs.EventAnswerDelta:
			if e.Part < 1 {
				t.Fatalf("delta without a part: %+v", e)
			}
			parts[e.Part] += e.Text
		case runs.EventSubagentStarted:
			started[e.Subagent.Name] = true
			if e.Subagent.ID == "" || e.Subagent.Order < 1 {
				t.Errorf("subagent start without id or order: %+v", e.Subagent)
			}
		case runs.EventSubagentResult:
			if !started[e.Subagent.Name] {
				t.Errorf("%s's result came before its start", e.Subagent.Name)
			}
		}
		if e.User != "U1" {
			t.Errorf("%s event without the envelope's user: %q", e.Kind, e.User)
		}
	}
	final := sink.last()
	if final.Kind != runs.EventFinal || final.Text != "Both helpers are done, and the answer is 42." {
		t.Fatalf("final %+v", final)
	}
	if len(parts) != 2 || parts[1] != "Let me ask two helpers." || parts[2] != final.Text {
		t.Fatalf("parts %v, want the first step's line and then the final text", parts)
	}
	if !started["Alpha"] || !started["Beta"] {
		t.Fatalf("subagent starts: %v", started)
	}
}

// TestNoAnswerDeltasForASinkThatDoesNotAsk proves a sink without AnswerDeltaSink (every
// post-and-edit channel) never receives a delta.
func TestNoAnswerDeltasForASinkThatDoesNotAsk(t *testing.T) {
	team := newTeam(t, delegatingModel(), newStore(t))
	sink := &collector{}
	if _, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "what is it?"), sink)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sink.kinds(), string(runs.EventAnswerDelta)) {
		t.Fatalf("deltas reached a sink that did not ask: %s", sink.kinds())
	}
	if sink.last().Kind != runs.EventFinal {
		t.Fatalf("events %s", sink.kinds())
	}
}

// manyDeltas is a model that streams its answer in many small pieces, then waits for the test
// before it returns.
type manyDeltas struct {
	pieces  []string
	emitted chan struct{} // closed once every piece went out
}

func (m *manyDeltas) Name() string { return "many" }

func (m *manyDeltas) Stream(_ context.Context, _ llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	for _, p := range m.pieces {
		onDelta(llm.Delta{Content: p})
	}
	close(m.emitted)
	return llm.Response{Content: strings.Join(m.pieces, ""), Finish: llm.FinishStop}, nil
}

// blockingSink holds the first answer delta until release is closed.
type blockingSink struct {
	streamingCollector
	release <-chan struct{}
	once    sync.Once
}

func (b *blockingSink) Deliver(ctx context.Context, ev runs.Event) error {
	if ev.Kind == runs.EventAnswerDelta {
		b.once.Do(func() { <-b.release })
	}
	return b.collector.Deliver(ctx, ev)
}

// TestAnswerDeltasCoalesceWhileTheSinkIsBusy proves the deltas written while the sink is busy
// with an earlier one go out as one event: a slow platform gets few, large appends, never one
// call per token, and the text is whole and in order.
func TestAnswerDeltasCoalesceWhileTheSinkIsBusy(t *testing.T) {
	pieces := make([]string, 50)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("w%d ", i)
	}
	model := &manyDeltas{pieces: pieces, emitted: make(chan struct{})}
	team := newTeam(t, model, newStore(t))
	sink := &blockingSink{release: model.emitted}
	if _, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "go"), sink)); err != nil {
		t.Fatal(err)
	}
	var deltas []string
	for _, e := range sink.events {
		if e.Kind == runs.EventAnswerDelta {
			deltas = append(deltas, e.Text)
		}
	}
	// The sink holds the first delta event until all 50 pieces were written: whatever the
	// first event took, the rest waited behind it as one.
	if len(deltas) < 1 || len(deltas) > 2 || strings.Join(deltas, "") != strings.Join(pieces, "") {
		t.Fatalf("%d deltas (%q), want at most two carrying the 50 pieces in order", len(deltas), deltas)
	}
}
