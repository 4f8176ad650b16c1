package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkAppendTurnLoadEvents measures one conversation step as the lead layer does it: load
// the session log (20 turns kept, 4 events of ~120 bytes each), then append the new turn. Run:
//
//	go test -run '^$' -bench AppendTurnLoadEvents -benchmem ./core/threads/
func BenchmarkAppendTurnLoadEvents(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			s := newTestStore(b, be.start(b)(b), Options{HistoryTurns: 20})
			const conv = "telegram/-/bench/0"
			th, _, err := s.Conversations().Ensure(ctx, conv)
			if err != nil {
				b.Fatal(err)
			}
			turn := make([]json.RawMessage, 4)
			for i := range turn {
				turn[i] = json.RawMessage(fmt.Sprintf(`{"type":"message","role":"assistant","seq":%d,"text":"%s"}`, i, "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"))
			}
			for range 20 {
				if err := s.History().AppendTurn(ctx, conv, th.ID, turn); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				events, err := s.History().LoadEvents(ctx, conv)
				if err != nil || len(events) != 80 {
					b.Fatalf("LoadEvents = %d events, %v", len(events), err)
				}
				if err := s.History().AppendTurn(ctx, conv, th.ID, turn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeLog50Turns measures what BeginRun does with a long chat's log once Redis has
// returned it: 50 stored turns (the runs.history_turns default) of 6 to 11 events, as the lead
// writes them, decoded back into events. Run:
//
//	go test -run '^$' -bench DecodeLog50Turns -benchmem ./core/threads/
func BenchmarkDecodeLog50Turns(b *testing.B) {
	log := make([]string, 50)
	events := 0
	for turn := 1; turn <= len(log); turn++ {
		ev := []string{
			fmt.Sprintf(`{"seq":%d,"kind":"turn/start","turn":%d,"trigger":"user"}`, events, turn),
			fmt.Sprintf(`{"seq":%d,"kind":"user/message","turn":%d,"source":"user","content":"question %d: could you look into the thing we talked about earlier?"}`, events+1, turn, turn),
			fmt.Sprintf(`{"seq":%d,"kind":"step/start","turn":%d,"step":1}`, events+2, turn),
		}
		step := 1
		if turn%5 == 0 {
			ev = append(ev,
				fmt.Sprintf(`{"seq":%d,"kind":"assistant/message","turn":%d,"step":1,"usage":{"prompt_tokens":%d,"completion_tokens":30,"total_tokens":%d}}`, events+3, turn, 900+turn, 930+turn),
				fmt.Sprintf(`{"seq":%d,"kind":"tool/call","turn":%d,"step":1,"call_id":"call_abc123","tool":"delegate","arguments":"{\"task\":\"look it up\",\"name\":\"researcher\"}"}`, events+4, turn),
				fmt.Sprintf(`{"seq":%d,"kind":"tool/result","turn":%d,"step":1,"content":"The subagent found three relevant documents and summarised them.","call_id":"call_abc123","tool":"delegate"}`, events+5, turn),
				fmt.Sprintf(`{"seq":%d,"kind":"step/end","turn":%d,"step":1}`, events+6, turn),
				fmt.Sprintf(`{"seq":%d,"kind":"step/start","turn":%d,"step":2}`, events+7, turn),
			)
			step = 2
		}
		n := events + len(ev)
		ev = append(ev,
			fmt.Sprintf(`{"seq":%d,"kind":"assistant/message","turn":%d,"step":%d,"content":"**Answer %d**\n\nHere is what I found:\n- the first point, with \u003csome\u003e detail \u0026 more\n- the second point, a little longer than the first one\n\nLet me know if you need anything else.","usage":{"prompt_tokens":%d,"completion_tokens":60,"total_tokens":%d}}`, n, turn, step, turn, 1000+turn, 1060+turn),
			fmt.Sprintf(`{"seq":%d,"kind":"step/end","turn":%d,"step":%d}`, n+1, turn, step),
			fmt.Sprintf(`{"seq":%d,"kind":"turn/end","turn":%d,"reason":"completed"}`, n+2, turn),
		)
		raw := make([]json.RawMessage, len(ev))
		for i, e := range ev {
			raw[i] = json.RawMessage(e)
		}
		enc, err := encodeTurn(raw)
		if err != nil {
			b.Fatal(err)
		}
		log[turn-1] = string(enc)
		events += len(ev)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, _, err := decodeLog("k", 0, log)
		if err != nil || len(got) != events {
			b.Fatalf("decodeLog = %d events, %v; want %d", len(got), err, events)
		}
	}
}
