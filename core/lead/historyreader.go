package lead

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// historyReader reads the conversations' histories for their runs: from the thread store, only
// the turns past the history the cache keeps of a conversation, decoded.
type historyReader struct {
	store *threads.Store
	cache *historyCache
	log   *slog.Logger
}

// begin is threads.Store.BeginRun with the history decoded, read after the cached mark when
// there is one. The history it returns is shared with the cache (capped: an append copies it)
// and must not be changed; release gives the conversation's history back to the cache when the
// run is over, so two runs of one conversation never hold it at once. Once handed out, a
// history's events are never written again: the next run of the conversation appends its new
// turns past them, or copies the kept ones into a new array when the oldest are trimmed, so a
// run, or a subagent forked from it that outlives it, reads them unchanged.
func (r *historyReader) begin(ctx context.Context, conv, runID string) (st threads.RunStart, history []agent.Event, release func(), err error) {
	h := r.cache.take(conv)
	var mark threads.LogMark
	if h != nil {
		mark = h.mark
	}
	if st, err = r.store.History().BeginRunAfter(ctx, conv, runID, mark); err != nil {
		return st, nil, nil, err
	}
	if st.Finished {
		r.cache.put(h)
		return st, nil, func() {}, nil
	}
	if st.Kept > 0 && (h == nil || st.Kept > len(h.sizes)) {
		// Not the mark this cache holds: it cannot happen, but the log is read whole rather
		// than the history built on a guess.
		r.log.Warn("lead: the history read after a mark does not fit the cached one; reading it whole", "conv", conv)
		if st, err = r.store.History().BeginRun(ctx, conv, runID); err != nil || st.Finished {
			return st, nil, func() {}, err
		}
	}
	if st.Kept > 0 {
		r.cache.partial.Add(1)
	} else {
		r.cache.whole.Add(1)
	}
	switch {
	case st.Kept == 0 || h == nil:
		h = &cachedHistory{conv: conv}
		if n := len(st.Events); n > 0 {
			h.events = make([]agent.Event, 0, n+n/4+4)
		}
	case len(h.sizes) > st.Kept:
		// The oldest turns were trimmed: the rest move to a new array, numbered from 0 again.
		drop := len(h.sizes) - st.Kept
		n := 0
		for _, s := range h.sizes[:drop] {
			n += s
		}
		kept := h.events[n:]
		grown := len(kept) + len(st.Events)
		events := make([]agent.Event, len(kept), grown+grown/4+4)
		copy(events, kept)
		for i := range events {
			events[i].Seq = i
		}
		h.events, h.sizes = events, h.sizes[drop:]
	}
	i := 0
	for _, size := range st.TurnSizes {
		before := len(h.events)
		h.events = r.decodeEvents(h.events, conv, st.Events[i:i+size])
		h.sizes = append(h.sizes, len(h.events)-before)
		i += size
	}
	h.mark = st.Mark
	if h.mark.Newest == "" || !r.cache.keeps(cap(h.events)) {
		return st, h.events, func() {}, nil // not kept: the run's own
	}
	return st, h.events[:len(h.events):len(h.events)], func() { r.cache.put(h) }, nil
}

// decodeEvents appends the stored events raw, decoded, to out, skipping (and logging) one that
// does not decode.
func (r *historyReader) decodeEvents(out []agent.Event, conv string, raw []json.RawMessage) []agent.Event {
	for _, b := range raw {
		// Decoded in place: a separate variable would escape to the heap once per event.
		out = append(out, agent.Event{})
		e := &out[len(out)-1]
		if err := json.Unmarshal(b, e); err != nil || e.Kind == "" {
			out = out[:len(out)-1] // the next append zeroes the slot again
			r.log.Warn("lead: skipping an unreadable history event", "conv", conv)
			continue
		}
		e.Seq = len(out) - 1 // a seed is numbered from 0
	}
	return out
}

// decode turns the stored session events back into agent events; unreadable ones are skipped
// and logged.
func (r *historyReader) decode(conv string, raw []json.RawMessage) []agent.Event {
	return r.decodeEvents(make([]agent.Event, 0, len(raw)), conv, raw)
}
