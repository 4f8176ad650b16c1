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
			hr := &historyReader{log: slog.New(slog.DiscardHandler)}
			got := hr.decode("conv", tc.raw)
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
	hr := &historyReader{log: slog.New(slog.DiscardHandler)}
	b.ReportAllocs()
	for b.Loop() {
		if len(hr.decode("conv", raw)) != len(raw) {
			b.Fatal("events lost")
		}
	}
}

// TestHistoryTurnIsTheExchangeWithoutChunks: the saved turn is the answered pending turn, then
// the run's own events, each as json.Marshal writes it, chunks left out; the events share a
// buffer, capped so that appending to one never overwrites the next.
func TestHistoryTurnIsTheExchangeWithoutChunks(t *testing.T) {
	completed := []agent.Event{
		{Seq: 0, Kind: agent.KindToolCall, Turn: 1, Step: 1, CallID: "q1", Tool: ClarifyToolName, Arguments: `{"question":"which?"}`},
		{Seq: 1, Kind: agent.KindToolResult, Turn: 1, Step: 1, CallID: "q1", Content: "The user answered:\n<this one> & that"},
	}
	own := []agent.Event{
		{Seq: 2, Kind: agent.KindTurnStart, Turn: 2, Trigger: "clarification"},
		{Seq: 3, Kind: agent.KindAssistantChunk, Turn: 2, Step: 1, Content: "Do"},
		{Seq: 4, Kind: agent.KindAssistantChunk, Turn: 2, Step: 1, Content: "ne"},
		{Seq: 5, Kind: agent.KindAssistantMessage, Turn: 2, Step: 1, Content: "Done", Usage: llm.Usage{PromptTokens: 1, TotalTokens: 1}},
		{Seq: 6, Kind: agent.KindTurnEnd, Turn: 2, Reason: agent.TurnCompleted},
	}
	got := historyTurn(completed, own)
	var want []json.RawMessage
	for _, e := range append(append([]agent.Event(nil), completed...), own...) {
		if e.Kind != agent.KindAssistantChunk {
			b, _ := json.Marshal(e)
			want = append(want, b)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("historyTurn kept %d events, want %d: %s", len(got), len(want), got)
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Errorf("event %d = %s, want %s", i, got[i], want[i])
		}
	}
	_ = append(got[0], '!')
	if string(got[1]) != string(want[1]) {
		t.Errorf("appending to an event overwrote the next: %s", got[1])
	}
	if got := historyTurn(nil, nil); len(got) != 0 {
		t.Errorf("historyTurn of nothing = %s", got)
	}
}

// BenchmarkHistoryTurn measures encoding what a run adds to its thread: a turn with a tool call
// and a streamed answer.
func BenchmarkHistoryTurn(b *testing.B) {
	var own []agent.Event
	for _, e := range storedHistory(b, 5)[24:] { // the fifth exchange, which calls a tool
		var ev agent.Event
		if err := json.Unmarshal(e, &ev); err != nil {
			b.Fatal(err)
		}
		own = append(own, ev)
		if ev.Kind == agent.KindStepStart {
			for range 10 {
				own = append(own, agent.Event{Kind: agent.KindAssistantChunk, Turn: ev.Turn, Step: ev.Step, Content: "some streamed words "})
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(historyTurn(nil, own)) != 11 {
			b.Fatal("wrong turn")
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
		raw = append(raw, historyTurn(nil, events)...)
	}
	return raw
}

// BenchmarkDecodeHistory50Turns measures what every run of a long chat does before its lead
// starts: the stored history (50 exchanges, the runs.history_turns default) decoded into agent
// events and seeded into a new lead agent.
func BenchmarkDecodeHistory50Turns(b *testing.B) {
	raw := storedHistory(b, 50)
	team := &Team{rt: agent.NewRuntime(llm.NewScripted()), log: slog.New(slog.DiscardHandler)}
	hr := &historyReader{log: team.log}
	b.ReportAllocs()
	for b.Loop() {
		history := hr.decode("conv", raw)
		if len(history) != len(raw) {
			b.Fatal("events lost")
		}
		a, err := team.newLead("", place{}, "", history, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = a.Dispose(context.Background())
	}
}
