package threads

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestForgetWhereDropsOneWorkspace proves ForgetWhere drops the state of exactly the
// conversations its predicate accepts: their threads and session logs are gone, their pending
// clarifications withdrawn (a click is told so), while every other conversation — another
// workspace, another platform — keeps its thread, log and clarification. The next message of a
// forgotten conversation starts a new thread.
func TestForgetWhereDropsOneWorkspace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		gone := []string{"slack:TA:D1:", "slack:TA:C1:1.5", "slack:E1/TA:C2:"}
		kept := []string{"slack:TB:D1:", "discord:TA:D1:", "slack:TAB:D1:"}
		threads := map[string]Thread{}
		clars := map[string]string{}
		for _, k := range append(slices.Clone(gone), kept...) {
			th, _, err := s.Conversations().Ensure(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			threads[k] = th
			if err := s.History().AppendTurn(ctx, k, th.ID, []json.RawMessage{json.RawMessage(`{"said":"` + k + `"}`)}); err != nil {
				t.Fatal(err)
			}
			cl, err := s.Clarifications().Put(ctx, askOf(k))
			if err != nil {
				t.Fatal(err)
			}
			clars[k] = cl.ID
		}
		inTA := func(k string) bool {
			parts := strings.Split(k, ":")
			return parts[0] == "slack" && (parts[1] == "TA" || strings.HasSuffix(parts[1], "/TA"))
		}
		got, err := s.Conversations().ForgetWhere(ctx, inTA)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(gone))
		if !slices.Equal(got, want) {
			t.Fatalf("ForgetWhere = %v, want %v", got, want)
		}
		for _, k := range gone {
			if _, err := s.Conversations().Get(ctx, k); !errors.Is(err, ErrThreadNotFound) {
				t.Errorf("%s: Get after forgetting = %v, want ErrThreadNotFound", k, err)
			}
			if turns, err := s.History().LoadTurns(ctx, k); err != nil || len(turns) != 0 {
				t.Errorf("%s: session log after forgetting = %d turns, %v", k, len(turns), err)
			}
			if _, ok, err := s.Clarifications().Pending(ctx, k); ok || err != nil {
				t.Errorf("%s: a clarification still pending (%v)", k, err)
			}
			if _, err := s.Clarifications().Take(ctx, clars[k], "telegram:111"); !errors.Is(err, ErrClarificationCancelled) {
				t.Errorf("%s: answering the withdrawn clarification = %v, want ErrClarificationCancelled", k, err)
			}
		}
		for _, k := range kept {
			if th, err := s.Conversations().Get(ctx, k); err != nil || th.ID != threads[k].ID {
				t.Errorf("%s: thread after forgetting another workspace = %+v, %v", k, th, err)
			}
			if turns, err := s.History().LoadTurns(ctx, k); err != nil || len(turns) != 1 {
				t.Errorf("%s: session log = %d turns, %v; want its one turn", k, len(turns), err)
			}
			if cl, ok, err := s.Clarifications().Pending(ctx, k); !ok || err != nil || cl.ID != clars[k] {
				t.Errorf("%s: pending clarification = %+v, %v, %v", k, cl, ok, err)
			}
		}
		th, created, err := s.Conversations().Ensure(ctx, gone[0])
		if err != nil || !created || th.ID == threads[gone[0]].ID {
			t.Errorf("Ensure after forgetting = %+v, created %v, %v; want a new thread", th, created, err)
		}
		if got, err := s.Conversations().ForgetWhere(ctx, func(string) bool { return false }); err != nil || len(got) != 0 {
			t.Errorf("ForgetWhere matching nothing = %v, %v", got, err)
		}
	})
}

// TestForgetWithoutThread proves Forget of a conversation with nothing stored is a no-op, and
// that it withdraws a clarification even where no thread record exists.
func TestForgetWithoutThread(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		if f, err := s.Conversations().Forget(ctx, "slack:T:D:"); err != nil || f != (Forgotten{}) {
			t.Fatalf("Forget of nothing = %+v, %v", f, err)
		}
		cl, err := s.Clarifications().Put(ctx, askOf("slack:T:D:"))
		if err != nil {
			t.Fatal(err)
		}
		if f, err := s.Conversations().Forget(ctx, "slack:T:D:"); err != nil || f.Thread || f.Clarification != cl.ID {
			t.Fatalf("Forget = %+v, %v; want the clarification %s withdrawn", f, err, cl.ID)
		}
		if _, err := s.Conversations().Forget(ctx, ""); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Forget of an empty key = %v, want ErrInvalidArgument", err)
		}
	})
}
