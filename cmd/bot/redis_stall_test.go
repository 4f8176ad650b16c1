package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// TestReadyzAnswers503WithinItsTimeoutWhenRedisStalls: with a Redis that accepts connections
// and never answers (measured: go-redis's Ping(ctx) does not return at ctx's deadline then),
// /readyz answers 503 naming Redis within its own 2 s, and within the listener's shorter health
// timeout when that is set; probes that come while a PING is in flight wait for that PING
// instead of sending theirs.
func TestReadyzAnswers503WithinItsTimeoutWhenRedisStalls(t *testing.T) {
	stalled := redistest.NewStalled(t)
	client := redis.NewClient(&redis.Options{Addr: stalled.Addr()}) // the defaults, as production
	pings := redistest.CountPings(client)
	a := &app{core: &core{redis: client}, leading: map[string]*atomic.Int64{}}
	a.intake.Store(true)
	t.Cleanup(func() {
		stalled.Close()
		waitFor(t, "the readiness PING to give up", 30*time.Second, func() bool { return !readinessPings.InFlight(client) })
		_ = client.Close()
	})

	// The measurement behind it: Ping(ctx) itself outlives ctx on a stalled Redis.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	_ = client.Ping(ctx).Err()
	cancel()
	t.Logf("go-redis Ping with a 200ms context on a stalled Redis returned after %s", time.Since(start).Round(time.Millisecond))

	t.Run("its own timeout", func(t *testing.T) {
		w := httptest.NewRecorder()
		start := time.Now()
		a.readyz(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		took := time.Since(start)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "redis: unreachable") {
			t.Fatalf("answered %d %q, want 503 naming redis", w.Code, w.Body.String())
		}
		if took > 2*time.Second+500*time.Millisecond {
			t.Fatalf("answered after %s, want within its 2 s", took)
		}
	})
	t.Run("the listener's health timeout", func(t *testing.T) {
		o := shortListener()
		o.HealthTimeout = 300 * time.Millisecond
		u := startListener(t, o, func(u *listenerUnderTest) { u.ready = http.HandlerFunc(a.readyz) })
		before := pings.Count()
		var probes sync.WaitGroup
		for range 8 {
			probes.Go(func() {
				start := time.Now()
				code, body := u.get("/readyz")
				if took := time.Since(start); code != http.StatusServiceUnavailable || !strings.Contains(body, "redis") || took > o.HealthTimeout+margin {
					t.Errorf("/readyz answered %d %q after %s, want 503 naming redis within %s", code, body, took, o.HealthTimeout)
				}
			})
		}
		probes.Wait()
		if n := pings.Count() - before; n > 1 {
			t.Errorf("%d PINGs sent for 8 probes while one was in flight, want at most 1", n)
		}
		if code, _ := u.get("/healthz"); code != http.StatusOK {
			t.Errorf("/healthz answered %d while Redis stalls", code)
		}
	})
}
