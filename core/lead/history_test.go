package lead

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
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
