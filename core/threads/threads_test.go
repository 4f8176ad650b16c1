package threads

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestThreadCreationRace proves that racing first messages of one conversation create exactly
// one thread: 50 goroutines call Ensure at once, all get the same thread id, one sees created.
func TestThreadCreationRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		const racers = 50
		// Separate stores, as separate processes would have: no shared in-process state.
		stores := make([]*Store, racers)
		prefix := uniquePrefix(t, c)
		for i := range stores {
			stores[i] = New(c, Options{Prefix: prefix})
		}
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			threads = make([]Thread, racers)
			created = make([]bool, racers)
			errs    = make([]error, racers)
		)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				threads[i], created[i], errs[i] = stores[i].Conversations().Ensure(ctx, "telegram/-/12345/7")
			}()
		}
		close(start)
		wg.Wait()
		creators := 0
		for i := range racers {
			if errs[i] != nil {
				t.Fatalf("racer %d: %v", i, errs[i])
			}
			if !reflect.DeepEqual(threads[i], threads[0]) {
				t.Errorf("racer %d got thread %+v, racer 0 got %+v", i, threads[i], threads[0])
			}
			if created[i] {
				creators++
			}
		}
		if creators != 1 {
			t.Errorf("%d racers saw created=true, want exactly 1", creators)
		}
		got, err := stores[0].Conversations().Get(ctx, "telegram/-/12345/7")
		if err != nil || !reflect.DeepEqual(got, threads[0]) {
			t.Errorf("Get after the race = %+v, %v; want %+v", got, err, threads[0])
		}
	})
}

func TestEnsureFillsThread(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		clock := newFakeClock()
		s := newTestStore(t, c, Options{Now: clock.Now})
		th, created, err := s.Conversations().Ensure(ctx, "slack/T1/C1/1700000000.0001")
		if err != nil || !created {
			t.Fatalf("Ensure = %v, created %v", err, created)
		}
		if len(th.ID) != 26 || len(th.SessionID) != 26 || th.ID == th.SessionID {
			t.Errorf("ids %q / %q: want two distinct 26-character ids", th.ID, th.SessionID)
		}
		if th.ConvKey != "slack/T1/C1/1700000000.0001" || !th.CreatedAt.Equal(clock.Now()) {
			t.Errorf("thread %+v: wrong conversation or creation time (want %v)", th, clock.Now())
		}
		again, created, err := s.Conversations().Ensure(ctx, "slack/T1/C1/1700000000.0001")
		if err != nil || created || !reflect.DeepEqual(again, th) {
			t.Errorf("second Ensure = %+v, created %v, %v; want the first thread, not created", again, created, err)
		}
		other, _, err := s.Conversations().Ensure(ctx, "slack/T1/C1/other")
		if err != nil || other.ID == th.ID {
			t.Errorf("another conversation got %+v, %v; want its own thread", other, err)
		}
	})
}

func TestGetUnknownConversationIsNotFound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		s := newTestStore(t, c, Options{})
		if _, err := s.Conversations().Get(ctxT(t), "discord/g/c/none"); !errors.Is(err, ErrThreadNotFound) {
			t.Errorf("Get of an unknown conversation: %v, want ErrThreadNotFound", err)
		}
	})
}

// TestResetStartsNewThread proves the `new` command: a new thread and session id, the old log
// gone, the pending clarification cancelled, settings kept, late turns of the old thread refused.
func TestResetStartsNewThread(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "telegram/-/42/0"
		old, _, err := s.Conversations().Ensure(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Conversations().SetSettings(ctx, conv, Settings{Model: "deepseek-reasoner"}); err != nil {
			t.Fatal(err)
		}
		if err := s.History().AppendTurn(ctx, conv, old.ID, []json.RawMessage{json.RawMessage(`{"role":"user","text":"hi"}`)}); err != nil {
			t.Fatal(err)
		}
		clar, err := s.Clarifications().Put(ctx, Clarification{ConvKey: conv, RunID: "run1", AllowedUserID: "u1"})
		if err != nil {
			t.Fatal(err)
		}

		fresh, err := s.Conversations().Reset(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		if fresh.ID == old.ID || fresh.SessionID == old.SessionID || fresh.ID <= old.ID {
			t.Errorf("after reset thread %+v, before %+v: want new ids that sort after the old", fresh, old)
		}
		if fresh.Settings.Model != "deepseek-reasoner" {
			t.Errorf("settings after reset = %+v, want the model override kept", fresh.Settings)
		}
		if got, err := s.Conversations().Get(ctx, conv); err != nil || !reflect.DeepEqual(got, fresh) {
			t.Errorf("Get after reset = %+v, %v; want %+v", got, err, fresh)
		}
		if events, err := s.History().LoadEvents(ctx, conv); err != nil || len(events) != 0 {
			t.Errorf("log after reset = %s, %v; want empty", events, err)
		}
		if _, ok, err := s.Clarifications().Pending(ctx, conv); err != nil || ok {
			t.Errorf("pending clarification after reset: ok=%v, %v; want none", ok, err)
		}
		if _, err := s.Clarifications().Take(ctx, clar.ID, "u1"); !errors.Is(err, ErrClarificationCancelled) {
			t.Errorf("taking the old clarification: %v, want ErrClarificationCancelled", err)
		}
		err = s.History().AppendTurn(ctx, conv, old.ID, []json.RawMessage{json.RawMessage(`{"late":true}`)})
		if !errors.Is(err, ErrStaleThread) {
			t.Errorf("appending to the old thread: %v, want ErrStaleThread", err)
		}
		if err := s.History().AppendTurn(ctx, conv, fresh.ID, []json.RawMessage{json.RawMessage(`{"n":1}`)}); err != nil {
			t.Errorf("appending to the new thread: %v", err)
		}
	})
}

func TestResetWithoutThreadCreatesOne(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		th, err := s.Conversations().Reset(ctx, "console/-/local/0")
		if err != nil || th.ID == "" {
			t.Fatalf("Reset of a new conversation = %+v, %v", th, err)
		}
		if got, created, err := s.Conversations().Ensure(ctx, "console/-/local/0"); err != nil || created || got.ID != th.ID {
			t.Errorf("Ensure after Reset = %+v, created %v, %v; want the reset's thread", got, created, err)
		}
	})
}

func TestSettings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "discord/g1/c1/t1"
		if err := s.Conversations().SetSettings(ctx, conv, Settings{Model: "m"}); !errors.Is(err, ErrThreadNotFound) {
			t.Errorf("SetSettings before Ensure: %v, want ErrThreadNotFound", err)
		}
		if _, err := s.Conversations().GetSettings(ctx, conv); !errors.Is(err, ErrThreadNotFound) {
			t.Errorf("GetSettings before Ensure: %v, want ErrThreadNotFound", err)
		}
		if _, _, err := s.Conversations().Ensure(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Conversations().GetSettings(ctx, conv); err != nil || !reflect.DeepEqual(got, Settings{}) {
			t.Errorf("settings of a new thread = %+v, %v; want zero", got, err)
		}
		steps := []Settings{
			{Model: "deepseek-reasoner"},
			{Model: "gpt-x", Extra: map[string]string{"followup": "interrupt"}},
			{},
		}
		for _, want := range steps {
			if err := s.Conversations().SetSettings(ctx, conv, want); err != nil {
				t.Fatal(err)
			}
			got, err := s.Conversations().GetSettings(ctx, conv)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("GetSettings = %+v, %v; want %+v", got, err, want)
			}
		}
	})
}

func TestConversationKeyValidated(t *testing.T) {
	s := New(embeddedRedis(t), Options{})
	ctx := ctxT(t)
	for _, tc := range []struct {
		name, conv string
	}{
		{"empty", ""},
		{"too long", strings.Repeat("x", maxConvKeyLen+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := s.Conversations().Ensure(ctx, tc.conv); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("Ensure: %v, want ErrInvalidArgument", err)
			}
			if _, err := s.Conversations().Reset(ctx, tc.conv); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("Reset: %v, want ErrInvalidArgument", err)
			}
			if _, err := s.History().LoadEvents(ctx, tc.conv); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("LoadEvents: %v, want ErrInvalidArgument", err)
			}
		})
	}
}
