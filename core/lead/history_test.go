package lead

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

func TestDecodeHistorySkipsUnreadableEvents(t *testing.T) {
	good := func(seq int, content string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"seq":%d,"kind":"user/message","turn":1,"content":%q}`, seq, content))
	}
	tests := []struct {
		name string
		raw  []json.RawMessage
		want []string // contents of the events kept, in order
	}{
		{"all readable", []json.RawMessage{good(0, "a"), good(1, "b")}, []string{"a", "b"}},
		{"not JSON", []json.RawMessage{good(0, "a"), json.RawMessage(`{`), good(2, "c")}, []string{"a", "c"}},
		{"no kind", []json.RawMessage{json.RawMessage(`{"seq":0,"content":"x"}`), good(1, "b")}, []string{"b"}},
		// Fails after content was decoded: nothing of it may leak into the next event.
		{"bad field after content", []json.RawMessage{json.RawMessage(`{"kind":"user/message","content":"leak","turn":"x"}`), json.RawMessage(`{"kind":"turn/start"}`)}, []string{""}},
		{"wrong type", []json.RawMessage{json.RawMessage(`[1,2]`), json.RawMessage(`"s"`), good(0, "a")}, []string{"a"}},
		{"empty", nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			team := &Team{log: slog.New(slog.DiscardHandler)}
			got := team.decodeHistory("conv", tc.raw)
			if len(got) != len(tc.want) {
				t.Fatalf("kept %d events, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, e := range got {
				if e.Content != tc.want[i] || e.Kind == "" {
					t.Errorf("event %d = %+v, want content %q and a kind", i, e, tc.want[i])
				}
			}
		})
	}
}

// BenchmarkDecodeHistory measures turning a chat's stored history (ten exchanges) back into
// agent events, which every run of the chat does.
func BenchmarkDecodeHistory(b *testing.B) {
	var raw []json.RawMessage
	for turn := 1; turn <= 10; turn++ {
		for _, e := range []agent.Event{
			{Kind: agent.KindUserMessage, Turn: turn, Source: "user", Content: fmt.Sprintf("m%d c12", turn)},
			{Kind: agent.KindAssistantMessage, Turn: turn, Step: 1, Content: fmt.Sprintf("echo: m%d c12", turn)},
		} {
			j, _ := json.Marshal(e)
			raw = append(raw, j)
		}
	}
	team := &Team{log: slog.New(slog.DiscardHandler)}
	b.ReportAllocs()
	for b.Loop() {
		if len(team.decodeHistory("conv", raw)) != len(raw) {
			b.Fatal("events lost")
		}
	}
}

// storedHistory is what BeginRun hands a run of a chat that has had turns exchanges: the events
// of each saved turn (as historyTurn encodes them), oldest first. Every fifth exchange calls a
// tool; answers are Markdown with newlines and characters encoding/json escapes.
func storedHistory(tb testing.TB, turns int) []json.RawMessage {
	tb.Helper()
	var raw []json.RawMessage
	for turn := 1; turn <= turns; turn++ {
		answer := fmt.Sprintf("**Answer %d**\n\nHere is what I found:\n- the first point, with <some> detail & more\n- the second point, a little longer than the first one\n\nLet me know if you need anything else.", turn)
		events := []agent.Event{
			{Kind: agent.KindTurnStart, Turn: turn, Trigger: "user"},
			{Kind: agent.KindUserMessage, Turn: turn, Source: "user", Content: fmt.Sprintf("question %d: could you look into the thing we talked about earlier?", turn)},
			{Kind: agent.KindStepStart, Turn: turn, Step: 1},
		}
		step := 1
		if turn%5 == 0 {
			events = append(events,
				agent.Event{Kind: agent.KindAssistantMessage, Turn: turn, Step: 1, Usage: llm.Usage{PromptTokens: 900 + turn, CompletionTokens: 30, TotalTokens: 930 + turn}},
				agent.Event{Kind: agent.KindToolCall, Turn: turn, Step: 1, CallID: "call_abc123", Tool: "delegate", Arguments: `{"task":"look it up","name":"researcher"}`},
				agent.Event{Kind: agent.KindToolResult, Turn: turn, Step: 1, CallID: "call_abc123", Tool: "delegate", Content: "The subagent found three relevant documents and summarised them."},
				agent.Event{Kind: agent.KindStepEnd, Turn: turn, Step: 1},
				agent.Event{Kind: agent.KindStepStart, Turn: turn, Step: 2},
			)
			step = 2
		}
		events = append(events,
			agent.Event{Kind: agent.KindAssistantMessage, Turn: turn, Step: step, Content: answer, Usage: llm.Usage{PromptTokens: 1000 + turn, CompletionTokens: 60, TotalTokens: 1060 + turn}},
			agent.Event{Kind: agent.KindStepEnd, Turn: turn, Step: step},
			agent.Event{Kind: agent.KindTurnEnd, Turn: turn, Reason: agent.TurnCompleted},
		)
		for i := range events {
			events[i].Seq = len(raw) + i
		}
		enc, err := historyTurn(events)
		if err != nil {
			tb.Fatal(err)
		}
		raw = append(raw, enc...)
	}
	return raw
}

// BenchmarkDecodeHistory50Turns measures what every run of a long chat does before its lead
// starts: the stored history (50 exchanges, the runs.history_turns default) decoded into agent
// events and seeded into a new lead agent.
func BenchmarkDecodeHistory50Turns(b *testing.B) {
	raw := storedHistory(b, 50)
	team := &Team{rt: agent.NewRuntime(llm.NewScripted()), log: slog.New(slog.DiscardHandler)}
	b.ReportAllocs()
	for b.Loop() {
		history := team.decodeHistory("conv", raw)
		if len(history) != len(raw) {
			b.Fatal("events lost")
		}
		a, err := team.newLead("", "", history)
		if err != nil {
			b.Fatal(err)
		}
		_ = a.Dispose(context.Background())
	}
}
