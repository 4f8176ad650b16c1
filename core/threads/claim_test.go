package threads

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClaimOnceUntilReleased proves Claim is SET NX: the second claim of a key fails until the
// first is released, and claims of other keys are independent.
func TestClaimOnceUntilReleased(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		steps := []struct {
			name string
			do   func() (bool, error)
			want bool
		}{
			{"first claim", func() (bool, error) { return s.Inbox().Claim(ctx, "event:telegram:1", time.Minute) }, true},
			{"second claim", func() (bool, error) { return s.Inbox().Claim(ctx, "event:telegram:1", time.Minute) }, false},
			{"other key", func() (bool, error) { return s.Inbox().Claim(ctx, "event:telegram:2", time.Minute) }, true},
			{"after release", func() (bool, error) {
				if err := s.Inbox().Release(ctx, "event:telegram:1"); err != nil {
					return false, err
				}
				return s.Inbox().Claim(ctx, "event:telegram:1", time.Minute)
			}, true},
		}
		for _, st := range steps {
			got, err := st.do()
			if err != nil || got != st.want {
				t.Errorf("%s = %v, %v; want %v", st.name, got, err, st.want)
			}
		}
		if err := s.Inbox().Release(ctx, "never-claimed"); err != nil {
			t.Errorf("releasing an unheld key: %v", err)
		}
	})
}

// TestClaimExpires proves a claim's TTL is set: it lapses and the key can be claimed again.
func TestClaimExpires(t *testing.T) {
	ctx := ctxT(t)
	c := realRedis(t)
	s := newTestStore(t, c, Options{})
	if ok, err := s.Inbox().Claim(ctx, "k", 30*time.Millisecond); !ok || err != nil {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := s.Inbox().Claim(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim never expired")
		}
	}
}

func TestClaimAndMarkRejectBadArguments(t *testing.T) {
	ctx := ctxT(t)
	s := newTestStore(t, embeddedRedis(t), Options{})
	long := strings.Repeat("k", maxClaimKeyLen+1)
	cases := []struct {
		name string
		err  error
	}{
		{"claim empty key", func() error { _, err := s.Inbox().Claim(ctx, "", time.Second); return err }()},
		{"claim long key", func() error { _, err := s.Inbox().Claim(ctx, long, time.Second); return err }()},
		{"claim zero ttl", func() error { _, err := s.Inbox().Claim(ctx, "k", 0); return err }()},
		{"release empty key", s.Inbox().Release(ctx, "")},
		{"mark zero ttl", s.Inbox().Mark(ctx, "k", []byte("v"), 0)},
		{"marked long key", func() error { _, _, err := s.Inbox().Marked(ctx, long); return err }()},
		{"allow empty platform", s.Inbox().AllowUser(ctx, "", "u")},
		{"deny empty user", s.Inbox().DenyUser(ctx, "telegram", "")},
		{"override empty user", func() error { _, _, err := s.Inbox().AccessOverride(ctx, "telegram", ""); return err }()},
		{"outbound bad run id", func() error { _, _, err := s.Records().Outbound(ctx, "a:b", "card"); return err }()},
		{"outbound empty step", func() error { _, _, err := s.Records().Outbound(ctx, "r1", ""); return err }()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, ErrInvalidArgument) {
				t.Errorf("err = %v, want ErrInvalidArgument", tc.err)
			}
		})
	}
}

// TestMarkReplacesAndUnmarks proves marks are plain values with a lifetime: set, replaced,
// read, deleted.
func TestMarkReplacesAndUnmarks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		if _, found, err := s.Inbox().Marked(ctx, "thread:x"); found || err != nil {
			t.Fatalf("unmarked key: found %v, err %v", found, err)
		}
		for _, v := range []string{"one", "two"} {
			if err := s.Inbox().Mark(ctx, "thread:x", []byte(v), time.Minute); err != nil {
				t.Fatal(err)
			}
			got, found, err := s.Inbox().Marked(ctx, "thread:x")
			if err != nil || !found || string(got) != v {
				t.Fatalf("Marked = %q, %v, %v; want %q", got, found, err, v)
			}
		}
		if err := s.Inbox().Unmark(ctx, "thread:x"); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := s.Inbox().Marked(ctx, "thread:x"); found {
			t.Error("still marked after Unmark")
		}
	})
}

// TestAccessOverrides proves allow and deny exclude each other and are per platform.
func TestAccessOverrides(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		check := func(step, platform, user string, wantAllowed, wantDenied bool) {
			t.Helper()
			a, d, err := s.Inbox().AccessOverride(ctx, platform, user)
			if err != nil || a != wantAllowed || d != wantDenied {
				t.Errorf("%s: AccessOverride(%s, %s) = %v, %v, %v; want %v, %v", step, platform, user, a, d, err, wantAllowed, wantDenied)
			}
		}
		check("initially", "telegram", "42", false, false)
		if err := s.Inbox().AllowUser(ctx, "telegram", "42"); err != nil {
			t.Fatal(err)
		}
		check("after allow", "telegram", "42", true, false)
		check("other platform", "slack", "42", false, false)
		if err := s.Inbox().DenyUser(ctx, "telegram", "42"); err != nil {
			t.Fatal(err)
		}
		check("after deny", "telegram", "42", false, true)
		if err := s.Inbox().AllowUser(ctx, "telegram", "42"); err != nil {
			t.Fatal(err)
		}
		check("after allow again", "telegram", "42", true, false)
	})
}

// TestOutboundReadsRecords proves Outbound reads what RecordOutbound stored without writing.
func TestOutboundReadsRecords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		if _, found, err := s.Records().Outbound(ctx, "run1", "card"); found || err != nil {
			t.Fatalf("before recording: found %v, err %v", found, err)
		}
		if _, found, _ := s.Records().Outbound(ctx, "run1", "card"); found {
			t.Fatal("Outbound wrote a record")
		}
		if _, _, err := s.Records().RecordOutbound(ctx, "run1", "card", []byte(`{"ids":["7"]}`)); err != nil {
			t.Fatal(err)
		}
		got, found, err := s.Records().Outbound(ctx, "run1", "card")
		if err != nil || !found || string(got) != `{"ids":["7"]}` {
			t.Errorf("Outbound = %q, %v, %v", got, found, err)
		}
	})
}
