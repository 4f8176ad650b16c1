package redisping

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPingAnswersWhenRedisDoes: a Redis that answers is ready, and no PING is left in flight.
func TestPingAnswersWhenRedisDoes(t *testing.T) {
	client := redistest.Client(t)
	var f Flights
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := f.Ping(ctx, client); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if f.InFlight(client) {
		t.Fatal("a PING is in flight after its answer")
	}
}

// TestPingReturnsAtItsDeadlineAndJoinsTheFlightWhenRedisStalls: with a Redis that accepts
// connections and never answers, each caller's Ping returns its context's error at its own
// deadline, while the one PING all of them joined goes on; once Redis is gone, that PING gives
// up and the next caller is handed its error.
func TestPingReturnsAtItsDeadlineAndJoinsTheFlightWhenRedisStalls(t *testing.T) {
	const deadline, margin = 300 * time.Millisecond, 1500 * time.Millisecond
	stalled := redistest.NewStalled(t)
	client := redis.NewClient(&redis.Options{Addr: stalled.Addr()}) // the defaults, as production
	pings := redistest.CountTrips(client)
	var f Flights
	t.Cleanup(func() {
		stalled.Close()
		poll.Until(t, "the PING to give up", func() bool { return !f.InFlight(client) })
		_ = client.Close()
	})

	var callers sync.WaitGroup
	for range 8 {
		callers.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			err := f.Ping(ctx, client)
			if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > deadline+margin {
				t.Errorf("Ping returned %v after %s, want the context's deadline within %s", err, took, deadline)
			}
		})
	}
	callers.Wait()
	if !f.InFlight(client) {
		t.Fatal("no PING in flight once the callers gave up: the stall did not hold it, the test proves nothing")
	}
	if n := pings.Pings(); n != 1 {
		t.Errorf("%d PINGs sent for 8 callers while one was in flight, want 1", n)
	}

	stalled.Close() // the PING fails at once
	poll.Until(t, "the PING to give up", func() bool { return !f.InFlight(client) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Ping(ctx, client); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ping of a Redis that is gone: %v, want the PING's own error", err)
	}
}
