package slack

import (
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Slack's posting pace per channel: about one message a second, with short bursts allowed.
const (
	paceEvery = time.Second
	paceBurst = 4
)

// pacer spaces chat.postMessage per channel (a burst of burst posts, then one per every), so a
// long answer split into several messages, or a busy channel, stays under Slack's per-channel
// limit instead of meeting 429s. Channels never wait for one another.
type pacer struct {
	every    time.Duration
	burst    int
	channels *kit.Pacer[string]
}

func newPacer(every time.Duration, burst int) *pacer {
	return &pacer{every: every, burst: burst, channels: kit.NewPacer[string]()}
}

// reserve books the channel's next slot and returns how long to wait for it.
func (p *pacer) reserve(channel string, now time.Time) time.Duration {
	return p.channels.Reserve(channel, now, p.every, p.burst)
}
