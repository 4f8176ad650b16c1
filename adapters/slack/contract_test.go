package slack

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// TestContract runs the adapter contract (chantest.RunContract) on the Slack adapter against
// its fake, in Socket Mode.
func TestContract(t *testing.T) {
	chantest.RunContract(t, chantest.Subject{Name: platform, New: contractRig})
}

func contractRig(t *testing.T, p chantest.Platform) *chantest.Rig {
	fake := slackfake.New(t)
	fake.SetPingInterval(20 * time.Millisecond)
	ch, logs := newChannel(t, fake, func(c *Config) {
		c.ReadyWindow = 300 * time.Millisecond
		switch p {
		case chantest.PlatformRefusesToken:
			c.BotToken = "xoxb-wrong-SECRET"
		case chantest.PlatformDown:
			c.APIURL = chantest.ClosedURL(t) + "/api/"
		}
	})
	ch.clock.Sleep = kit.Sleep // slept for real, so that a rate limit waited out beneath delivery's would show
	return &chantest.Rig{
		Channel: ch,
		Secrets: []string{ch.cfg.BotToken, ch.cfg.AppToken, ch.cfg.SigningSecret},
		Logs:    logs.String,
		Target:  channels.Target{Conv: threadConv("")},
		Blocked: func() channels.Target {
			fake.FailChannel("C9", "chat.postMessage", -1, slackfake.Fault{Error: "not_in_channel"})
			k := threadConv("")
			k.Chat = "C9"
			return channels.Target{Conv: k}
		},
		RateLimitNextSend: func(d time.Duration) { fake.RateLimit("chat.postMessage", 1, int(d/time.Second)) },
		Push: func() {
			fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "hello"})
		},
		IntakeClosed: func() bool { return fake.Connections() == 0 },
		Held: func() int {
			n := 0
			for _, e := range fake.Envelopes() {
				if e.Conn == 0 {
					n++
				}
			}
			return n
		},
		// Slack's pings stop and the socket is replaced by one that carries nothing.
		GoAway: func(*testing.T) {
			fake.SetPingInterval(0)
			fake.Disconnect("refresh_requested")
		},
	}
}
