package discord

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
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
// would let 2×per through in the first window.) now and sleepUntil are its clock; tests give it
// a virtual one.
type pacer struct {
	mu         sync.Mutex
	per        int
	every      time.Duration
	starts     []time.Time // the last per starts, oldest first
	now        func() time.Time
	sleepUntil func(ctx context.Context, at time.Time) error
}

func newPacer(per int, every time.Duration) *pacer {
	p := &pacer{per: max(per, 1), every: every, now: time.Now}
	p.sleepUntil = func(ctx context.Context, at time.Time) error { return channels.Sleep(ctx, at.Sub(p.now())) }
	return p
}

// wait returns when the next event may start, with the slot it took, or with ctx's error (the
// slot stays spent).
func (p *pacer) wait(ctx context.Context) (time.Time, error) {
	p.mu.Lock()
	at := p.now()
	if len(p.starts) == p.per {
		if t := p.starts[0].Add(p.every); t.After(at) {
			at = t
		}
		p.starts = p.starts[1:]
	}
	p.starts = append(p.starts, at)
	p.mu.Unlock()
	return at, p.sleepUntil(ctx, at)
}

// globalExempt reports whether a REST path is one of the interaction endpoints, which are not
// bound to the global rate limit: interaction callbacks and the follow-ups and @original edits
// made with an interaction token (/webhooks/{application id}/{token}).
func globalExempt(path string) bool {
	return strings.Contains(path, "/interactions/") || strings.Contains(path, "/webhooks/")
}
