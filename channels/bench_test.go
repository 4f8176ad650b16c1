package channels

import (
	"strconv"
	"testing"

	"github.com/switchboard-bot/switchboard/core/runs"
)

// BenchmarkHandleInbound measures the router's path for one group message that mentions the
// bot, on the real Redis: dedupe claim, access override, pending-question read, reply mark,
// signing and enqueue.
func BenchmarkHandleInbound(b *testing.B) {
	h := newBenchHarness(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in := Inbound{EventID: "u:" + strconv.Itoa(i), Conv: runs.ConvKey{Platform: "test", Chat: "c" + strconv.Itoa(i%64)},
			Identity: user("u1"), Text: "hello there", AddressesBot: true, MessageID: strconv.Itoa(i)}
		if err := h.router.HandleInbound(h.ctx, h.ch, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeliverRun measures delivery of one run's events (started, two progress edits, a
// subagent result, final) to an in-memory channel, with its Redis records.
func BenchmarkDeliverRun(b *testing.B) {
	c := realRedis(b)
	h := &deliveryHarness{ctx: ctxT(b), ch: newFakeChannel("test"), metrics: newCountMetrics()}
	h.store = newBenchStore(b, c)
	d, err := NewDelivery(DeliveryOptions{Channels: map[string]Channel{"test": h.ch}, Threads: h.store, Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run := runs.NewRunID()
		for _, ev := range []runs.Event{started(run), progress(run, "a"), progress(run, "b"), subResult(run, "s", "n", "x"), final(run, "done")} {
			ev.Conv = deliveryConv
			if err := d.Deliver(h.ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkParseCommand(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ParseCommand("/deadletters replay 01JABCDEFGHJKMNPQRSTVWXYZ0")
	}
}
