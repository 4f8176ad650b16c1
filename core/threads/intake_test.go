package threads

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestIntakeMatchesSingleCalls proves Intake claims, reads and writes exactly as Claim,
// AccessOverride, Clarifications.Pending, Marked and Mark do, in one round trip, on every backend
// (on the cluster its keys live in different slots).
func TestIntakeMatchesSingleCalls(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		clock := newFakeClock()
		s := newTestStore(t, c, Options{Now: clock.Now})
		const conv = "telegram/-/7/3"
		if err := s.Inbox().DenyUser(ctx, "telegram", "bad"); err != nil {
			t.Fatal(err)
		}
		if err := s.Inbox().AllowUser(ctx, "telegram", "good"); err != nil {
			t.Fatal(err)
		}
		if err := s.Inbox().Mark(ctx, "thread:x", []byte("1"), time.Minute); err != nil {
			t.Fatal(err)
		}
		q, err := s.Clarifications().Put(ctx, Clarification{ConvKey: conv, RunID: "r1", AllowedUserID: "good", Form: json.RawMessage(`{"q":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		full := func(claim, user, mark string) IntakeRequest {
			return IntakeRequest{ClaimKey: claim, ClaimTTL: time.Minute, Platform: "telegram", UserID: user, ConvKey: conv, MarkedKey: mark,
				Marks: []MarkWrite{{Key: "reply:" + claim, Value: []byte("m-" + claim), TTL: time.Minute}}}
		}
		cases := []struct {
			name string
			req  IntakeRequest
			want IntakeResult
		}{
			{"first event, denied user, marked thread", full("event:1", "bad", "thread:x"),
				IntakeResult{Claimed: true, Denied: true, Pending: q, HasPending: true, Marked: []byte("1"), IsMarked: true}},
			{"duplicate event", full("event:1", "bad", "thread:x"),
				IntakeResult{Denied: true, Pending: q, HasPending: true, Marked: []byte("1"), IsMarked: true}},
			{"allowed user, unmarked thread", full("event:2", "good", "thread:y"),
				IntakeResult{Claimed: true, Allowed: true, Pending: q, HasPending: true}},
			{"only a claim", IntakeRequest{ClaimKey: "event:3", ClaimTTL: time.Minute}, IntakeResult{Claimed: true}},
			{"nothing asked", IntakeRequest{}, IntakeResult{}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.Inbox().Intake(ctx, tc.req)
				if err != nil {
					t.Fatal(err)
				}
				if got.Claimed != tc.want.Claimed || got.Allowed != tc.want.Allowed || got.Denied != tc.want.Denied ||
					got.HasPending != tc.want.HasPending || got.Pending.ID != tc.want.Pending.ID || got.Pending.RunID != tc.want.Pending.RunID ||
					got.IsMarked != tc.want.IsMarked || string(got.Marked) != string(tc.want.Marked) {
					t.Errorf("Intake = %+v\nwant     %+v", got, tc.want)
				}
				for _, m := range tc.req.Marks {
					if v, found, err := s.Inbox().Marked(ctx, m.Key); err != nil || !found || string(v) != string(m.Value) {
						t.Errorf("mark %s = %q, %v, %v; want %q written", m.Key, v, found, err, m.Value)
					}
				}
				if tc.req.ClaimKey != "" {
					if again, _ := s.Inbox().Claim(ctx, tc.req.ClaimKey, time.Minute); again {
						t.Errorf("the claim of %s was not held after Intake", tc.req.ClaimKey)
					}
				}
			})
		}
		// An expired question is not open, as with Clarifications.Pending.
		clock.Advance(2 * time.Hour)
		got, err := s.Inbox().Intake(ctx, IntakeRequest{ConvKey: conv})
		if err != nil || got.HasPending {
			t.Errorf("after expiry: %+v, %v; want no open question", got, err)
		}
	})
}

// TestIntakeGivesBackItsClaimOnError proves a failing part leaves no claim behind, so a
// redelivered event is handled afresh.
func TestIntakeGivesBackItsClaimOnError(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "slack/T1/C1/"
		// A clarification record that does not decode makes the read fail.
		c.HSet(ctx, keysOf(s).conv(conv).clar, "id", "q1", "state", "pending")
		_, err := s.Inbox().Intake(ctx, IntakeRequest{ClaimKey: "event:9", ClaimTTL: time.Minute, ConvKey: conv})
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Intake over a corrupt question = %v; want ErrCorrupt", err)
		}
		if ok, err := s.Inbox().Claim(ctx, "event:9", time.Minute); err != nil || !ok {
			t.Errorf("claim after a failed Intake = %v, %v; want free", ok, err)
		}
		// A command error (wrong type) fails Intake too.
		c.Set(ctx, keysOf(s).conv(conv).clar, "x", 0)
		if _, err := s.Inbox().Intake(ctx, IntakeRequest{ClaimKey: "event:10", ClaimTTL: time.Minute, ConvKey: conv}); err == nil {
			t.Fatal("Intake over a wrong-typed key succeeded")
		}
		if ok, _ := s.Inbox().Claim(ctx, "event:10", time.Minute); !ok {
			t.Error("the claim of a failed Intake was kept")
		}
	})
}

func TestIntakeRejectsBadArguments(t *testing.T) {
	ctx := ctxT(t)
	s := newTestStore(t, embeddedRedis(t), Options{})
	long := strings.Repeat("k", maxClaimKeyLen+1)
	cases := []struct {
		name string
		req  IntakeRequest
	}{
		{"claim without ttl", IntakeRequest{ClaimKey: "k"}},
		{"long claim key", IntakeRequest{ClaimKey: long, ClaimTTL: time.Second}},
		{"user without platform", IntakeRequest{UserID: "u"}},
		{"platform without user", IntakeRequest{Platform: "telegram"}},
		{"long conversation key", IntakeRequest{ConvKey: strings.Repeat("c", maxConvKeyLen+1)}},
		{"long marked key", IntakeRequest{MarkedKey: long}},
		{"mark without ttl", IntakeRequest{Marks: []MarkWrite{{Key: "k", Value: []byte("v")}}}},
		{"mark without key", IntakeRequest{Marks: []MarkWrite{{Value: []byte("v"), TTL: time.Second}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Inbox().Intake(ctx, tc.req); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("err = %v, want ErrInvalidArgument", err)
			}
		})
	}
	// A refused request claims nothing.
	if _, err := s.Inbox().Intake(ctx, IntakeRequest{ClaimKey: "event:1", ClaimTTL: time.Minute, UserID: "u"}); err == nil {
		t.Fatal("accepted a user without a platform")
	}
	if ok, _ := s.Inbox().Claim(ctx, "event:1", time.Minute); !ok {
		t.Error("a refused Intake took its claim")
	}
}

// TestIntakePendingClaims proves claims taken with a token: another token finds the claim
// pending (not a duplicate), the same token takes it again (a retry after a release that
// failed), a completed claim is a duplicate for every token, a release under another token
// leaves the claim alone, and SeenKey is reported as it exists.
func TestIntakePendingClaims(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		claim := func(token string) IntakeResult {
			t.Helper()
			res, err := s.Inbox().Intake(ctx, IntakeRequest{ClaimKey: "event:1", ClaimTTL: time.Minute, ClaimToken: token})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := claim("a"); !res.Claimed || res.ClaimPending {
			t.Fatalf("first claim = %+v, want taken", res)
		}
		if res := claim("b"); res.Claimed || !res.ClaimPending {
			t.Fatalf("claim under another token = %+v, want pending", res)
		}
		if res := claim("a"); !res.Claimed {
			t.Fatalf("claim again under the same token = %+v, want taken", res)
		}
		if err := s.Inbox().ReleaseClaim(ctx, "event:1", "b"); err != nil {
			t.Fatal(err)
		}
		if res := claim("b"); !res.ClaimPending {
			t.Fatalf("after a release under another token: %+v, want still pending", res)
		}
		if err := s.Inbox().ReleaseClaim(ctx, "event:1", "a"); err != nil {
			t.Fatal(err)
		}
		if res := claim("b"); !res.Claimed {
			t.Fatalf("after the holder's release: %+v, want free", res)
		}
		if err := s.Inbox().CompleteClaim(ctx, "event:1", "b", time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{"a", "b"} {
			if res := claim(tok); res.Claimed || res.ClaimPending {
				t.Fatalf("completed claim under token %s = %+v, want a duplicate", tok, res)
			}
		}
		if ok, _ := s.Inbox().Claim(ctx, "event:1", time.Minute); ok {
			t.Error("Claim took a completed claim")
		}

		seen := keysOf(s).prefix + "seen-mark"
		res, err := s.Inbox().Intake(ctx, IntakeRequest{ClaimKey: "event:2", ClaimTTL: time.Minute, ClaimToken: "a", SeenKey: seen})
		if err != nil || res.Seen || !res.Claimed {
			t.Fatalf("before the mark: %+v, %v", res, err)
		}
		c.Set(ctx, seen, "run", time.Minute)
		if res, err := s.Inbox().Intake(ctx, IntakeRequest{SeenKey: seen}); err != nil || !res.Seen {
			t.Fatalf("with the mark: %+v, %v; want seen", res, err)
		}
	})
}
