package threads

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// turnOf makes a turn of n events tagged with the turn's number, so tests can tell whole
// turns from pieces.
func turnOf(turn, n int) []json.RawMessage {
	events := make([]json.RawMessage, n)
	for i := range events {
		events[i] = json.RawMessage(fmt.Sprintf(`{"turn":%d,"event":%d,"text":"t%d e%d"}`, turn, i, turn, i))
	}
	return events
}

// TestSessionLogSurvivesRestart proves a restart continues the conversation: a Store built
// afresh (new client, same Redis and prefix) reads back the log the first one wrote, byte for
// byte, and keeps appending to the same thread.
func TestSessionLogSurvivesRestart(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := ctxT(t)
			dial := b.start(t)
			c := dial(t)
			prefix := uniquePrefix(t, c)
			before := New(c, Options{Prefix: prefix})
			th, _, err := before.Conversations().Ensure(ctx, "telegram/-/99/0")
			if err != nil {
				t.Fatal(err)
			}
			want := [][]json.RawMessage{turnOf(1, 3), turnOf(2, 1), {json.RawMessage(` { "spaced" : [1, 2] } `)}}
			for _, turn := range want {
				if err := before.History().AppendTurn(ctx, "telegram/-/99/0", th.ID, turn); err != nil {
					t.Fatal(err)
				}
			}

			// The "restarted process": another client connection and another Store.
			restarted := New(dial(t), Options{Prefix: prefix})
			got, err := restarted.History().LoadTurns(ctx, "telegram/-/99/0")
			want[2][0] = json.RawMessage(`{ "spaced" : [1, 2] }`) // surrounding whitespace is dropped
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("LoadTurns after restart = %s, %v; want %s", got, err, want)
			}
			events, err := restarted.History().LoadEvents(ctx, "telegram/-/99/0")
			if err != nil || len(events) != 5 || string(events[4]) != `{ "spaced" : [1, 2] }` {
				t.Fatalf("LoadEvents after restart = %s, %v; want the 5 events as appended", events, err)
			}
			again, created, err := restarted.Conversations().Ensure(ctx, "telegram/-/99/0")
			if err != nil || created || again.ID != th.ID {
				t.Fatalf("Ensure after restart = %+v, created %v, %v; want the same thread", again, created, err)
			}
			if err := restarted.History().AppendTurn(ctx, "telegram/-/99/0", th.ID, turnOf(4, 1)); err != nil {
				t.Fatalf("appending after restart: %v", err)
			}
		})
	}
}

// TestHistoryTrimmedToNewestTurns proves the bound: with HistoryTurns 3, after five turns of
// different sizes the log holds exactly the last three turns, each whole.
func TestHistoryTrimmedToNewestTurns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{HistoryTurns: 3})
		const conv = "slack/T/C/1"
		th, _, err := s.Conversations().Ensure(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		sizes := []int{1, 4, 2, 5, 3}
		var all [][]json.RawMessage
		for i, n := range sizes {
			all = append(all, turnOf(i+1, n))
			if err := s.History().AppendTurn(ctx, conv, th.ID, all[i]); err != nil {
				t.Fatal(err)
			}
			got, err := s.History().LoadTurns(ctx, conv)
			if err != nil {
				t.Fatal(err)
			}
			want := all[max(0, len(all)-3):]
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after turn %d the log = %s; want the newest %d whole turns %s", i+1, got, len(want), want)
			}
		}
		events, err := s.History().LoadEvents(ctx, conv)
		if err != nil || len(events) != 2+5+3 {
			t.Errorf("LoadEvents = %d events, %v; want 10 (turns 3, 4, 5)", len(events), err)
		}
	})
}

func TestAppendTurnRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		th, _, err := s.Conversations().Ensure(ctx, "c/1")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, conv, thread string
			events             []json.RawMessage
			want               error
		}{
			{"empty turn", "c/1", th.ID, nil, ErrInvalidArgument},
			{"event not JSON", "c/1", th.ID, []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"a":`)}, ErrInvalidArgument},
			{"empty event", "c/1", th.ID, []json.RawMessage{nil}, ErrInvalidArgument},
			{"no thread", "c/none", th.ID, turnOf(1, 1), ErrThreadNotFound},
			{"another thread id", "c/1", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", turnOf(1, 1), ErrStaleThread},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := s.History().AppendTurn(ctx, tc.conv, tc.thread, tc.events); !errors.Is(err, tc.want) {
					t.Errorf("AppendTurn: %v, want %v", err, tc.want)
				}
			})
		}
		if turns, err := s.History().LoadTurns(ctx, "c/1"); err != nil || len(turns) != 0 {
			t.Errorf("log after refused appends = %s, %v; want empty", turns, err)
		}
	})
}

// TestConcurrentAppends proves appends are atomic per turn and conversations don't interfere:
// 8 conversations, each with 4 writers appending 10 turns at once; every conversation's log
// holds exactly its own turns, each whole, each writer's turns in its order.
func TestConcurrentAppends(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{HistoryTurns: 1000})
		const convs, writers, turns = 8, 4, 10
		ids := make([]string, convs)
		for i := range ids {
			th, _, err := s.Conversations().Ensure(ctx, fmt.Sprintf("conv/%d", i))
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = th.ID
		}
		var wg sync.WaitGroup
		errs := make(chan error, convs*writers)
		for cv := range convs {
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range turns {
						turn := []json.RawMessage{
							json.RawMessage(fmt.Sprintf(`{"conv":%d,"writer":%d,"n":%d,"part":0}`, cv, w, n)),
							json.RawMessage(fmt.Sprintf(`{"conv":%d,"writer":%d,"n":%d,"part":1}`, cv, w, n)),
						}
						if err := s.History().AppendTurn(ctx, fmt.Sprintf("conv/%d", cv), ids[cv], turn); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		type ev struct{ Conv, Writer, N, Part int }
		for cv := range convs {
			got, err := s.History().LoadTurns(ctx, fmt.Sprintf("conv/%d", cv))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != writers*turns {
				t.Fatalf("conv %d holds %d turns, want %d", cv, len(got), writers*turns)
			}
			next := make([]int, writers)
			for i, turn := range got {
				var a, b ev
				if len(turn) != 2 || json.Unmarshal(turn[0], &a) != nil || json.Unmarshal(turn[1], &b) != nil {
					t.Fatalf("conv %d turn %d = %s: not a whole turn", cv, i, turn)
				}
				if a.Conv != cv || b.Conv != cv || a.Writer != b.Writer || a.N != b.N || a.Part != 0 || b.Part != 1 {
					t.Fatalf("conv %d turn %d = %s: mixed or foreign events", cv, i, turn)
				}
				if a.N != next[a.Writer] {
					t.Fatalf("conv %d: writer %d turn %d arrived where %d was expected", cv, a.Writer, a.N, next[a.Writer])
				}
				next[a.Writer]++
			}
		}
	})
}
