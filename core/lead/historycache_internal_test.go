package lead

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// NewTestStore returns a thread store with opts on the real Redis under a prefix of its own
// (opts.Prefix is replaced), removed after the test. The lead_test package's tests use it too.
func NewTestStore(t *testing.T, opts threads.Options) *threads.Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:lead:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		_ = c.Close()
	})
	opts.Prefix = prefix
	return threads.New(c, opts)
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
// turn appended since the first (Kept), and its history is the whole log's, decoded and numbered
// from 0; a history handed to a run never changes afterwards, while later runs append turns and
// trimming drops the oldest; the conversation's history is the cache's again only once the run
// releases it.
func TestBeginRunReadsOnlyNewTurnsFromTheCache(t *testing.T) {
	store := NewTestStore(t, threads.Options{HistoryTurns: 3})
	hr := &historyReader{store: store, cache: newHistoryCache(DefaultHistoryCacheEvents), log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	const conv = "console/-/local/"
	full := func() []agent.Event {
		raw, err := store.History().LoadEvents(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		return hr.decode(conv, raw)
	}
	type handed struct{ history, then []agent.Event }
	var earlier []handed
	for i := 1; i <= 7; i++ {
		st, history, release, err := hr.begin(ctx, conv, fmt.Sprintf("run%d", i))
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
		for j, e := range history {
			if e.Seq != j {
				t.Fatalf("run %d's history: event %d has seq %d", i, j, e.Seq)
			}
		}
		if len(history) != cap(history) {
			t.Errorf("run %d's history has room past its end: an append would write into the cache", i)
		}
		if again := hr.cache.take(conv); again != nil {
			t.Fatalf("run %d: the history was the cache's again before the run released it", i)
		}
		if _, err := store.History().FinishRun(ctx, conv, fmt.Sprintf("run%d", i), runEndFor(st.Thread.ID, storedTurn(t, i))); err != nil {
			t.Fatal(err)
		}
		release()
		for k, h := range earlier {
			if !reflect.DeepEqual(h.history, h.then) {
				t.Fatalf("run %d's history changed by run %d:\n%+v\nwas\n%+v", k+1, i, h.history, h.then)
			}
		}
		earlier = append(earlier, handed{history, append([]agent.Event(nil), history...)})
	}
}

// runEndFor is an answered run's end appending turn.
func runEndFor(threadID string, turn []json.RawMessage) threads.RunEnd {
	return threads.RunEnd{Outcome: "answered", ThreadID: threadID, Turn: turn}
}

// TestHistoryCacheIsBounded: the cache holds at most its bound of events, dropping the least
// recently used conversations first, and no history of more than an eighth of the bound; a
// history taken out is not held.
func TestHistoryCacheIsBounded(t *testing.T) {
	c := newHistoryCache(80) // histories of at most 10 events, 80 in all
	h := func(conv string, n int) *cachedHistory {
		return &cachedHistory{conv: conv, mark: threads.LogMark{Newest: "[]"}, events: make([]agent.Event, n), sizes: []int{n}}
	}
	for i := range 8 {
		c.put(h(fmt.Sprint(i), 10))
	}
	if c.take("0") == nil { // 0 is used again: 1 is now the oldest
		t.Fatal("0 was not cached")
	}
	c.put(h("0", 10))
	c.put(h("8", 10)) // 90 > 80: 1 goes
	if c.held != 80 || c.take("1") != nil {
		t.Fatalf("held %d events, 1 still cached: want 80 and 1 dropped", c.held)
	}
	c.put(h("big", 11)) // more than an eighth: not kept, nothing dropped for it
	if c.take("big") != nil || c.held != 80 {
		t.Fatalf("a history past an eighth of the bound was kept (held %d)", c.held)
	}
	if c.take("0") == nil || c.held != 70 || c.take("0") != nil {
		t.Fatalf("take: held %d after taking 0, want 70; or 0 taken twice", c.held)
	}
	c.put(h("2", 3)) // a conversation read again replaces its older history
	if c.held != 63 {
		t.Fatalf("held %d after 2 shrank from 10 to 3 events, want 63", c.held)
	}
	c.put(&cachedHistory{conv: "empty"}) // an empty log: no mark, nothing to keep
	if c.take("empty") != nil {
		t.Fatal("the history of an empty log was kept")
	}
	off := newHistoryCache(-1)
	off.put(h("a", 1))
	if off.take("a") != nil {
		t.Fatal("a cache bounded below 0 kept a history")
	}
}

// TestHistoryCacheUnderConcurrentConversations: many conversations run at once (each one run at
// a time, as the runs' leases keep them) through a cache too small for all of them: every run's
// history is its log's, whatever was evicted meanwhile, under the race detector.
func TestHistoryCacheUnderConcurrentConversations(t *testing.T) {
	store := NewTestStore(t, threads.Options{HistoryTurns: 4})
	// Room for 120 events: a conversation's history (4 turns of 2 events, and room to grow)
	// fits, twelve of them do not.
	hr := &historyReader{store: store, cache: newHistoryCache(120), log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	const workers, convsEach, runs = 4, 3, 8
	var partial atomic.Int32
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				for r := range runs {
					for c := range convsEach {
						conv := fmt.Sprintf("console/-/c%d-%d/", w, c)
						id := fmt.Sprintf("run%d", r)
						st, history, release, err := hr.begin(ctx, conv, id)
						if err != nil {
							return err
						}
						if st.Kept > 0 {
							partial.Add(1)
						}
						raw, err := store.History().LoadEvents(ctx, conv)
						if err != nil {
							return err
						}
						if want := hr.decode(conv, raw); len(history) != len(want) || (len(want) > 0 && !reflect.DeepEqual(history, want)) {
							return fmt.Errorf("%s %s: history of %d events, the log's %d", conv, id, len(history), len(want))
						}
						turn := []json.RawMessage{
							json.RawMessage(fmt.Sprintf(`{"kind":"user/message","turn":%d,"content":"q%d"}`, r+1, r)),
							json.RawMessage(fmt.Sprintf(`{"kind":"assistant/message","turn":%d,"content":"a%d"}`, r+1, r)),
						}
						if _, err := store.History().FinishRun(ctx, conv, id, runEndFor(st.Thread.ID, turn)); err != nil {
							return err
						}
						release()
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// How many found their history cached depends on the interleaving; the other tests count it.
	t.Logf("%d runs of %d read only the new turns", partial.Load(), workers*convsEach*runs)
	if hr.cache.held > hr.cache.max {
		t.Errorf("the cache holds room for %d events, past its bound of %d", hr.cache.held, hr.cache.max)
	}
}
