package router

import (
	"strconv"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// BenchmarkHandleInbound measures the router's path for one group message that mentions the
// bot, on the real Redis: the intake (dedupe claim, access override, pending-question read),
// signing and enqueue.
func BenchmarkHandleInbound(b *testing.B) {
	h := newBenchHarness(b)
	trips := redistest.CountTrips(h.redis.client)
	b.ReportAllocs()
	b.ResetTimer()
	trips.Reset()
	defer trips.Report(b)
	for i := 0; i < b.N; i++ {
		in := channels.Inbound{EventID: "u:" + strconv.Itoa(i), Conv: conv.Key{Platform: "test", Chat: "c" + strconv.Itoa(i%64)},
			Identity: user("u1"), Text: "hello there", AddressesBot: true, MessageID: strconv.Itoa(i)}
		if err := h.router.HandleInbound(h.ctx, h.ch, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseCommand(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ParseCommand("/deadletters replay 01JABCDEFGHJKMNPQRSTVWXYZ0")
	}
}
