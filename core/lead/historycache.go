package lead

import (
	"container/list"
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
// in place (see historyReader.begin).
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

// HistoryStats is how this process's runs read their histories: partial reads took only the
// turns since the cached history's mark, whole ones the whole log (a conversation's first run
// here, one evicted or not kept, a mark that no longer matched); room is the events the cache
// holds room for now.
type HistoryStats struct {
	Partial, Whole int64
	Room           int
}

// HistoryStats reads the history cache's figures.
func (t *Team) HistoryStats() HistoryStats { return t.history.cache.stats() }

func (c *historyCache) stats() HistoryStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return HistoryStats{Partial: c.partial.Load(), Whole: c.whole.Load(), Room: c.held}
}
