package threads

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func rawEvents(ss ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ss))
	for i, s := range ss {
		out[i] = json.RawMessage(s)
	}
	return out
}

// TestRunRecordLifecycle proves BeginRun and FinishRun together: a first start creates the
// thread and reads an empty log; a finish appends the turn and records the end; a redelivered
// run's start returns the recorded end and touches nothing; a second finish changes nothing.
func TestRunRecordLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "telegram/-/1/"
		st, err := s.History().BeginRun(ctx, conv, "run1")
		if err != nil || st.Finished || !st.Created || st.Thread.ID == "" || st.Thread.ConvKey != conv || len(st.Events) != 0 {
			t.Fatalf("first BeginRun = %+v, %v", st, err)
		}
		first, err := s.History().FinishRun(ctx, conv, "run1", RunEnd{Outcome: "answered", Result: []byte(`{"kind":"final"}`), ThreadID: st.Thread.ID, Turn: rawEvents(`{"a":1}`, `{"b":2}`)})
		if err != nil || !first {
			t.Fatalf("FinishRun = %v, %v", first, err)
		}
		if ev, _ := s.History().LoadEvents(ctx, conv); !reflect.DeepEqual(ev, rawEvents(`{"a":1}`, `{"b":2}`)) {
			t.Errorf("log after FinishRun = %s", ev)
		}
		again, err := s.History().BeginRun(ctx, conv, "run1")
		if err != nil || !again.Finished || again.Outcome != "answered" || string(again.Result) != `{"kind":"final"}` || again.Thread.ID != "" {
			t.Errorf("BeginRun of a finished run = %+v, %v", again, err)
		}
		first, err = s.History().FinishRun(ctx, conv, "run1", RunEnd{Outcome: "failed", Result: []byte(`{}`), ThreadID: st.Thread.ID, Turn: rawEvents(`{"c":3}`)})
		if err != nil || first {
			t.Errorf("second FinishRun = %v, %v; want not first", first, err)
		}
		if ev, _ := s.History().LoadEvents(ctx, conv); len(ev) != 2 {
			t.Errorf("a second finish appended again: %s", ev)
		}
		if again, _ := s.History().BeginRun(ctx, conv, "run1"); again.Outcome != "answered" {
			t.Errorf("a second finish replaced the outcome: %+v", again)
		}
		next, err := s.History().BeginRun(ctx, conv, "run2")
		if err != nil || next.Finished || next.Created || next.Thread.ID != st.Thread.ID || !reflect.DeepEqual(next.Events, rawEvents(`{"a":1}`, `{"b":2}`)) {
			t.Errorf("next run's BeginRun = %+v, %v", next, err)
		}
		ttl, _ := c.PTTL(ctx, keysOf(s).run(conv, "run1")).Result()
		if ttl <= DefaultOutcomeTTL-time.Minute || ttl > DefaultOutcomeTTL {
			t.Errorf("run record TTL = %v, want %v", ttl, DefaultOutcomeTTL)
		}
	})
}

// TestFinishRunWithoutTurnAndOnStaleThread proves a finish without a turn only records, and a
// finish after a reset records the end but leaves the new thread's log alone.
func TestFinishRunWithoutTurnAndOnStaleThread(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "discord/g/c/"
		st, err := s.History().BeginRun(ctx, conv, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if first, err := s.History().FinishRun(ctx, conv, "r1", RunEnd{Outcome: "failed", Result: []byte(`{"kind":"failed"}`)}); err != nil || !first {
			t.Fatalf("finish without a turn = %v, %v", first, err)
		}
		if ev, _ := s.History().LoadEvents(ctx, conv); len(ev) != 0 {
			t.Errorf("a finish without a turn appended %s", ev)
		}
		if _, err := s.History().BeginRun(ctx, conv, "r2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Conversations().Reset(ctx, conv); err != nil {
			t.Fatal(err)
		}
		first, err := s.History().FinishRun(ctx, conv, "r2", RunEnd{Outcome: "answered", Result: []byte(`{}`), ThreadID: st.Thread.ID, Turn: rawEvents(`{}`)})
		if !errors.Is(err, ErrStaleThread) || !first {
			t.Errorf("finish on a reset thread = %v, %v; want first and ErrStaleThread", first, err)
		}
		if ev, _ := s.History().LoadEvents(ctx, conv); len(ev) != 0 {
			t.Errorf("a stale finish appended to the new thread: %s", ev)
		}
		if got, _ := s.History().BeginRun(ctx, conv, "r2"); !got.Finished || got.Outcome != "answered" {
			t.Errorf("a stale finish was not recorded: %+v", got)
		}
	})
}

// TestFinishRunWithoutThreadWritesNothing proves a turn for a conversation without a thread is
// ErrThreadNotFound and records no end, so the run can be tried again.
func TestFinishRunWithoutThreadWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		_, err := s.History().FinishRun(ctx, "x/y/z/", "r1", RunEnd{Outcome: "answered", ThreadID: "t", Turn: rawEvents(`1`)})
		if !errors.Is(err, ErrThreadNotFound) {
			t.Fatalf("err = %v, want ErrThreadNotFound", err)
		}
		if st, _ := s.History().BeginRun(ctx, "x/y/z/", "r1"); st.Finished {
			t.Error("the end was recorded without the turn")
		}
	})
}

// TestConcurrentFinishRunOneWins proves racing attempts of one run record one end and append
// one turn.
func TestConcurrentFinishRunOneWins(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "c/o/n/"
		st, err := s.History().BeginRun(ctx, conv, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first, err := s.History().FinishRun(ctx, conv, "r1", RunEnd{Outcome: fmt.Sprint("o", i), ThreadID: st.Thread.ID, Turn: rawEvents(`1`)})
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				wins += map[bool]int{true: 1}[first]
				mu.Unlock()
			}()
		}
		wg.Wait()
		if ev, _ := s.History().LoadEvents(ctx, conv); wins != 1 || len(ev) != 1 {
			t.Errorf("%d attempts won, log has %d events; want 1 and 1", wins, len(ev))
		}
	})
}

func TestRunRecordRejectsBadArguments(t *testing.T) {
	ctx := ctxT(t)
	s := newTestStore(t, embeddedRedis(t), Options{})
	cases := []struct {
		name string
		err  error
	}{
		{"begin without conversation", func() error { _, err := s.History().BeginRun(ctx, "", "r"); return err }()},
		{"begin with a bad run id", func() error { _, err := s.History().BeginRun(ctx, "c", "a:b"); return err }()},
		{"finish without outcome", func() error { _, err := s.History().FinishRun(ctx, "c", "r", RunEnd{}); return err }()},
		{"finish with a bad run id", func() error { _, err := s.History().FinishRun(ctx, "c", "", RunEnd{Outcome: "x"}); return err }()},
		{"finish a turn without thread id", func() error {
			_, err := s.History().FinishRun(ctx, "c", "r", RunEnd{Outcome: "x", Turn: rawEvents(`1`)})
			return err
		}()},
		{"finish a turn that is not JSON", func() error {
			_, err := s.History().FinishRun(ctx, "c", "r", RunEnd{Outcome: "x", ThreadID: "t", Turn: rawEvents(`{`)})
			return err
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, ErrInvalidArgument) {
				t.Errorf("err = %v, want ErrInvalidArgument", tc.err)
			}
		})
	}
}

// TestBeginRunReportsCorruptLog proves an undecodable stored turn is ErrCorrupt, as LoadEvents.
func TestBeginRunReportsCorruptLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		c.RPush(ctx, keysOf(s).conv("k/1/2/").log, "not json")
		if _, err := s.History().BeginRun(ctx, "k/1/2/", "r1"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("err = %v, want ErrCorrupt", err)
		}
	})
}

// TestLookupReadsRecordsAndMarks proves Lookup returns what RecordOutbound and Mark stored, in
// one round trip, and leaves missing ones out without writing them.
func TestLookupReadsRecordsAndMarks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		if _, _, err := s.Records().RecordOutbound(ctx, "run1", "card", []byte(`{"ids":["7"]}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.Inbox().Mark(ctx, "reply:run1", []byte("42"), time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := s.Records().Lookup(ctx, "run1", []string{"final", "card"}, []string{"reply:run1", "reply:other"})
		want := RunRecords{Outbound: map[string][]byte{"card": []byte(`{"ids":["7"]}`)}, Marks: map[string][]byte{"reply:run1": []byte("42")}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Lookup = %+v, %v; want %+v", got, err, want)
		}
		if _, found, _ := s.Records().Outbound(ctx, "run1", "final"); found {
			t.Error("Lookup wrote a record")
		}
		for _, bad := range []func() error{
			func() error { _, err := s.Records().Lookup(ctx, "a:b", nil, nil); return err },
			func() error { _, err := s.Records().Lookup(ctx, "r", []string{""}, nil); return err },
			func() error { _, err := s.Records().Lookup(ctx, "r", nil, []string{""}); return err },
		} {
			if err := bad(); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("bad lookup err = %v, want ErrInvalidArgument", err)
			}
		}
	})
}
