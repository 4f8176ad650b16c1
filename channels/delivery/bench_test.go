package delivery

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// BenchmarkDeliverRun measures delivery of one run's events (started, two progress edits, a
// subagent result, final) to an in-memory channel, with its Redis records: with the placeholder
// posted at once, and with cmd/bot's grace period, within which this (fast) run closes.
func BenchmarkDeliverRun(b *testing.B) {
	for _, bc := range []struct {
		name  string
		after time.Duration
	}{{"placeholder_at_once", 0}, {"placeholder_after_grace", DefaultPlaceholderAfter}} {
		b.Run(bc.name, func(b *testing.B) {
			c := realRedis(b)
			h := &deliveryHarness{ctx: ctxT(b), ch: newFakeChannel("test"), metrics: newCountMetrics()}
			h.store = threads.New(c, threads.Options{Prefix: uniquePrefix(b, c)}).Records()
			d, err := New(Options{Channels: map[string]channels.Channel{"test": h.ch}, Records: h.store, Logger: quietLog, PlaceholderAfter: bc.after})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			trips := redistest.CountTrips(c)
			b.ReportAllocs()
			b.ResetTimer()
			defer trips.Report(b)
			for i := 0; i < b.N; i++ {
				run := runs.NewRunID()
				for _, ev := range []runs.Event{started(run), progress(run, "a"), progress(run, "b"), subResult(run, "s", "n", "x"), final(run, "done")} {
					ev.Conv = deliveryConv
					if err := d.Deliver(h.ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
