package telegram

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// TestContract runs the adapter contract (chantest.RunContract) on the Telegram adapter against
// its fake, polling.
func TestContract(t *testing.T) {
	chantest.RunContract(t, chantest.Subject{Name: platform, New: contractRig})
}

func contractRig(t *testing.T, p chantest.Platform) *chantest.Rig {
	fake := telegramfake.New(t)
	logs := &syncBuffer{}
	cfg := Config{
		Token: fake.Token(), APIURL: fake.URL(), ActionKey: testKey, PollTimeout: time.Second, CallTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	switch p {
	case chantest.PlatformRefusesToken:
		cfg.Token = "123456:wrong-SECRET-token"
	case chantest.PlatformDown:
		cfg.APIURL = chantest.ClosedURL(t)
	}
	ch, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Ready's clock, moved past its bound by GoAway. Waits are slept for real, so that a rate
	// limit waited out beneath delivery's retries would show.
	var ahead atomic.Int64
	ch.clock.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	ch.clock.Sleep = kit.Sleep
	const blocked = 666
	return &chantest.Rig{
		Channel: ch,
		Secrets: []string{cfg.Token},
		Logs:    logs.String,
		Target:  channels.Target{Conv: privateConv(ann.ID)},
		Blocked: func() channels.Target {
			fake.FailChat(blocked, "sendMessage", 1000, telegramfake.Fault{Status: 403, Description: "Forbidden: bot was blocked by the user"})
			return channels.Target{Conv: privateConv(blocked)}
		},
		RateLimitNextSend: func(d time.Duration) { fake.RateLimitStorm("sendMessage", 1, int(d/time.Second)) },
		Push:              func() { fake.PushPrivate(ann, "hello") },
		// Polling, the platform cannot tell a loop that ended from one between two polls: the
		// intake is closed once the poll loop has ended, its long poll aborted.
		IntakeClosed: func() bool { return intakeEnded(ch) },
		Held:         fake.Undelivered,
		GoAway: func(t *testing.T) {
			n := fake.Count("getUpdates")
			fake.FailNext("getUpdates", 1<<30, telegramfake.Fault{Status: 502})
			// The poll in flight has ended (a success, maybe) once the next one was made.
			poll.Until(t, "a failed getUpdates", func() bool { return fake.Count("getUpdates") >= n+2 })
			ahead.Store(int64(2*cfg.PollTimeout + 11*time.Second))
		},
	}
}

// intakeEnded reports whether c's intake was stopped and its work — the poll loop — has ended.
func intakeEnded(c *Channel) bool {
	if !c.life.Stopped() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	return c.workers.Wait(ctx) == nil
}
