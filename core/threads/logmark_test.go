package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// reader is a caller of BeginRunAfter that keeps the log as it read it, turn by turn, the way
// the lead's history cache does.
type reader struct {
	s     *Store
	conv  string
	name  string // run ids are name + a count
	mark  LogMark
	turns [][]json.RawMessage
	runs  int
}

func (r *reader) run() string { return fmt.Sprintf("%srun%d", r.name, r.runs) }

// begin starts a run after the reader's mark and returns how much it read: kept (the mark's
// turns the log still holds) and the events read.
func (r *reader) begin(t *testing.T, ctx context.Context) (st RunStart) {
	t.Helper()
	r.runs++
	st, err := r.s.History().BeginRunAfter(ctx, r.conv, r.run(), r.mark)
	if err != nil {
		t.Fatalf("BeginRunAfter: %v", err)
	}
	if st.Kept > len(r.turns) {
		t.Fatalf("kept %d turns of a mark of %d", st.Kept, len(r.turns))
	}
	if st.Kept == 0 {
		r.turns = nil
	} else {
		r.turns = r.turns[len(r.turns)-st.Kept:]
	}
	i := 0
	for _, n := range st.TurnSizes {
		r.turns = append(r.turns, st.Events[i:i+n])
		i += n
	}
	if i != len(st.Events) {
		t.Fatalf("turn sizes %v do not add up to the %d events read", st.TurnSizes, len(st.Events))
	}
	r.mark = st.Mark
	// What the reader holds is the log, whatever it read.
	var have []json.RawMessage
	for _, turn := range r.turns {
		have = append(have, turn...)
	}
	want, err := r.s.History().LoadEvents(ctx, r.conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != len(want) || (len(want) > 0 && !reflect.DeepEqual(have, want)) {
		t.Fatalf("the reader holds %s, the log is %s", have, want)
	}
	return st
}

// TestBeginRunAfterReadsOnlyNewTurns: with the mark of its last read, a run's start reads only
// the turns appended since — by FinishRun or AppendTurn, by this caller or another — and says how
// many of the marked turns are still there (trimming drops the oldest); a mark that no longer
// matches (trimmed past its newest turn, another thread after /new, a log someone wrote without
// counting, a forged newest turn) gets the whole log. Whatever was read, the caller's turns are
// the log.
func TestBeginRunAfterReadsOnlyNewTurns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{HistoryTurns: 3})
		const conv = "telegram/-/1/"
		r := &reader{s: s, conv: conv}
		expect := func(st RunStart, kept, events int) {
			t.Helper()
			if st.Kept != kept || len(st.Events) != events {
				t.Fatalf("read kept %d and %d events, want %d and %d", st.Kept, len(st.Events), kept, events)
			}
		}
		finish := func(turn ...string) {
			t.Helper()
			th, _, err := s.Conversations().Ensure(ctx, conv)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.History().AppendTurn(ctx, conv, th.ID, rawEvents(turn...)); err != nil {
				t.Fatal(err)
			}
		}

		expect(r.begin(t, ctx), 0, 0) // a new thread, an empty log
		expect(r.begin(t, ctx), 0, 0) // a mark of an empty log reads the whole (empty) log
		st := r.begin(t, ctx)
		if _, err := s.History().FinishRun(ctx, conv, r.run(), RunEnd{Outcome: "answered", ThreadID: st.Thread.ID, Turn: rawEvents(`{"t":1}`, `{"t":1,"b":1}`)}); err != nil {
			t.Fatal(err)
		}
		expect(r.begin(t, ctx), 0, 2) // first read of a log: whole
		finish(`{"t":2}`)
		expect(r.begin(t, ctx), 1, 1) // only the new turn
		expect(r.begin(t, ctx), 2, 0) // nothing new: nothing read
		finish(`{"t":3}`)
		finish(`{"t":4}`, `{"t":4,"b":1}`)
		expect(r.begin(t, ctx), 1, 3) // turn 1 trimmed, 2 kept, 3 and 4 read

		// Trimmed past the mark's newest turn: the whole log.
		old := r.mark
		finish(`{"t":5}`)
		finish(`{"t":6}`)
		finish(`{"t":7}`)
		expect(r.begin(t, ctx), 0, 3)

		// Someone appended without counting or trimming (an older version of the bot): the turn
		// at the mark's place is another.
		if err := c.RPush(ctx, keysOf(s).conv(conv).log, `[{"t":8}]`).Err(); err != nil {
			t.Fatal(err)
		}
		expect(r.begin(t, ctx), 0, 4)
		finish(`{"t":9}`)
		expect(r.begin(t, ctx), 2, 1)

		// A forged or stale newest turn, and a mark of an older count, read the whole log.
		forged := r.mark
		forged.Newest = `[{"t":"x"}]`
		if st, err := s.History().BeginRunAfter(ctx, conv, "forged", forged); err != nil || st.Kept != 0 || len(st.Events) != 3 {
			t.Fatalf("forged mark: kept %d, %d events, %v; want the whole log", st.Kept, len(st.Events), err)
		}
		if st, err := s.History().BeginRunAfter(ctx, conv, "old", old); err != nil || st.Kept != 0 {
			t.Fatalf("a mark trimmed away: kept %d, %v; want the whole log", st.Kept, err)
		}
		ahead := r.mark
		ahead.Count += 5
		if st, err := s.History().BeginRunAfter(ctx, conv, "ahead", ahead); err != nil || st.Kept != 0 {
			t.Fatalf("a mark ahead of the log: kept %d, %v; want the whole log", st.Kept, err)
		}

		// After /new the mark is another thread's.
		if _, err := s.Conversations().Reset(ctx, conv); err != nil {
			t.Fatal(err)
		}
		expect(r.begin(t, ctx), 0, 0)
		finish(`{"t":1}`)
		expect(r.begin(t, ctx), 0, 1)
		finish(`{"t":2}`)
		expect(r.begin(t, ctx), 1, 1)

		// A finished run's start reads nothing and marks nothing.
		if _, err := s.History().FinishRun(ctx, conv, "done", RunEnd{Outcome: "answered"}); err != nil {
			t.Fatal(err)
		}
		if st, err := s.History().BeginRunAfter(ctx, conv, "done", r.mark); err != nil || !st.Finished || st.Mark != (LogMark{}) || st.Events != nil {
			t.Fatalf("a finished run's start = %+v, %v", st, err)
		}
	})
}

// TestBeginRunAfterSeesOtherWriters: two readers of one conversation (two processes) each read
// what the other appended, and only that.
func TestBeginRunAfterSeesOtherWriters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newTestStore(t, c, Options{HistoryTurns: 50})
		const conv = "slack/T1/D1/"
		a, b := &reader{s: s, conv: conv, name: "a"}, &reader{s: s, conv: conv, name: "b"}
		for i := range 6 {
			w := a
			if i%2 == 1 {
				w = b
			}
			st := w.begin(t, ctx)
			// From its second start on (the first after it read a non-empty log), each reads
			// the two turns since its last: the other's and its own.
			if i >= 3 && (st.Kept != i-2 || len(st.Events) != 2) {
				t.Fatalf("start %d kept %d and read %d events, want %d and the 2 turns since its last", i, st.Kept, len(st.Events), i-2)
			}
			end := RunEnd{Outcome: "answered", ThreadID: st.Thread.ID, Turn: rawEvents(fmt.Sprintf(`{"turn":%d}`, i))}
			if _, err := s.History().FinishRun(ctx, conv, w.run(), end); err != nil {
				t.Fatal(err)
			}
		}
	})
}
