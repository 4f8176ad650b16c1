package redistest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Trips counts a client's Redis round trips (a pipeline is one), for the benchmarks'
// redis-roundtrips/op, and its PINGs apart, for the readiness probe's tests ("one PING in flight
// however many probes wait"). The commands a new connection is set up with (HELLO, CLIENT
// SETINFO) pass through the client's hooks too, so only PING counts as one.
type Trips struct{ n, pings atomic.Int64 }

// CountTrips adds a Trips hook to c.
func CountTrips(c redis.UniversalClient) *Trips {
	t := &Trips{}
	c.AddHook(t)
	return t
}

// DialHook implements redis.Hook.
func (t *Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (t *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.n.Add(1)
		if cmd.Name() == "ping" {
			t.pings.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (t *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

// Report reports the round trips per benchmark operation.
func (t *Trips) Report(b *testing.B) {
	b.ReportMetric(float64(t.n.Load())/float64(b.N), "redis-roundtrips/op")
}

// Reset starts the count again.
func (t *Trips) Reset() { t.n.Store(0) }

// Pings is how many PINGs the client has sent.
func (t *Trips) Pings() int64 { return t.pings.Load() }
