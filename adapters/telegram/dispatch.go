package telegram

import (
	"context"
	"sync"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// dispatcher hands updates to the Handler for both intakes (poll.go, webhook.go): one update at
// a time (dispatch), a getUpdates batch (handleBatch, batch.go), and the malformed ones skipped
// (skipMalformed). It holds the Handler and who the bot is from Start on.
type dispatcher struct {
	cfg     *Config
	redact  *kit.Redactor
	clock   *kit.Clock
	ch      channels.Channel // what the Handler is told the update came through
	answers *interactions    // callback queries' answers, for the ones nothing answered
	seen    *recentIDs       // update ids handed over (or skipped) in this process

	kit.Handoff[botIdentity] // the Handler and who the bot is, from Start on
}

// dispatch converts one update and hands it to the Handler, once per update id in this process.
// A callback query is answered (with no notice) after the Handler returns if nothing answered it,
// so the user's spinner always stops.
func (d *dispatcher) dispatch(ctx context.Context, u update) error {
	if d.seen.has(u.UpdateID) {
		return nil
	}
	h, self := d.State()
	in, ok := toInbound(u, self, d.clock.Now())
	if !ok {
		d.seen.add(u.UpdateID)
		if cq := u.CallbackQuery; cq != nil {
			d.answers.answerQuietly(ctx, cq.ID)
		}
		return nil
	}
	if in.Interaction != nil {
		defer d.answers.handling(ctx, in.Interaction.ID)()
	}
	if err := h.HandleInbound(ctx, d.ch, in); err != nil {
		return err
	}
	d.seen.add(u.UpdateID)
	return nil
}

// recentIDs remembers the last n update ids handed over, for dedupe in this process.
type recentIDs struct {
	mu   sync.Mutex
	set  map[int64]struct{}
	ring []int64
	next int
}

func newRecentIDs(n int) *recentIDs {
	return &recentIDs{set: make(map[int64]struct{}, n), ring: make([]int64, n)}
}

func (r *recentIDs) has(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[id]
	return ok
}

func (r *recentIDs) add(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[id]; ok {
		return
	}
	if old := r.ring[r.next]; old != 0 {
		delete(r.set, old)
	}
	r.ring[r.next] = id
	r.set[id] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
}
