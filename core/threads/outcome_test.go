package threads

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestIdempotentOutcomes proves a replayed run never posts twice: the first RecordOutbound of a
// run+step stores the value, every replay sees that value (whatever it offers), other steps
// and runs are independent, and the outcome is recorded once. Records carry the OutcomeTTL.
func TestIdempotentOutcomes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{OutcomeTTL: 48 * time.Hour})
		const run = "01JRUN0000000000000000000B"

		first, existing, err := s.Records().RecordOutbound(ctx, run, "answer", []byte("msg-1001"))
		if err != nil || !first || existing != nil {
			t.Fatalf("first RecordOutbound = %v, %q, %v; want first", first, existing, err)
		}
		first, existing, err = s.Records().RecordOutbound(ctx, run, "answer", []byte("msg-2002"))
		if err != nil || first || string(existing) != "msg-1001" {
			t.Errorf("replayed RecordOutbound = %v, %q, %v; want not first, msg-1001", first, existing, err)
		}
		if first, _, err := s.Records().RecordOutbound(ctx, run, "progress/1", []byte("msg-1002")); err != nil || !first {
			t.Errorf("another step: first=%v, %v; want first", first, err)
		}
		if first, _, err := s.Records().RecordOutbound(ctx, "01JRUN0000000000000000000C", "answer", []byte("x")); err != nil || !first {
			t.Errorf("another run: first=%v, %v; want first", first, err)
		}

		if _, found, err := s.Records().Outcome(ctx, run); err != nil || found {
			t.Errorf("Outcome before recording: found=%v, %v", found, err)
		}
		if first, err := s.Records().RecordOutcome(ctx, run, "answered"); err != nil || !first {
			t.Fatalf("first RecordOutcome = %v, %v", first, err)
		}
		if first, err := s.Records().RecordOutcome(ctx, run, "failed"); err != nil || first {
			t.Errorf("second RecordOutcome = %v, %v; want not first", first, err)
		}
		if got, found, err := s.Records().Outcome(ctx, run); err != nil || !found || got != "answered" {
			t.Errorf("Outcome = %q, %v, %v; want the first outcome kept", got, found, err)
		}
		for _, key := range []string{keysOf(s).outbound(run, "answer"), keysOf(s).outcome(run)} {
			ttl, err := c.PTTL(ctx, key).Result()
			if err != nil || ttl <= 47*time.Hour || ttl > 48*time.Hour {
				t.Errorf("TTL of %s = %v, %v; want the 48h OutcomeTTL", key, ttl, err)
			}
		}
	})
}

func TestRecordOutboundConcurrentReplays(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const n = 16
		var wg sync.WaitGroup
		firsts := make([]bool, n)
		values := make([]string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := []byte{byte('a' + i)}
				first, existing, err := s.Records().RecordOutbound(ctx, "run1", "answer", v)
				if err != nil {
					t.Error(err)
					return
				}
				firsts[i] = first
				if first {
					existing = v
				}
				values[i] = string(existing)
			}()
		}
		wg.Wait()
		winners := 0
		for i := range n {
			if firsts[i] {
				winners++
			}
			if values[i] != values[0] {
				t.Errorf("replay %d saw %q, replay 0 saw %q: want one stored value", i, values[i], values[0])
			}
		}
		if winners != 1 {
			t.Errorf("%d concurrent records were first, want 1", winners)
		}
	})
}

func TestOutcomeArgumentsValidated(t *testing.T) {
	s := New(embeddedRedis(t), Options{})
	ctx := ctxT(t)
	for _, tc := range []struct {
		name, run, step, outcome string
	}{
		{"empty run id", "", "answer", "answered"},
		{"colon in run id", "a:out:b", "answer", "answered"},
		{"empty step", "run1", "", "answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := s.Records().RecordOutbound(ctx, tc.run, tc.step, []byte("v")); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("RecordOutbound: %v, want ErrInvalidArgument", err)
			}
		})
	}
	if _, err := s.Records().RecordOutcome(ctx, "run1", ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("RecordOutcome with an empty outcome: %v, want ErrInvalidArgument", err)
	}
	if _, _, err := s.Records().Outcome(ctx, ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Outcome of an empty run id: %v, want ErrInvalidArgument", err)
	}
}
