package discord

import (
	"errors"
	"strings"
	"testing"
	"time"

	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// TestReadyFailsWhenTheGatewayFallsSilent proves /readyz follows the gateway's inbound life: on
// a virtual clock, a connection that has received nothing (no dispatch, no heartbeat ack) for
// more than two heartbeat intervals and 10 s makes Ready fail, naming the shard and how long;
// the frames of a resume make it ready again.
func TestReadyFailsWhenTheGatewayFallsSilent(t *testing.T) {
	fk := discordfake.New(t)
	const interval = time.Hour // no real heartbeat falls within the test
	fk.SetHeartbeatInterval(interval)
	clock := &virtualClock{t: time.Now()}
	h := newHarnessPrepared(t, fk, nil, func(ch *Channel) { ch.clock.Now = clock.now })
	if err := h.ch.Ready(); err != nil {
		t.Fatalf("Ready after start: %v", err)
	}
	clock.advance(2*interval + 5*time.Second)
	if err := h.ch.Ready(); err != nil {
		t.Fatalf("Ready within the bound (2 intervals + 10 s): %v", err)
	}
	clock.advance(10 * time.Second)
	err := h.ch.Ready()
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "shard 0") || !strings.Contains(err.Error(), "2h0m15s") {
		t.Fatalf("Ready after 2h0m15s of silence = %v, want ErrNotReady naming shard 0 and the silence", err)
	}
	if !fk.Drop() {
		t.Fatal("no connection to drop")
	}
	poll.Until(t, "the resumed connection", func() bool {
		for _, r := range fk.Resumes() {
			if r.Accepted {
				return fk.Connected()
			}
		}
		return false
	})
	poll.Until(t, "Ready again after the resume", func() bool { return h.ch.Ready() == nil })
}

func TestSilenceBound(t *testing.T) {
	g := &gateway{}
	now := time.Unix(1000, 0)
	if _, _, dead := g.silence(now); dead {
		t.Error("a gateway that never said hello is dead")
	}
	g.interval.Store(int64(41250 * time.Millisecond))
	cases := []struct {
		quiet time.Duration
		dead  bool
	}{
		{0, false},
		{41 * time.Second, false},
		{92 * time.Second, false},
		{92*time.Second + 500*time.Millisecond, false},
		{93 * time.Second, true},
		{time.Hour, true},
	}
	for _, tc := range cases {
		g.lastEvent.Beat(now.Add(-tc.quiet))
		if quiet, _, dead := g.silence(now); dead != tc.dead || quiet != tc.quiet {
			t.Errorf("after %v: quiet %v dead %v, want dead %v", tc.quiet, quiet, dead, tc.dead)
		}
	}
}
