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
			th, _, err := s.Ensure(ctx, conv)
			if err != nil {
				b.Fatal(err)
			}
			turn := make([]json.RawMessage, 4)
			for i := range turn {
				turn[i] = json.RawMessage(fmt.Sprintf(`{"type":"message","role":"assistant","seq":%d,"text":"%s"}`, i, "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"))
			}
			for range 20 {
				if err := s.AppendTurn(ctx, conv, th.ID, turn); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				events, err := s.LoadEvents(ctx, conv)
				if err != nil || len(events) != 80 {
					b.Fatalf("LoadEvents = %d events, %v", len(events), err)
				}
				if err := s.AppendTurn(ctx, conv, th.ID, turn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
