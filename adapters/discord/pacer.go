package discord

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Discord's rate rules the adapter keeps before Discord has to refuse anything: identifies,
// max_concurrency per 5 s (IdentifyInterval), and REST requests, globalPerSecond per second over
// the whole bot (https://discord.com/developers/docs/topics/rate-limits#global-rate-limit) —
// except the interaction endpoints, which Discord exempts from the global limit. discordgo
// learns the global limit only from a 429 with X-RateLimit-Global, by which time the request
// counts against the invalid-request budget.

// globalPerSecond is Discord's global REST limit for a bot.
const globalPerSecond = 50

// pacer lets at most per events start in any window of every: a burst of per, then each one
// when the per-th before it is every old. (A token bucket of per tokens refilled at per/every
// would let 2×per through in the first window.) Slots are handed out first come, first served,
// never before one already handed out. per may change while it runs (setPer). now and
// sleepUntil are its clock; tests give it a virtual one.
type pacer struct {
	mu         sync.Mutex
	per        int
	every      time.Duration
	starts     []time.Time // the last starts handed out, oldest first; at most per after a wait
	now        func() time.Time
	sleepUntil func(ctx context.Context, at time.Time) error
}

func newPacer(per int, every time.Duration) *pacer {
	p := &pacer{per: max(per, 1), every: every, now: time.Now}
	p.sleepUntil = func(ctx context.Context, at time.Time) error { return kit.Sleep(ctx, at.Sub(p.now())) }
	return p
}

// wait returns when the next event may start, with the slot it took, or with ctx's error (the
// slot stays spent).
func (p *pacer) wait(ctx context.Context) (time.Time, error) {
	p.mu.Lock()
	at := p.now()
	if n := len(p.starts); n > 0 {
		// After per was raised the window has room now, but the slots handed out before stand:
		// a new one never comes before them, which keeps starts in order.
		if last := p.starts[n-1]; last.After(at) {
			at = last
		}
		if n >= p.per {
			if t := p.starts[n-p.per].Add(p.every); t.After(at) {
				at = t
			}
			p.starts = p.starts[n-p.per+1:]
		}
	}
	p.starts = append(p.starts, at)
	p.mu.Unlock()
	return at, p.sleepUntil(ctx, at)
}

// setPer makes the limit per events in any window of every (at least 1) from the next slot on,
// and returns the limit it replaces. The window's accounting carries over: the slots already
// handed out stand and count against the new limit, so lowering it spaces the next slot every
// after the per-th newest, and raising it lets the difference start as soon as the slots handed out before it have.
func (p *pacer) setPer(per int) (was int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was, p.per = p.per, max(per, 1)
	return was
}

// globalExempt reports whether a REST path is one of the interaction endpoints, which are not
// bound to the global rate limit: interaction callbacks and the follow-ups and @original edits
// made with an interaction token (/webhooks/{application id}/{token}).
func globalExempt(path string) bool {
	return strings.Contains(path, "/interactions/") || strings.Contains(path, "/webhooks/")
}
