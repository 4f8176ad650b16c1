package channels

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// tripCounter counts a client's Redis round trips (a pipeline is one), for the benchmarks'
// redis-roundtrips/op.
type tripCounter struct{ n atomic.Int64 }

func countTrips(c redis.UniversalClient) *tripCounter {
	t := &tripCounter{}
	c.AddHook(t)
	return t
}

func (t *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmd)
	}
}

func (t *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

func (t *tripCounter) report(b *testing.B) {
	b.ReportMetric(float64(t.n.Load())/float64(b.N), "redis-roundtrips/op")
}

// BenchmarkHandleInbound measures the router's path for one group message that mentions the
// bot, on the real Redis: the intake (dedupe claim, access override, pending-question read),
// signing and enqueue.
func BenchmarkHandleInbound(b *testing.B) {
	h := newBenchHarness(b)
	trips := countTrips(h.client)
	b.ReportAllocs()
	b.ResetTimer()
	trips.n.Store(0)
	defer trips.report(b)
	for i := 0; i < b.N; i++ {
		in := Inbound{EventID: "u:" + strconv.Itoa(i), Conv: conv.Key{Platform: "test", Chat: "c" + strconv.Itoa(i%64)},
			Identity: user("u1"), Text: "hello there", AddressesBot: true, MessageID: strconv.Itoa(i)}
		if err := h.router.HandleInbound(h.ctx, h.ch, in); err != nil {
			b.Fatal(err)
		}
	}
}

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
			h.store = newBenchStore(b, c)
			d, err := NewDelivery(DeliveryOptions{Channels: map[string]Channel{"test": h.ch}, Threads: h.store, Logger: quietLog, PlaceholderAfter: bc.after})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			trips := countTrips(c)
			b.ReportAllocs()
			b.ResetTimer()
			defer trips.report(b)
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

func BenchmarkParseCommand(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ParseCommand("/deadletters replay 01JABCDEFGHJKMNPQRSTVWXYZ0")
	}
}
