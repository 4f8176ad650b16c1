package discord

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
)

// TestContract runs the adapter contract (chantest.RunContract) on the Discord adapter against
// its fake, on the gateway.
func TestContract(t *testing.T) {
	chantest.RunContract(t, chantest.Subject{Name: platform, New: contractRig})
}

func contractRig(t *testing.T, p chantest.Platform) *chantest.Rig {
	fk := discordfake.New(t)
	const interval = time.Hour // no heartbeat within the test: the gateway's life is its frames
	fk.SetHeartbeatInterval(interval)
	logs := &syncBuffer{}
	cfg := testConfig(t, fk, logs)
	switch p {
	case chantest.PlatformRefusesToken:
		cfg.Token = "wrong-SECRET-token"
	case chantest.PlatformDown:
		cfg.APIURL = chantest.ClosedURL(t)
	}
	ch, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Ready's clock, moved past the gateway's silence bound by GoAway.
	var ahead atomic.Int64
	ch.clock.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	dm := fk.DM(alice.ID)
	return &chantest.Rig{
		Channel: ch,
		Secrets: []string{cfg.Token},
		Logs:    logs.String,
		Target:  channels.Target{Conv: conv.Key{Platform: platform, Chat: dm}},
		Blocked: func() channels.Target {
			blocked := fk.DM(bob.ID)
			fk.FailChannel(blocked, "POST", discordfake.RouteMessages, 1000, discordfake.Fault{Status: 403, Code: codeCannotDM})
			return channels.Target{Conv: conv.Key{Platform: platform, Chat: blocked}}
		},
		RateLimitNextSend: func(d time.Duration) { fk.RateLimitStorm("POST", discordfake.RouteMessages, 1, d) },
		Push:              func() { fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "hello"}) },
		IntakeClosed:      func() bool { return !fk.Connected() },
		Held:              fk.Undelivered,
		GoAway:            func(*testing.T) { ahead.Store(int64(silenceBound(interval) + time.Second)) },
	}
}
