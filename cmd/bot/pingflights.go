package main

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// readinessPings are /readyz's PINGs: go-redis does not end a PING on a stalled connection at
// its context's deadline (the clients are made without ContextTimeoutEnabled, so its own
// ReadTimeout and retries bound it, for seconds), so the PING runs off the request, which
// answers at its own deadline whatever the PING does; one PING per client at a time, however
// many probes wait for it.
var readinessPings = &pingFlights{}

// pingFlights runs one PING per client at a time.
type pingFlights struct {
	mu     sync.Mutex
	flying map[redis.UniversalClient]*pingFlight
}

// pingFlight is one PING: done is closed once err is set.
type pingFlight struct {
	done chan struct{}
	err  error
}

// pingFlightTimeout bounds a readiness PING where go-redis honours contexts.
const pingFlightTimeout = 10 * time.Second

// ping is client's PING, or ctx's error if ctx ends first. It joins the PING in flight, if
// any; the PING's goroutine ends when go-redis gives up (its ReadTimeout per try) or answers.
func (p *pingFlights) ping(ctx context.Context, client redis.UniversalClient) error {
	p.mu.Lock()
	f := p.flying[client]
	if f == nil {
		f = &pingFlight{done: make(chan struct{})}
		if p.flying == nil {
			p.flying = map[redis.UniversalClient]*pingFlight{}
		}
		p.flying[client] = f
		go func() {
			// Not ctx: the PING serves every request that joins it.
			pctx, cancel := context.WithTimeout(context.Background(), pingFlightTimeout)
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

// inFlight says whether a PING of client is in flight.
func (p *pingFlights) inFlight(client redis.UniversalClient) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flying[client] != nil
}
