package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/llm"
)

// prefilled is the event decoding starts from in these tests: every field set, so a decoder that
// zeroes what data does not name, or leaves set what it does, shows.
func prefilled() Event {
	return Event{
		Seq: 7, Kind: "old/kind", Turn: 3, Step: 2, Trigger: "t", Source: "s", Content: "c", Reasoning: "r",
		Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, CallID: "id", Tool: "tool",
		Arguments: "{}", IsError: true, Code: "CODE", Reason: "why", Error: "err",
	}
}

// checkLikeEncodingJSON decodes data with DecodeEvent and with json.Unmarshal, both from a
// prefilled event, and fails unless the events and the errors are the same.
func checkLikeEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	got, want := prefilled(), prefilled()
	gotErr := DecodeEvent(data, &got)
	wantErr := json.Unmarshal(data, &want)
	if got != want {
		t.Fatalf("DecodeEvent(%q) = %+v; encoding/json reads %+v", data, got, want)
	}
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("DecodeEvent(%q) error = %v; encoding/json says %v", data, gotErr, wantErr)
	}
}

func TestDecodeEventMalformedInputIsReadAsEncodingJSONReadsIt(t *testing.T) {
	for _, data := range []string{
		``, ` `, `{`, `}`, `{"seq":1`, `{"seq":1,}`, `{"seq":1 "kind":"x"}`, `{"seq" 1}`, `{seq:1}`,
		`{"seq":1}x`, `{"seq":1}{}`, `[]`, `null`, `"x"`, `1`, `true`, `{"kind":"a"`, `{"kind":"a}`,
		`{"kind":"a\"}`, `{"kind":"a\`, `{"kind":"a\x"}`, `{"kind":"\u12"}`, `{"kind":"\u12G4"}`,
		"{\"kind\":\"a\nb\"}", "{\"kind\":\"a\x00\"}", "{\"kind\x01\":\"a\"}",
		// Valid JSON, but not what the fast path reads: encoding/json decides, type errors and all.
		`{"seq":null}`, `{"seq":"1"}`, `{"seq":1.0}`, `{"seq":1e3}`, `{"seq":-}`, `{"seq":01}`, `{"seq":+1}`,
		`{"seq":9223372036854775807}`, `{"seq":9223372036854775808}`, `{"seq":-9223372036854775808}`,
		`{"seq":-9223372036854775809}`, `{"seq":99999999999999999999999}`, `{"seq":-0}`,
		`{"kind":1}`, `{"kind":null}`, `{"kind":true}`, `{"kind":["a"]}`, `{"is_error":1}`,
		`{"is_error":tru}`, `{"is_error":nul}`, `{"is_error":null}`, `{"usage":null}`, `{"usage":[]}`,
		`{"usage":{"prompt_tokens":"1"}}`, `{"usage":{"other":1}}`, `{"usage":{"prompt_tokens":1,}}`,
		`{"usage":{}}`, `{"usage":{"total_tokens":5},"usage":{"prompt_tokens":6}}`,
		`{"Seq":4}`, `{"SEQ":4}`, `{"ſeq":4}`, `{"s\u0065q":4}`, `{"unknown":{"a":[1,2,{}]},"seq":4}`,
		`{"content":"first","content":"second"}`, `{"kind":"user/message","turn":"one","content":"kept"}`,
		` {"seq" : 1 , "kind" : "turn/end" } `, "\t{\r\n}\n",
		// Strings encoding/json rewrites.
		`{"content":"\ud83d\ude00"}`, `{"content":"\ud83d"}`, `{"content":"\ud83dx"}`, `{"content":"\ude00\ud83d"}`,
		`{"content":"\ud83d\u0041"}`, `{"content":"\ud83d\ud83d\ude00"}`, `{"content":"\ud83d\"}`,
		"{\"content\":\"\xff\xfe\"}", "{\"content\":\"a\xe2\x82\"}", "{\"content\":\"\xed\xa0\x80\"}",
		"{\"content\":\"\\n\xff\"}", `{"content":"\/\b\f\n\r\t\\\""}`, `{"content":"\'"}`,
	} {
		t.Run(data, func(t *testing.T) { checkLikeEncodingJSON(t, []byte(data)) })
	}
}

// TestDecodeEventFastReadsWhatMarshalWrites: every event json.Marshal writes — whatever its
// text — is read by hand, not handed to encoding/json.
func TestDecodeEventFastReadsWhatMarshalWrites(t *testing.T) {
	for _, e := range []Event{
		{},
		{Seq: 0, Kind: KindTurnStart, Turn: 1, Trigger: "user"},
		{Seq: 1, Kind: KindUserMessage, Turn: 1, Source: "user", Content: "plain"},
		{Seq: 2, Kind: KindAssistantMessage, Turn: 1, Step: 1, Content: "line\nnext\t\"quoted\" \\ <b>&amp;</b> \u2028\u2029 ünï 😀", Reasoning: "hmm",
			Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}},
		{Seq: 3, Kind: KindToolCall, Turn: 1, Step: 1, CallID: "c1", Tool: "t", Arguments: `{"q":"x\n"}`},
		{Seq: 4, Kind: KindToolResult, Turn: 1, Step: 1, CallID: "c1", Tool: "t", Content: "no", IsError: true, Code: CodeDenied},
		{Seq: 5, Kind: KindTurnEnd, Turn: 1, Reason: TurnError, Error: "bad \x00\x1f control"},
		{Seq: math.MaxInt, Turn: math.MinInt, Step: -1, Kind: "x", Content: "invalid \xff utf-8 \xed\xa0\x80"},
		{Kind: KindAssistantChunk, Content: strings.Repeat("long text ", 1000)},
	} {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var want Event
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		var got Event
		if !decodeEventFast(data, &got) {
			t.Errorf("the fast path refused %s", data)
		} else if got != want {
			t.Errorf("fast path read %s as %+v, want %+v", data, got, want)
		}
	}
}

func TestDecodeEventInternsRepeatedValues(t *testing.T) {
	data := []byte(`{"seq":1,"kind":"turn/end","trigger":"user","reason":"completed","code":"FAILED"}`)
	var e Event
	if allocs := testing.AllocsPerRun(100, func() { _ = DecodeEvent(data, &e) }); allocs != 0 {
		t.Errorf("decoding an event of only repeated values allocated %v times, want 0", allocs)
	}
	if e.Kind != KindTurnEnd || e.Reason != TurnCompleted || e.Trigger != "user" || e.Code != CodeFailed {
		t.Errorf("decoded %+v", e)
	}
}

// FuzzDecodeEvent checks DecodeEvent against encoding/json on any input: the same event from
// the same starting point, and the same error.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"seq":3,"kind":"assistant/message","turn":1,"step":1,"content":"a\nb \u003c\u0026 \ud83d\ude00","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`{"seq":4,"kind":"tool/result","turn":1,"step":1,"content":"x","call_id":"c","tool":"t","arguments":"{}","is_error":true,"code":"DENIED"}`,
		`{"seq":5,"kind":"turn/end","turn":1,"reason":"error","error":"e","trigger":"user","source":"user","reasoning":"r"}`,
		`{"seq":-0,"turn":9223372036854775807,"step":1e2}`, `{"Kind":"x","usage":null}`, `{"content":"\ud800\"}`,
		"{\"content\":\"\xff\"}", ` { } `, `[]`, `{"is_error":false,"is_error":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLikeEncodingJSON(t, data)
		// What the fast path accepts must be valid JSON.
		var e Event
		if decodeEventFast(data, &e) && !json.Valid(data) {
			t.Fatalf("the fast path accepted invalid JSON %q", data)
		}
	})
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

// FuzzAppendEvent checks AppendEvent against json.Marshal on any event, and that DecodeEvent
// reads it back by hand as encoding/json does.
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
		if !decodeEventFast(got, &back) {
			t.Fatalf("the fast path refused %s", got)
		}
		var oracle Event
		if err := json.Unmarshal(got, &oracle); err != nil || back != oracle {
			t.Fatalf("DecodeEvent read %s as %+v; encoding/json reads %+v (%v)", got, back, oracle, err)
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
// turn keeps) with encoding/json and with DecodeEvent.
func BenchmarkDecodeEvent(b *testing.B) {
	data := []byte(`{"seq":32,"kind":"assistant/message","turn":5,"step":2,"content":"**Answer 5**\n\nHere is what I found:\n- the first point, with \u003csome\u003e detail \u0026 more\n- the second point, a little longer than the first one\n\nLet me know if you need anything else.","usage":{"prompt_tokens":1005,"completion_tokens":60,"total_tokens":1065}}`)
	for _, bc := range []struct {
		name   string
		decode func([]byte, *Event) error
	}{
		{"encoding-json", func(data []byte, e *Event) error { return json.Unmarshal(data, e) }},
		{"DecodeEvent", DecodeEvent},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var e Event
				if err := bc.decode(data, &e); err != nil || e.Usage.TotalTokens != 1065 {
					b.Fatal(e, err)
				}
			}
		})
	}
}
