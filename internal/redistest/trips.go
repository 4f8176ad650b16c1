package redistest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Trips counts a client's Redis round trips (a pipeline is one), for the benchmarks'
// redis-roundtrips/op.
type Trips struct{ n atomic.Int64 }

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
