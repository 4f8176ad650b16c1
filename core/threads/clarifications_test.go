package threads

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func askOf(conv string) Clarification {
	return Clarification{
		ConvKey:       conv,
		RunID:         "01JRUN0000000000000000000A",
		AllowedUserID: "telegram:111",
		Form:          json.RawMessage(`{"title":"Which city?","fields":[{"name":"city","type":"text"}]}`),
	}
}

func TestClarificationRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		clock := newFakeClock()
		s := newTestStore(t, c, Options{Now: clock.Now, ClarificationTTL: 10 * time.Minute})
		put, err := s.Clarifications().Put(ctx, askOf("telegram/-/1/0"))
		if err != nil {
			t.Fatal(err)
		}
		if put.ID == "" || put.State != StatePending || !put.CreatedAt.Equal(clock.Now()) ||
			!put.ExpiresAt.Equal(clock.Now().Add(10*time.Minute)) {
			t.Errorf("put returned %+v: want a generated id, pending, created now, expiring after the TTL", put)
		}
		got, err := s.Clarifications().Get(ctx, put.ID)
		if err != nil || !reflect.DeepEqual(got, put) {
			t.Errorf("Get = %+v, %v; want %+v", got, err, put)
		}
		pending, ok, err := s.Clarifications().Pending(ctx, "telegram/-/1/0")
		if err != nil || !ok || !reflect.DeepEqual(pending, put) {
			t.Errorf("Pending = %+v, %v, %v; want %+v", pending, ok, err, put)
		}
		if _, ok, err := s.Clarifications().Pending(ctx, "telegram/-/2/0"); err != nil || ok {
			t.Errorf("another conversation has a pending clarification: ok=%v, %v", ok, err)
		}
		if _, err := s.Clarifications().Get(ctx, "no-such-id"); !errors.Is(err, ErrClarificationNotFound) {
			t.Errorf("Get of an unknown id: %v, want ErrClarificationNotFound", err)
		}
		if _, err := s.Clarifications().Take(ctx, "no-such-id", "telegram:111"); !errors.Is(err, ErrClarificationNotFound) {
			t.Errorf("Take of an unknown id: %v, want ErrClarificationNotFound", err)
		}
	})
}

// TestClarificationExpiry proves expiry is judged by the store's clock: answerable just before
// ExpiresAt, expired at it (and no longer pending), and the record carries a Redis TTL of
// ExpiresAt + retention for clean-up.
func TestClarificationExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		clock := newFakeClock()
		s := newTestStore(t, c, Options{Now: clock.Now, ClarificationRetention: time.Hour})
		ask := askOf("slack/T/C/1")
		ask.ExpiresAt = clock.Now().Add(10 * time.Minute)
		put, err := s.Clarifications().Put(ctx, ask)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{keysOf(s).conv(ask.ConvKey).clar, keysOf(s).clarIndex(put.ID)} {
			ttl, err := c.PTTL(ctx, key).Result()
			if err != nil || ttl <= 0 || ttl > 70*time.Minute {
				t.Errorf("TTL of %s = %v, %v; want about 10m + 1h retention", key, ttl, err)
			}
		}

		clock.Advance(10*time.Minute - time.Millisecond)
		if _, ok, err := s.Clarifications().Pending(ctx, ask.ConvKey); err != nil || !ok {
			t.Fatalf("1ms before expiry: pending=%v, %v; want pending", ok, err)
		}
		clock.Advance(time.Millisecond)
		if _, ok, err := s.Clarifications().Pending(ctx, ask.ConvKey); err != nil || ok {
			t.Errorf("at expiry: pending=%v, %v; want none", ok, err)
		}
		got, err := s.Clarifications().Take(ctx, put.ID, ask.AllowedUserID)
		if !errors.Is(err, ErrClarificationExpired) {
			t.Fatalf("Take at expiry: %v, want ErrClarificationExpired", err)
		}
		if got.ID != put.ID {
			t.Errorf("expired take returned %+v; want the clarification for context", got)
		}
		if again, err := s.Clarifications().Get(ctx, put.ID); err != nil || again.State != StatePending {
			t.Errorf("after the expired take the record = %+v, %v; want it unchanged", again, err)
		}
	})
}

// TestClarificationAnsweredOnce proves the claim is exactly once: 20 concurrent takes by the
// right user, one wins, the rest get ErrClarificationAnswered, and so does a later take.
func TestClarificationAnsweredOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		clock := newFakeClock()
		s := newTestStore(t, c, Options{Now: clock.Now})
		put, err := s.Clarifications().Put(ctx, askOf("discord/g/c/t"))
		if err != nil {
			t.Fatal(err)
		}
		const takers = 20
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, takers)
			got   = make([]Clarification, takers)
		)
		for i := range takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = s.Clarifications().Take(ctx, put.ID, put.AllowedUserID)
			}()
		}
		close(start)
		wg.Wait()
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
				if got[i].State != StateAnswered || got[i].AnsweredBy != put.AllowedUserID || got[i].RunID != put.RunID {
					t.Errorf("winning take returned %+v", got[i])
				}
			case !errors.Is(err, ErrClarificationAnswered):
				t.Errorf("take %d: %v, want nil or ErrClarificationAnswered", i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d takes won, want exactly 1", wins)
		}
		if _, err := s.Clarifications().Take(ctx, put.ID, put.AllowedUserID); !errors.Is(err, ErrClarificationAnswered) {
			t.Errorf("a later take: %v, want ErrClarificationAnswered", err)
		}
		if _, ok, err := s.Clarifications().Pending(ctx, put.ConvKey); err != nil || ok {
			t.Errorf("after the answer: pending=%v, %v; want none", ok, err)
		}
		after, err := s.Clarifications().Get(ctx, put.ID)
		if err != nil || after.State != StateAnswered || !after.AnsweredAt.Equal(clock.Now()) {
			t.Errorf("Get after the answer = %+v, %v", after, err)
		}
	})
}

// TestClarificationForeignUserRefused proves another user cannot answer: the take fails with a
// *ForeignAnswerError (ErrNotYourClarification), and the clarification stays pending for the
// allowed user, who can still answer.
func TestClarificationForeignUserRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		put, err := s.Clarifications().Put(ctx, askOf("telegram/-/5/0"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Clarifications().Take(ctx, put.ID, "telegram:666")
		var foreign *ForeignAnswerError
		if !errors.As(err, &foreign) || !errors.Is(err, ErrNotYourClarification) {
			t.Fatalf("take by another user: %v, want *ForeignAnswerError matching ErrNotYourClarification", err)
		}
		if foreign.ClarificationID != put.ID || foreign.UserID != "telegram:666" {
			t.Errorf("ForeignAnswerError = %+v", foreign)
		}
		if p, ok, err := s.Clarifications().Pending(ctx, put.ConvKey); err != nil || !ok || p.ID != put.ID {
			t.Fatalf("after the foreign take: pending=%+v, %v, %v; want still pending", p, ok, err)
		}
		if _, err := s.Clarifications().Take(ctx, put.ID, put.AllowedUserID); err != nil {
			t.Errorf("take by the allowed user after a foreign attempt: %v", err)
		}
	})
}

func TestNewClarificationCancelsPrevious(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		first, err := s.Clarifications().Put(ctx, askOf("slack/T/C/2"))
		if err != nil {
			t.Fatal(err)
		}
		second, err := s.Clarifications().Put(ctx, askOf("slack/T/C/2"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Clarifications().Take(ctx, first.ID, first.AllowedUserID); !errors.Is(err, ErrClarificationCancelled) {
			t.Errorf("taking the replaced clarification: %v, want ErrClarificationCancelled", err)
		}
		if _, err := s.Clarifications().Get(ctx, first.ID); !errors.Is(err, ErrClarificationCancelled) {
			t.Errorf("getting the replaced clarification: %v, want ErrClarificationCancelled", err)
		}
		if p, ok, err := s.Clarifications().Pending(ctx, "slack/T/C/2"); err != nil || !ok || p.ID != second.ID {
			t.Errorf("pending = %+v, %v, %v; want the newer one", p, ok, err)
		}
	})
}

func TestPutClarificationRetryNeverReopens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		ask := askOf("telegram/-/7/0")
		ask.ID = "clar-fixed-id"
		if _, err := s.Clarifications().Put(ctx, ask); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Clarifications().Take(ctx, ask.ID, ask.AllowedUserID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Clarifications().Put(ctx, ask); err != nil {
			t.Fatalf("retried put: %v", err)
		}
		if _, err := s.Clarifications().Take(ctx, ask.ID, ask.AllowedUserID); !errors.Is(err, ErrClarificationAnswered) {
			t.Errorf("take after a retried put: %v, want ErrClarificationAnswered", err)
		}
		other := ask
		other.ConvKey = "telegram/-/8/0"
		if _, err := s.Clarifications().Put(ctx, other); !errors.Is(err, ErrDuplicateClarification) {
			t.Errorf("the same id in another conversation: %v, want ErrDuplicateClarification", err)
		}
	})
}

func TestPutClarificationRejectsInvalid(t *testing.T) {
	clock := newFakeClock()
	s := New(embeddedRedis(t), Options{Now: clock.Now})
	ctx := ctxT(t)
	for _, tc := range []struct {
		name   string
		change func(*Clarification)
	}{
		{"no conversation", func(c *Clarification) { c.ConvKey = "" }},
		{"no run", func(c *Clarification) { c.RunID = "" }},
		{"no allowed user", func(c *Clarification) { c.AllowedUserID = "" }},
		{"form not JSON", func(c *Clarification) { c.Form = json.RawMessage(`{"title":`) }},
		{"expires now", func(c *Clarification) { c.ExpiresAt = clock.Now() }},
		{"expired already", func(c *Clarification) { c.ExpiresAt = clock.Now().Add(-time.Hour) }},
		{"id too long", func(c *Clarification) { c.ID = strings.Repeat("x", maxClarificationIDLen+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ask := askOf("c/1")
			tc.change(&ask)
			if _, err := s.Clarifications().Put(ctx, ask); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("Put: %v, want ErrInvalidArgument", err)
			}
		})
	}
}

// TestWithdrawClarification proves a withdrawn question can no longer be answered, by click or
// by typing, that withdrawing twice (or with nothing asked) reports nothing open, and that an
// answered question is not withdrawn.
func TestWithdrawClarification(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "telegram/-/1/0"
		if _, ok, err := s.Clarifications().Withdraw(ctx, conv); err != nil || ok {
			t.Fatalf("withdraw with nothing asked: ok=%v, %v; want nothing open", ok, err)
		}
		put, err := s.Clarifications().Put(ctx, askOf(conv))
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.Clarifications().Withdraw(ctx, conv)
		if err != nil || !ok || got.ID != put.ID || got.State != StateCancelled {
			t.Fatalf("withdraw = %+v, %v, %v; want %s cancelled", got, ok, err, put.ID)
		}
		if _, open, err := s.Clarifications().Pending(ctx, conv); err != nil || open {
			t.Errorf("still pending after withdrawal: %v, %v", open, err)
		}
		if _, err := s.Clarifications().Take(ctx, put.ID, put.AllowedUserID); !errors.Is(err, ErrClarificationCancelled) {
			t.Errorf("answering a withdrawn question: %v, want ErrClarificationCancelled", err)
		}
		if _, ok, err := s.Clarifications().Withdraw(ctx, conv); err != nil || ok {
			t.Errorf("second withdrawal: ok=%v, %v; want nothing open", ok, err)
		}

		answered, err := s.Clarifications().Put(ctx, askOf(conv))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Clarifications().Take(ctx, answered.ID, answered.AllowedUserID); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Clarifications().Withdraw(ctx, conv); err != nil || ok {
			t.Errorf("withdrawing an answered question: ok=%v, %v; want nothing open", ok, err)
		}
		if got, err := s.Clarifications().Get(ctx, answered.ID); err != nil || got.State != StateAnswered {
			t.Errorf("answered question after a withdrawal: %+v, %v; want it still answered", got, err)
		}
		if _, _, err := s.Clarifications().Withdraw(ctx, ""); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("bad conversation key: %v, want ErrInvalidArgument", err)
		}
	})
}
