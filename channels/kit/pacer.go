package kit

import (
	"sync"
	"time"
)

// Pacer spaces events per key with the generic cell rate algorithm: a key may have burst events
// at once, then one every interval, each key on its own schedule. It books slots and says how
// long to wait for them; the caller waits (with its context), so a Pacer runs no goroutine. A
// slot booked by an event that is then abandoned stays spent. The adapters keep the platforms'
// posting paces with it (a Telegram chat, a Slack channel, a Slack workspace's method tier, a
// bot's sends over all chats). Discord's global limit is another shape — at most N starts in any
// window, which a cell rate can only keep with a burst so small it wastes the window — and keeps
// its own sliding window (adapters/discord/pacer.go). Safe for concurrent use.
type Pacer[K comparable] struct {
	mu sync.Mutex
	// tat is the theoretical arrival time of each key's next event. A key whose tat has passed
	// has its whole burst again, the same as no entry: sweeps drop those, so memory follows the
	// keys active in the last PacerSweepEvery or so.
	tat   map[K]time.Time
	swept time.Time
}

// PacerSweepEvery is how often a Pacer drops the keys that have their whole burst again.
const PacerSweepEvery = time.Minute

// NewPacer returns a Pacer with no key booked.
func NewPacer[K comparable]() *Pacer[K] { return &Pacer[K]{tat: map[K]time.Time{}} }

// Reserve books key's next slot at now, for a pace of one every interval after a burst of burst
// (at least 1), and returns how long to wait for it.
func (p *Pacer[K]) Reserve(key K, now time.Time, every time.Duration, burst int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep(now)
	start := p.tat[key]
	if start.Before(now) {
		start = now
	}
	p.tat[key] = start.Add(every)
	return max(0, start.Sub(now)-time.Duration(max(burst, 1)-1)*every)
}

// Pause holds key's events until until (a platform's Retry-After): slots booked from now on
// start at until at the earliest, then one every interval — no burst right after it.
func (p *Pacer[K]) Pause(key K, until time.Time, every time.Duration, burst int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if next := until.Add(time.Duration(max(burst, 1)-1) * every); next.After(p.tat[key]) {
		p.tat[key] = next
	}
}

// Len is how many keys the Pacer holds a schedule for.
func (p *Pacer[K]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tat)
}

// sweep drops the keys whose schedule has passed, at most once every PacerSweepEvery; p.mu is
// held.
func (p *Pacer[K]) sweep(now time.Time) {
	if now.Sub(p.swept) < PacerSweepEvery {
		return
	}
	p.swept = now
	for k, t := range p.tat {
		if !t.After(now) {
			delete(p.tat, k)
		}
	}
}
