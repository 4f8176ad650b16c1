package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Pings counts the PINGs a client sends, for the readiness probe's tests ("one PING in flight
// however many probes wait"). Only PING is counted: the commands a new connection is set up
// with (HELLO, CLIENT SETINFO) pass through the client's hooks too.
type Pings struct{ n atomic.Int64 }

// CountPings adds a Pings hook to c.
func CountPings(c redis.UniversalClient) *Pings {
	p := &Pings{}
	c.AddHook(p)
	return p
}

// DialHook implements redis.Hook.
func (p *Pings) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (p *Pings) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "ping" {
			p.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (p *Pings) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Count is how many PINGs the client has sent.
func (p *Pings) Count() int64 { return p.n.Load() }
