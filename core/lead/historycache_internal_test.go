package lead

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/threads"
)

func cacheTestStore(t *testing.T) *threads.Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:leadcache:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		_ = c.Close()
	})
	return threads.New(c, threads.Options{Prefix: prefix, HistoryTurns: 3})
}

func storedTurn(t *testing.T, i int) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, e := range []agent.Event{
		{Kind: agent.KindUserMessage, Turn: i, Content: fmt.Sprintf("question %d", i)},
		{Kind: agent.KindAssistantMessage, Turn: i, Content: fmt.Sprintf("answer %d", i)},
	} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestBeginRunReadsOnlyNewTurnsFromTheCache: the second run of a conversation reads only the
// turn appended since the first (Kept), and its history is the whole log's, decoded; the cached
// history is the run's to change (a copy); trimming drops the oldest cached turn.
func TestBeginRunReadsOnlyNewTurnsFromTheCache(t *testing.T) {
	store := cacheTestStore(t)
	team := &Team{store: store, history: newHistoryCache(DefaultHistoryCacheEvents), log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	const conv = "console/-/local/"
	full := func() []agent.Event {
		raw, err := store.LoadEvents(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		return team.decodeHistory(conv, raw)
	}
	for i := 1; i <= 6; i++ {
		st, history, err := team.beginRun(ctx, conv, fmt.Sprintf("run%d", i))
		if err != nil || st.Finished {
			t.Fatalf("run %d: %+v, %v", i, st, err)
		}
		// Run 1 finds an empty log, run 2 reads it whole (the mark of an empty log is none);
		// from run 3 on only the turn since the last run is read.
		if wantKept := min(max(i-2, 0), 2); st.Kept != wantKept || (i > 2 && len(st.Events) != 2) {
			t.Errorf("run %d kept %d turns and read %d events, want %d and 2", i, st.Kept, len(st.Events), wantKept)
		}
		if want := full(); len(history) != len(want) || (len(want) > 0 && !reflect.DeepEqual(history, want)) {
			t.Fatalf("run %d's history:\n%+v\nthe log's:\n%+v", i, history, want)
		}
		for j := range history { // the run's own: changing it leaves the cache alone
			history[j].Content = "changed"
		}
		if _, err := store.FinishRun(ctx, conv, fmt.Sprintf("run%d", i), runEndFor(st.Thread.ID, storedTurn(t, i))); err != nil {
			t.Fatal(err)
		}
	}
}

// runEndFor is an answered run's end appending turn.
func runEndFor(threadID string, turn []json.RawMessage) threads.RunEnd {
	return threads.RunEnd{Outcome: "answered", ThreadID: threadID, Turn: turn}
}

// TestHistoryCacheIsBounded: the cache holds at most its bound of events, dropping the least
// recently used conversations first, and never one history past the bound alone; a history
// taken out is not held.
func TestHistoryCacheIsBounded(t *testing.T) {
	c := newHistoryCache(10)
	h := func(conv string, n int) *cachedHistory {
		return &cachedHistory{conv: conv, events: make([]agent.Event, n), sizes: []int{n}}
	}
	c.put(h("a", 4))
	c.put(h("b", 4))
	if c.take("a") == nil { // a is used again: b is now the oldest
		t.Fatal("a was not cached")
	}
	c.put(h("a", 4))
	c.put(h("c", 4)) // 12 > 10: b goes
	if c.held != 8 || c.take("b") != nil {
		t.Fatalf("held %d events, b still cached: want 8 and b dropped", c.held)
	}
	c.put(h("d", 11)) // past the bound alone: not kept, nothing dropped for it
	if c.take("d") != nil || c.held != 8 {
		t.Fatalf("a history past the bound was kept (held %d)", c.held)
	}
	if c.take("a") == nil || c.held != 4 || c.take("a") != nil {
		t.Fatalf("take: held %d after taking a; a taken twice", c.held)
	}
	off := newHistoryCache(-1)
	off.put(h("a", 1))
	if off.take("a") != nil {
		t.Fatal("a cache bounded below 0 kept a history")
	}
	off.put(&cachedHistory{conv: "e"})
	if off.take("e") != nil {
		t.Fatal("a cache bounded below 0 kept an empty history")
	}
}
