package slack

import (
	"sync"
	"time"
)

// Slack's posting pace per channel: about one message a second, with short bursts allowed.
const (
	paceEvery = time.Second
	paceBurst = 4
)

// pacer spaces chat.postMessage per channel (a generic cell rate: a burst of burst posts, then
// one per every), so a long answer split into several messages, or a busy channel, stays under
// Slack's per-channel limit instead of meeting 429s. Channels never wait for one another.
type pacer struct {
	mu    sync.Mutex
	every time.Duration
	burst int
	tat   map[string]time.Time // theoretical arrival time of the next post, per channel
}

func newPacer(every time.Duration, burst int) *pacer {
	return &pacer{every: every, burst: burst, tat: map[string]time.Time{}}
}

// reserve books the channel's next slot and returns how long to wait for it.
func (p *pacer) reserve(channel string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tat) > 10000 {
		for k, t := range p.tat {
			if t.Before(now) {
				delete(p.tat, k)
			}
		}
	}
	t := p.tat[channel]
	if t.Before(now) {
		t = now
	}
	wait := t.Sub(now) - time.Duration(p.burst-1)*p.every
	p.tat[channel] = t.Add(p.every)
	return max(0, wait)
}
