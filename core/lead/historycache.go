package lead

import (
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// DefaultHistoryCacheEvents bounds the history cache: room for about 4 MB of events, the
// history of some fifty conversations at the default bound of 50 turns (or of hundreds of short
// ones).
const DefaultHistoryCacheEvents = 16384

// historyCache keeps the decoded history of the conversations this process ran last, each with
// the mark of the log it was read from, so that a run reads and decodes only the turns appended
// since (threads.History.BeginRunAfter) instead of the whole log: the CPU and the Redis transfer a
// run spends on its history then no longer grow with the history's length. The log in Redis
// stays the truth: a mark that no longer matches (another thread after /new, a log written by a
// version that does not count its turns) reads the whole log again, and another process's turns
// are read as any new turn. Bounded by the events it holds, least recently used first out.
type historyCache struct {
	mu   sync.Mutex
	max  int // room for events held at most (their arrays' capacity); 0: nothing is kept
	held int
	// partial and whole count the runs' reads: only the turns since the cached mark, or the
	// whole log.
	partial, whole atomic.Int64
	order          list.List // of *cachedHistory, most recently used first
	byConv         map[string]*list.Element
}

// cachedHistory is one conversation's history as last read. A run takes it out of the cache
// until it ends (so two runs of one conversation never hold one at once) and reads its events
// in place (see beginRun).
type cachedHistory struct {
	conv   string
	mark   threads.LogMark
	events []agent.Event // decoded, oldest first
	sizes  []int         // events of each turn, oldest first (unreadable events skipped)
}

func newHistoryCache(maxEvents int) *historyCache {
	return &historyCache{max: max(maxEvents, 0), byConv: map[string]*list.Element{}}
}

// take removes conv's history from the cache and returns it, or nil.
func (c *historyCache) take(conv string) *cachedHistory {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byConv[conv]
	if !ok {
		return nil
	}
	h := c.order.Remove(e).(*cachedHistory)
	delete(c.byConv, conv)
	c.held -= cap(h.events)
	return h
}

// keeps reports whether a history taking room for n events is kept: one of more than an
// eighth of the bound would push most others out at each run (long histories of many
// conversations would then be read whole all the same, and copied besides), so it is read whole
// each run, as without the cache, and handed to its run without a copy.
func (c *historyCache) keeps(n int) bool { return c.max > 0 && n <= c.max/8 }

// put keeps h as its conversation's history, unless keeps says no or it marks no log (an empty
// log: the next run reads it whole all the same), and drops the least recently used ones past
// the bound.
func (c *historyCache) put(h *cachedHistory) {
	if h == nil || h.mark.Newest == "" || !c.keeps(cap(h.events)) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byConv[h.conv]; ok { // another run of it read meanwhile: keep the newer
		c.held -= cap(c.order.Remove(e).(*cachedHistory).events)
	}
	c.byConv[h.conv] = c.order.PushFront(h)
	c.held += cap(h.events)
	for c.held > c.max {
		old := c.order.Remove(c.order.Back()).(*cachedHistory)
		delete(c.byConv, old.conv)
		c.held -= cap(old.events)
	}
}

// beginRun is threads.History.BeginRun with the history decoded, read after the cached mark when
// there is one. The history it returns is shared with the cache (capped: an append copies it)
// and must not be changed; release gives the conversation's history back to the cache when the
// run is over, so two runs of one conversation never hold it at once. Once handed out, a
// history's events are never written again: the next run of the conversation appends its new
// turns past them, or copies the kept ones into a new array when the oldest are trimmed, so a
// run, or a subagent forked from it that outlives it, reads them unchanged.
func (t *Team) beginRun(ctx context.Context, conv, runID string) (st threads.RunStart, history []agent.Event, release func(), err error) {
	h := t.history.take(conv)
	var mark threads.LogMark
	if h != nil {
		mark = h.mark
	}
	if st, err = t.store.History().BeginRunAfter(ctx, conv, runID, mark); err != nil {
		return st, nil, nil, err
	}
	if st.Finished {
		t.history.put(h)
		return st, nil, func() {}, nil
	}
	if st.Kept > 0 && (h == nil || st.Kept > len(h.sizes)) {
		// Not the mark this cache holds: it cannot happen, but the log is read whole rather
		// than the history built on a guess.
		t.log.Warn("lead: the history read after a mark does not fit the cached one; reading it whole", "conv", conv)
		if st, err = t.store.History().BeginRun(ctx, conv, runID); err != nil || st.Finished {
			return st, nil, func() {}, err
		}
	}
	if st.Kept > 0 {
		t.history.partial.Add(1)
	} else {
		t.history.whole.Add(1)
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
		h.events = t.decodeEvents(h.events, conv, st.Events[i:i+size])
		h.sizes = append(h.sizes, len(h.events)-before)
		i += size
	}
	h.mark = st.Mark
	if h.mark.Newest == "" || !t.history.keeps(cap(h.events)) {
		return st, h.events, func() {}, nil // not kept: the run's own
	}
	return st, h.events[:len(h.events):len(h.events)], func() { t.history.put(h) }, nil
}

// decodeEvents appends the stored events raw, decoded, to out, skipping (and logging) one that
// does not decode.
func (t *Team) decodeEvents(out []agent.Event, conv string, raw []json.RawMessage) []agent.Event {
	for _, r := range raw {
		// Decoded in place: a separate variable would escape to the heap once per event.
		out = append(out, agent.Event{})
		e := &out[len(out)-1]
		if err := json.Unmarshal(r, e); err != nil || e.Kind == "" {
			out = out[:len(out)-1] // the next append zeroes the slot again
			t.log.Warn("lead: skipping an unreadable history event", "conv", conv)
			continue
		}
		e.Seq = len(out) - 1 // a seed is numbered from 0
	}
	return out
}

// HistoryStats is how this process's runs read their histories: partial reads took only the
// turns since the cached history's mark, whole ones the whole log (a conversation's first run
// here, one evicted or not kept, a mark that no longer matched); room is the events the cache
// holds room for now.
type HistoryStats struct {
	Partial, Whole int64
	Room           int
}

// HistoryStats reads the history cache's figures.
func (t *Team) HistoryStats() HistoryStats { return t.history.stats() }

func (c *historyCache) stats() HistoryStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return HistoryStats{Partial: c.partial.Load(), Whole: c.whole.Load(), Room: c.held}
}
