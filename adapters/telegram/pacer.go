package telegram

import (
	"sync"
	"time"
)

// Pacing limits: about one message a second per private chat and 20 a minute per group, each
// with a burst of paceBurst so a short chunked answer is not held back.
const (
	privateInterval = time.Second
	groupInterval   = 3 * time.Second
	paceBurst       = 3
)

// pacer spaces sends per chat (GCRA): each chat has its own schedule, so a busy chat never holds
// up another.
type pacer struct {
	mu    sync.Mutex
	tat   map[int64]time.Time // theoretical arrival time of the next send, per chat
	calls int
}

func newPacer() *pacer { return &pacer{tat: map[int64]time.Time{}} }

// reserve books a send slot in chat at now and returns how long to wait for it.
func (p *pacer) reserve(chat int64, now time.Time) time.Duration {
	interval := privateInterval
	if chat < 0 { // group, supergroup and channel ids are negative
		interval = groupInterval
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.calls%4096 == 0 {
		for id, t := range p.tat {
			if t.Before(now) {
				delete(p.tat, id)
			}
		}
	}
	t := p.tat[chat]
	if t.Before(now) {
		t = now
	}
	p.tat[chat] = t.Add(interval)
	return max(0, t.Sub(now)-(paceBurst-1)*interval)
}
