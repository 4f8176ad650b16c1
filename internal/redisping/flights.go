// Package redisping is the readiness probe's PING of Redis, made so that a stalled Redis cannot
// hold the probe: go-redis does not end a PING on a stalled connection at its context's deadline
// (the bot's clients are made without ContextTimeoutEnabled, so the client's own ReadTimeout and
// retries bound it, for seconds), so the PING runs off the caller, which returns at its own
// deadline whatever the PING does; and one PING per client is in flight at a time, however many
// probes wait for it.
package redisping

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Flights runs one PING per client at a time. The zero value is ready to use; its methods are
// safe for concurrent use.
type Flights struct {
	mu     sync.Mutex
	flying map[redis.UniversalClient]*flight
}

// flight is one PING: done is closed once err is set.
type flight struct {
	done chan struct{}
	err  error
}

// flightTimeout bounds a PING where go-redis honours contexts.
const flightTimeout = 10 * time.Second

// Ping is client's PING, or ctx's error if ctx ends first. It joins the PING in flight, if any;
// the PING's goroutine ends when go-redis gives up (its ReadTimeout per try) or answers.
func (p *Flights) Ping(ctx context.Context, client redis.UniversalClient) error {
	p.mu.Lock()
	f := p.flying[client]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		if p.flying == nil {
			p.flying = map[redis.UniversalClient]*flight{}
		}
		p.flying[client] = f
		go func() {
			// Not ctx: the PING serves every request that joins it.
			pctx, cancel := context.WithTimeout(context.Background(), flightTimeout)
			err := client.Ping(pctx).Err()
			cancel()
			p.mu.Lock()
			delete(p.flying, client)
			p.mu.Unlock()
			f.err = err
			close(f.done)
		}()
	}
	p.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InFlight says whether a PING of client is in flight: a test that stalled Redis waits for it
// to give up before closing the client.
func (p *Flights) InFlight(client redis.UniversalClient) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flying[client] != nil
}
