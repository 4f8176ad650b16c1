package agent

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/llm"
)

// prefilled is an event with every field set.
func prefilled() Event {
	return Event{
		Seq: 7, Kind: "old/kind", Turn: 3, Step: 2, Trigger: "t", Source: "s", Content: "c", Reasoning: "r",
		Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, CallID: "id", Tool: "tool",
		Arguments: "{}", IsError: true, Code: "CODE", Reason: "why", Error: "err",
	}
}

// TestAppendEventIsJSONMarshal: the hand-written encoder writes json.Marshal's bytes, for every
// field set or unset and for text json.Marshal escapes.
func TestAppendEventIsJSONMarshal(t *testing.T) {
	for _, e := range []Event{
		{},
		prefilled(),
		{Seq: -1, Turn: math.MinInt, Step: math.MaxInt, Kind: KindTurnStart},
		{Usage: llm.Usage{TotalTokens: 1}},
		{IsError: true, Code: CodeFailed},
		{Content: "<b>\"quoted\" & \\ slashed / \b\f\n\r\t \x00\x1f\x7f</b>"},
		{Content: "ünï 😀 \u2028 \u2029 \u2027 \ufffd invalid: \xff \xed\xa0\x80 \xe2\x82"},
		{Arguments: `{"q":"x\n"}`, Error: strings.Repeat("long ", 500)},
	} {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendEvent([]byte("prefix"), &e); string(got) != "prefix"+string(want) {
			t.Errorf("AppendEvent(%+v) = %s; json.Marshal writes %s", e, got, want)
		}
	}
}

// FuzzAppendEvent checks AppendEvent against json.Marshal on any event, and that encoding/json
// reads it back.
func FuzzAppendEvent(f *testing.F) {
	f.Add(3, 1, 2, "assistant/message", "user", "user", "a\nb <&> \u2028 😀", "r", 1, 2, 3, "c1", "t", `{"a":1}`, true, "FAILED", "completed", "e")
	f.Add(0, 0, 0, "", "", "", "\xff\x00", "", 0, 0, 0, "", "", "", false, "", "", "")
	f.Fuzz(func(t *testing.T, seq, turn, step int, kind, trigger, source, content, reasoning string,
		prompt, completion, total int, callID, tool, arguments string, isError bool, code, reason, errText string) {
		e := Event{Seq: seq, Kind: Kind(kind), Turn: turn, Step: step, Trigger: trigger, Source: source, Content: content,
			Reasoning: reasoning, Usage: llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: total},
			CallID: callID, Tool: tool, Arguments: arguments, IsError: isError, Code: Code(code), Reason: TurnEndReason(reason), Error: errText}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendEvent(nil, &e)
		if string(got) != string(want) {
			t.Fatalf("AppendEvent(%+v) = %s; json.Marshal writes %s", e, got, want)
		}
		var back Event
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("encoding/json cannot read AppendEvent's %s: %v", got, err)
		}
	})
}

// BenchmarkAppendEvent encodes the assistant message of a history turn with json.Marshal and
// with AppendEvent.
func BenchmarkAppendEvent(b *testing.B) {
	e := Event{Seq: 32, Kind: KindAssistantMessage, Turn: 5, Step: 2, Content: "**Answer 5**\n\nHere is what I found:\n- the first point, with <some> detail & more\n- the second point, a little longer than the first one\n\nLet me know if you need anything else.",
		Usage: llm.Usage{PromptTokens: 1005, CompletionTokens: 60, TotalTokens: 1065}}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendEvent", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendEvent(buf[:0], &e)
		}
	})
}

// BenchmarkDecodeEvent decodes the assistant message of a history turn (the largest event a
// turn keeps), as a run decodes every stored event of its thread.
func BenchmarkDecodeEvent(b *testing.B) {
	data := []byte(`{"seq":32,"kind":"assistant/message","turn":5,"step":2,"content":"**Answer 5**\n\nHere is what I found:\n- the first point, with \u003csome\u003e detail \u0026 more\n- the second point, a little longer than the first one\n\nLet me know if you need anything else.","usage":{"prompt_tokens":1005,"completion_tokens":60,"total_tokens":1065}}`)
	b.ReportAllocs()
	for b.Loop() {
		var e Event
		if err := json.Unmarshal(data, &e); err != nil || e.Usage.TotalTokens != 1065 {
			b.Fatal(e, err)
		}
	}
}
